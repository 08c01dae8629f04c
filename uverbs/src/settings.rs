//! What the program chooses for the library: the command transport and where warnings go.
//!
//! A library neither reads the environment nor prints. The program (the `rperftest` binary) builds
//! a [`Settings`] from its own flags and environment and [`install`]s it once at start; it also
//! names the [`set_warning_sink`] that receives the warnings the library cannot return as an
//! error (a failed destroy in `Drop`, an optional feature that fell back). Until then the defaults
//! hold: the `write()` transport, and warnings dropped.
//!
//! Both are read only where an object is opened or torn down, never on a data path, so a lock is
//! cheap here.

use std::fmt;
use std::sync::RwLock;

use crate::cmd::Transport;

/// The library's process-wide choices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    /// How commands reach the kernel when a context is opened without naming one.
    pub transport: Transport,
}

/// `None` until [`install`]: [`Settings::default`].
static SETTINGS: RwLock<Option<Settings>> = RwLock::new(None);

/// A warning's destination; `None` drops warnings.
pub type WarningSink = fn(&Warning);
static SINK: RwLock<Option<WarningSink>> = RwLock::new(None);

/// Replace the process-wide settings (the program calls this once, before opening devices).
pub fn install(s: Settings) {
    *SETTINGS.write().unwrap_or_else(|p| p.into_inner()) = Some(s);
}

/// The installed settings, or the defaults.
pub fn current() -> Settings {
    SETTINGS.read().unwrap_or_else(|p| p.into_inner()).unwrap_or_default()
}

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

    // One test owns the process-wide state: settings and sink are global.
    #[test]
    fn settings_and_sink_round_trip() {
        assert_eq!(current(), Settings::default());
        warn("dropped: no sink yet");
        set_warning_sink(Some(record));
        warn("kept");
        set_warning_sink(None);
        warn("dropped again");
        assert_eq!(*SEEN.lock().unwrap(), vec!["kept".to_string()]);

        install(Settings { transport: Transport::Ioctl });
        assert_eq!(current().transport, Transport::Ioctl);
        install(Settings::default());
        assert_eq!(current().transport, Transport::Write);
    }
}
