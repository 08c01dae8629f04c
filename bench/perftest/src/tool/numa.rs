//! `--pin_cores`, `--numa_node`, `--disable_numa` as perftest applies them (its
//! `set_process_affinity`, added after 6.29 in its master branch; libnuma there, sysfs and two
//! syscalls here), before the device is opened and any buffer allocated:
//!
//! * `--pin_cores LIST`: the process runs on those CPUs;
//! * else, unless `--disable_numa` (or the process was already confined to fewer CPUs than are
//!   online, which perftest takes as the user's own binding): the CPUs *and the memory* go to
//!   `--numa_node N`, or by default to the RDMA device's node (`device/numa_node` in sysfs) —
//!   so the cross-NUMA test of the guides is `--numa_node <the other node>` (the default binding
//!   with the 6.29 persona only: 6.06 has none of this). A failure on the
//!   default node is silent (perftest continues unbound); on a node the user asked for it is
//!   one line and exit 1.
//!
//! The header's ` NUMA node` line then reports the node the process runs on (`header.rs`).

use std::path::Path;

use nix::sched::{sched_setaffinity, CpuSet};
use nix::unistd::Pid;

use super::ToolError;
use crate::params::Params;

/// A CPU list as sysfs and `--pin_cores` write it (`0-3,8,12-15`); None if malformed.
pub(super) fn cpu_list(s: &str) -> Option<Vec<usize>> {
    let mut v = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<usize>().ok()?, b.trim().parse::<usize>().ok()?),
            None => {
                let c = part.trim().parse::<usize>().ok()?;
                (c, c)
            }
        };
        if lo > hi || hi - lo > 1 << 16 {
            return None;
        }
        v.extend(lo..=hi);
    }
    Some(v)
}

/// The highest node number among `node<N>` entries of /sys/devices/system/node.
pub(super) fn max_node<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<usize> {
    names.into_iter().filter_map(|n| n.strip_prefix("node")?.parse::<usize>().ok()).max()
}

/// Bind this process as perftest does for a run on device `ibdev`.
pub(super) fn bind(p: &Params, ibdev: &str) -> Result<(), ToolError> {
    if let Some(list) = &p.buf.pin_cores {
        let cpus = cpu_list(list).ok_or_else(|| ToolError::new(1, format!(" Invalid CPU list '{list}'")))?;
        return set_cpus(&cpus).map_err(|e| ToolError::new(1, format!("Failed to set CPU affinity ({e})")));
    }
    if p.buf.disable_numa {
        return Ok(());
    }
    let sys = Path::new("/sys/devices/system/node");
    if let Some(n) = p.buf.numa_node {
        let n = n as usize;
        let names: Vec<String> = std::fs::read_dir(sys)
            .map(|d| d.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect())
            .unwrap_or_default();
        let Some(max) = max_node(names.iter().map(String::as_str)) else {
            return Err(ToolError::new(1, " Kernel support for NUMA is not available"));
        };
        if n > max {
            return Err(ToolError::new(1, format!(" NUMA node {n} does not exist (available: 0-{max})")));
        }
        return run_on_node(sys, n).map_err(|e| ToolError::new(1, format!("Failed to run on node {n} ({e})")));
    }
    // The default binding is newer perftest's; the 6.06 persona runs where it is started, as
    // 6.06 does (the explicit options act in both).
    if p.persona != crate::params::Persona::V629 || confined() {
        return Ok(());
    }
    let dev_node = std::fs::read_to_string(format!("/sys/class/infiniband/{ibdev}/device/numa_node"))
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok());
    if let Some(n) = dev_node.and_then(|n| usize::try_from(n).ok()) {
        // perftest: binding to the device's node is best effort.
        let _ = run_on_node(sys, n);
    }
    Ok(())
}

/// perftest takes an affinity narrower than the online CPUs as the user's own binding.
fn confined() -> bool {
    let online = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mine = nix::sched::sched_getaffinity(Pid::from_raw(0))
        .map(|s| (0..CpuSet::count()).filter(|&c| s.is_set(c).unwrap_or(false)).count())
        .unwrap_or(usize::MAX);
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| cpu_list(&s))
        .map_or(online, |v| v.len())
        > mine
}

fn set_cpus(cpus: &[usize]) -> Result<(), String> {
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c).map_err(|e| format!("CPU {c}: {e}"))?;
    }
    sched_setaffinity(Pid::from_raw(0), &set).map_err(|e| e.to_string())
}

/// The CPUs of node `n`, then the memory policy: later allocations (the buffer) come from `n`.
fn run_on_node(sys: &Path, n: usize) -> Result<(), String> {
    let list = std::fs::read_to_string(sys.join(format!("node{n}/cpulist"))).map_err(|e| format!("node{n}/cpulist: {e}"))?;
    let cpus = cpu_list(&list).filter(|v| !v.is_empty()).ok_or_else(|| format!("node {n} has no CPUs"))?;
    set_cpus(&cpus)?;
    bind_memory(n)
}

/// set_mempolicy(MPOL_BIND, {n}): the kernel call libnuma's `numa_set_membind` makes.
fn bind_memory(n: usize) -> Result<(), String> {
    const MPOL_BIND: libc::c_long = 2;
    let mut mask = vec![0u64; n / 64 + 1];
    mask[n / 64] |= 1 << (n % 64);
    let maxnode = (mask.len() * 64) as libc::c_ulong;
    // SAFETY: the mask is a live array of `maxnode` bits; the kernel only reads it.
    let r = unsafe { libc::syscall(libc::SYS_set_mempolicy, MPOL_BIND, mask.as_ptr(), maxnode) };
    if r == 0 { Ok(()) } else { Err(std::io::Error::last_os_error().to_string()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_as_sysfs_writes_them() {
        assert_eq!(cpu_list("0-3,8,12-13\n"), Some(vec![0, 1, 2, 3, 8, 12, 13]));
        assert_eq!(cpu_list("5"), Some(vec![5]));
        assert_eq!(cpu_list(""), Some(vec![]));
        assert_eq!(cpu_list("3-1"), None);
        assert_eq!(cpu_list("a"), None);
    }

    #[test]
    fn max_node_from_the_node_directory() {
        assert_eq!(max_node(["node0", "node1", "possible", "online", "has_cpu"]), Some(1));
        assert_eq!(max_node(["online"]), None);
    }
}
