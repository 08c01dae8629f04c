//! Where the library's warnings go.
//!
//! A library neither reads the environment nor prints. Its choices arrive as values where they
//! are used (the command transport: [`crate::objects::Context::open_with`]). The program (the
//! `rperftest` binary) names the [`set_warning_sink`] that receives the warnings the library
//! cannot return as an error (a failed destroy in `Drop`, an optional feature that fell back).
//! Until then warnings are dropped.
//!
//! The sink is read only where an object is opened or torn down, never on a data path, so a lock
//! is cheap here.

use std::fmt;
use std::sync::RwLock;

/// A warning's destination; `None` drops warnings.
pub type WarningSink = fn(&Warning);
static SINK: RwLock<Option<WarningSink>> = RwLock::new(None);

/// Where warnings go from now on (`None`: dropped).
pub fn set_warning_sink(sink: Option<WarningSink>) {
    *SINK.write().unwrap_or_else(|p| p.into_inner()) = sink;
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
    let sink = *SINK.read().unwrap_or_else(|p| p.into_inner());
    if let Some(sink) = sink {
        sink(&Warning { text: text.into() });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());

    fn record(w: &Warning) {
        SEEN.lock().unwrap().push(w.to_string());
    }

    // One test owns the process-wide sink.
    #[test]
    fn sink_round_trip() {
        warn("dropped: no sink yet");
        set_warning_sink(Some(record));
        warn("kept");
        set_warning_sink(None);
        warn("dropped again");
        assert_eq!(*SEEN.lock().unwrap(), vec!["kept".to_string()]);
    }
}
