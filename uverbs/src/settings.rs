//! Where the library's warnings go.
//!
//! A library neither reads the environment nor prints. Its choices arrive as values where they
//! are used (the command transport: [`crate::objects::Context::open_with`]). The program (the
//! `rperftest` binary) names, once at start, the [`set_warning_sink`] that receives the warnings
//! the library cannot return as an error (a failed destroy in `Drop`, an optional feature that
//! fell back). Until then warnings are dropped.
//!
//! The sink is a process-wide output convention, not a run setting: written once, then only
//! read (teardown from `Drop` has nowhere else to find it).

use std::fmt;
use std::sync::OnceLock;

/// A warning's destination.
pub type WarningSink = fn(&Warning);
static SINK: OnceLock<WarningSink> = OnceLock::new();

/// Name where warnings go, once, at the program's start (until then they are dropped). Returns
/// false, changing nothing, when a sink was named already.
pub fn set_warning_sink(sink: WarningSink) -> bool {
    SINK.set(sink).is_ok()
}

/// Something went wrong that cannot be returned as an error, or an optional feature fell back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// One line, no trailing newline: what happened and, where useful, what it means.
    pub text: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Hand `text` to the sink, if one is set.
pub fn warn(text: impl Into<String>) {
    if let Some(sink) = SINK.get() {
        sink(&Warning { text: text.into() });
    }
}
