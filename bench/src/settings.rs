//! The bench crate's process-wide knobs, chosen by the program: the `rperftest` binary reads its
//! environment and [`install`]s them (see `uverbs::settings` for why a library reads none). The
//! values stay as the program found them, so that a bad one is refused by the code that uses it,
//! with the same line and at the same moment as when the tools read the variable themselves.

use std::sync::RwLock;

/// What the program chose for the perftest tools. `Default`: nothing set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BenchSettings {
    /// The persona a script asks for ([`crate::params::ENV_PERSONA`]); `--perftest-version` wins.
    pub persona: Option<String>,
    /// Seconds for each setup message ([`crate::tool::ENV_OOB_TIMEOUT`]).
    pub oob_timeout: Option<String>,
    /// Seconds without progress before a data path counts as stalled
    /// ([`crate::tool::ENV_STALL_TIMEOUT`]).
    pub stall_timeout: Option<String>,
    /// Time with `CLOCK_MONOTONIC` rather than the calibrated TSC ([`ENV_CLOCK`] = `monotonic`).
    pub clock_monotonic: bool,
}

/// Environment variable: `monotonic` makes every measurement read `CLOCK_MONOTONIC`.
pub const ENV_CLOCK: &str = "RPERFTEST_CLOCK";

impl BenchSettings {
    /// The settings from `var` (the environment, or a table in tests).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> BenchSettings {
        BenchSettings {
            persona: var(crate::params::ENV_PERSONA),
            oob_timeout: var(crate::tool::ENV_OOB_TIMEOUT),
            stall_timeout: var(crate::tool::ENV_STALL_TIMEOUT),
            clock_monotonic: var(ENV_CLOCK).is_some_and(|v| v == "monotonic"),
        }
    }
}

/// `None` until [`install`]: [`BenchSettings::default`].
static SETTINGS: RwLock<Option<BenchSettings>> = RwLock::new(None);

/// Replace the settings (once, at start, before any tool runs).
pub fn install(s: BenchSettings) {
    *SETTINGS.write().unwrap_or_else(|p| p.into_inner()) = Some(s);
}

/// The installed settings, or the defaults.
pub fn current() -> BenchSettings {
    SETTINGS.read().unwrap_or_else(|p| p.into_inner()).clone().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_vars_keeps_values_as_found() {
        let t = [
            ("RPERFTEST_PERFTEST_VERSION", "6.06"),
            ("RPERFTEST_OOB_TIMEOUT", "abc"),
            ("RPERFTEST_STALL_TIMEOUT", " 5 "),
            ("RPERFTEST_CLOCK", "monotonic"),
        ];
        let s = BenchSettings::from_vars(|k| t.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string()));
        assert_eq!(s.persona.as_deref(), Some("6.06"));
        assert_eq!(s.oob_timeout.as_deref(), Some("abc"));
        assert_eq!(s.stall_timeout.as_deref(), Some(" 5 "));
        assert!(s.clock_monotonic);
        assert_eq!(BenchSettings::from_vars(|_| None), BenchSettings::default());
        let tsc = BenchSettings::from_vars(|k| (k == ENV_CLOCK).then(|| "tsc".to_string()));
        assert!(!tsc.clock_monotonic);
    }
}
