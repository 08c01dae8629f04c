//! Which perftest the eight tools present themselves as: what `-V` and `-h` print, the parser-time
//! notes, the header block, the BW units and the exit status of the cases where the versions
//! differ, and the version text sent to the peer. Everything on the wire after that version
//! block adapts to the version the peer sends (see `crate::oob`): a 6.29 persona talks to a
//! 6.06 peer in 6.06's shape, and exchanges NEGOTIATE only with peers of 6.28 or later.
//!
//! Chosen by `--perftest-version 6.06|6.29` (an rperftest option, accepted anywhere on the
//! command line) or, for scripts, by [`ENV_PERSONA`]; the option wins over the variable.

use std::fmt;

/// A perftest release whose text rperftest reproduces byte for byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Persona {
    /// Debian 12's perftest 4.5+0.17-1 (`Version: 6.06`): what the VM suite compares against.
    V606,
    /// Upstream linux-rdma/perftest 6.29 (commit 00b55b6), the current release.
    V629,
}

/// The persona without `--perftest-version` or [`ENV_PERSONA`]: the current perftest. The VM
/// suite sets [`ENV_PERSONA`] to 6.06 where it compares text with Debian's C perftest 6.06.
pub const DEFAULT_PERSONA: Persona = Persona::V629;

/// Environment variable with the persona (`6.06` or `6.29`) for scripts that cannot add options.
pub const ENV_PERSONA: &str = "RPERFTEST_PERFTEST_VERSION";

impl Persona {
    /// Every persona, oldest first.
    pub const ALL: [Persona; 2] = [Persona::V606, Persona::V629];

    /// The version number as perftest prints it (`-V`: `Version: <this>`).
    pub const fn version(self) -> &'static str {
        match self {
            Persona::V606 => "6.06",
            Persona::V629 => "6.29",
        }
    }

    /// `6.06` or `6.29` (surrounding blanks ignored); `None` for anything else.
    pub fn from_version(text: &str) -> Option<Persona> {
        Persona::ALL.into_iter().find(|p| p.version() == text.trim())
    }

    /// The persona an environment value asks for (`None`: the variable is unset or empty).
    pub fn from_env_value(value: Option<&str>) -> Result<Option<Persona>, String> {
        match value {
            None => Ok(None),
            Some(v) if v.trim().is_empty() => Ok(None),
            Some(v) => Persona::from_version(v).map(Some).ok_or_else(|| {
                format!("{ENV_PERSONA}={v:?} is not a perftest version rperftest presents; give 6.06 or 6.29, or unset it")
            }),
        }
    }

    /// The version text sent in the version exchange: the persona's own. With 6.29 a peer of
    /// 6.28 or later then exchanges NEGOTIATE with us, as two 6.29s do; everything after the
    /// version block adapts to the peer's version either way.
    pub fn wire_version(self) -> &'static str {
        self.version()
    }

    /// The text layout of the report module for this persona.
    pub fn style(self) -> crate::report::Style {
        match self {
            Persona::V606 => crate::report::Style::V606,
            Persona::V629 => crate::report::Style::V629,
        }
    }

    /// 6.29 prints its parser-time notes about peak BW and dynamic CQE polling; 6.06 has neither.
    pub fn parser_notes(self) -> bool {
        self == Persona::V629
    }

    /// `-V`'s whole output.
    pub fn version_text(self) -> String {
        format!("Version: {}\n", self.version())
    }
}

impl Default for Persona {
    fn default() -> Self {
        DEFAULT_PERSONA
    }
}

impl fmt::Display for Persona {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.version())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_round_trip() {
        for p in Persona::ALL {
            assert_eq!(Persona::from_version(p.version()), Some(p));
        }
        assert_eq!(Persona::from_version(" 6.29\n"), Some(Persona::V629));
        assert_eq!(Persona::from_version("6.28"), None);
        assert_eq!(Persona::from_version("6.2"), None);
        assert_eq!(Persona::V629.version_text(), "Version: 6.29\n");
        assert_eq!(Persona::V606.version_text(), "Version: 6.06\n");
    }

    #[test]
    fn env_values() {
        assert_eq!(Persona::from_env_value(None), Ok(None));
        assert_eq!(Persona::from_env_value(Some("")), Ok(None));
        assert_eq!(Persona::from_env_value(Some("6.29")), Ok(Some(Persona::V629)));
        let e = Persona::from_env_value(Some("7")).unwrap_err();
        assert!(e.contains(ENV_PERSONA) && e.contains("6.06 or 6.29"), "{e}");
    }

    #[test]
    fn default_is_the_current_perftest() {
        assert_eq!(DEFAULT_PERSONA, Persona::V629);
        assert_eq!(DEFAULT_PERSONA.wire_version(), "6.29");
    }
}
