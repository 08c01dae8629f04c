//! What the program chose for a run of the perftest tools, as a value: the `rperftest` binary
//! reads its environment once (cli/src/env_settings.rs, the one home of the variables' names)
//! and hands a [`RunSettings`] to the tool it starts. No library reads the environment or a
//! global. The texts stay as the program found them, so that a bad one is refused by the code
//! that uses it, with the same line and at the same moment as when the tools read the variable
//! themselves.

/// The choices a run takes from outside its command line. `Default`: nothing set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunSettings {
    /// The persona a script asks for (`RPERFTEST_PERFTEST_VERSION`); `--perftest-version` wins.
    pub persona: Option<String>,
    /// Seconds for each setup message (`RPERFTEST_OOB_TIMEOUT`), as written.
    pub oob_timeout: Option<String>,
    /// Seconds without progress before a data path counts as stalled
    /// (`RPERFTEST_STALL_TIMEOUT`), as written.
    pub stall_timeout: Option<String>,
}
