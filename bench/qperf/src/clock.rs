//! The clocks a STAT carries: real time, and the CPU columns of `/proc/stat`'s "cpu" line.
//!
//! Stock qperf counts real time with `times()` (CLK_TCK, usually 100/s) and sends its tick
//! rate in STAT; the peer divides every clock by that rate. We use microseconds for all of
//! them (real time from a monotonic clock, the `/proc/stat` columns scaled from USER_HZ), so
//! short runs are not cut to 10 ms steps and a stock peer still computes the same figures.

use super::wire::{Stat, T_N, T_REAL};
use std::sync::OnceLock;
use std::time::Instant;

/// Ticks per second of every clock we put in a STAT.
pub const TICKS: u32 = 1_000_000;

fn epoch() -> Instant {
    static E: OnceLock<Instant> = OnceLock::new();
    *E.get_or_init(Instant::now)
}

fn user_hz() -> u64 {
    match nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK) {
        Ok(Some(v)) if v > 0 => v as u64,
        _ => 100,
    }
}

/// The eight CPU columns (user nice system idle iowait irq softirq steal) of the aggregate
/// "cpu" line, in USER_HZ ticks; missing columns (old kernels) are 0.
pub fn parse_proc_stat(text: &str) -> Option<[u64; T_N - 1]> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let mut out = [0u64; T_N - 1];
    for (o, f) in out.iter_mut().zip(line.split_whitespace().skip(1)) {
        *o = f.parse().ok()?;
    }
    Some(out)
}

/// Online CPUs: the "cpuN" lines of /proc/stat.
pub fn count_cpus(text: &str) -> u32 {
    let n = text.lines().filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit)).count();
    u32::try_from(n).unwrap_or(u32::MAX).max(1)
}

/// Now, for `time_s`/`time_e`: [real, user, nice, system, idle, iowait, irq, softirq, steal].
pub fn get_times() -> [u64; T_N] {
    let mut t = [0u64; T_N];
    // +1 so a start time is never 0, which a stock peer would treat as "no time".
    t[T_REAL] = epoch().elapsed().as_micros() as u64 + 1;
    if let Some(cols) = std::fs::read_to_string("/proc/stat").ok().as_deref().and_then(parse_proc_stat) {
        let scale = u64::from(TICKS) / user_hz().max(1);
        for (dst, v) in t[1..].iter_mut().zip(cols) {
            *dst = v.saturating_mul(scale);
        }
    }
    t
}

/// An empty STAT for this host: CPU count and tick rate filled in.
pub fn new_stat() -> Stat {
    let cpus = std::fs::read_to_string("/proc/stat").map(|t| count_cpus(&t)).unwrap_or(1);
    epoch();
    Stat { no_cpus: cpus, no_ticks: TICKS, ..Stat::default() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_line() {
        let t = "cpu  10 2 30 400 5 6 7 8 0 0\ncpu0 5 1 15 200 2 3 3 4 0 0\ncpu1 5 1 15 200 3 3 4 4 0 0\nintr 1\n";
        assert_eq!(parse_proc_stat(t), Some([10, 2, 30, 400, 5, 6, 7, 8]));
        assert_eq!(count_cpus(t), 2);
        assert_eq!(parse_proc_stat("cpu  1 2 3 4\n"), Some([1, 2, 3, 4, 0, 0, 0, 0]));
        assert_eq!(parse_proc_stat("cpu  1 x\n"), None);
        assert_eq!(parse_proc_stat("nothing"), None);
    }

    #[test]
    fn times_move_forward() {
        let a = get_times();
        let b = get_times();
        assert!(a[T_REAL] > 0 && b[T_REAL] >= a[T_REAL]);
    }
}
