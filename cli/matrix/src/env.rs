//! What the matrix takes from the process environment, as a value (a library reads no
//! environment: the binary reads it and hands it in).

/// What the matrix takes from the process environment; the binary reads it (a library reads
/// no environment), so tests and other callers hand it in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Env {
    /// `SLURM_JOB_NODELIST`: the hosts when neither --hosts nor --hostfile is given.
    pub slurm_nodelist: Option<String>,
    /// `SLURM_JOB_ID` is set: inside an allocation the launcher defaults to srun.
    pub in_allocation: bool,
    /// `TMPDIR`: on a node, where `matrix-exec` makes its private directory; on the coordinator,
    /// where the ssh control sockets go (default /tmp for both).
    pub tmpdir: Option<std::path::PathBuf>,
}

impl Env {
    /// The values from `var` (the process environment, or a table in tests).
    pub fn from_vars(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Env {
        Env {
            slurm_nodelist: var("SLURM_JOB_NODELIST").and_then(|v| v.into_string().ok()),
            in_allocation: var("SLURM_JOB_ID").is_some(),
            tmpdir: var("TMPDIR").map(std::path::PathBuf::from),
        }
    }
}
