//! How long a side may wait for the peer's next out-of-band message once the measurement has
//! begun. The peer may be running its part of the test in that time (a read or atomic server,
//! a uni-BW server, a send_bw server between sizes are silent for the whole sweep), so the bound
//! is what the test itself needs at a rate far below any real device's, never a fixed number.

use std::time::Duration;

/// Slowest data rate taken as still legitimate: a TCG-emulated rxe moves about 40 MB/s and
/// real devices thousands of times more, so a peer slower than this is stuck.
pub const FLOOR_BYTES_PER_SEC: u64 = 1_000_000;
/// Slowest time per message taken as still legitimate (a ping-pong round trip under TCG is
/// a fraction of a millisecond).
pub const FLOOR_SECS_PER_OP: f64 = 0.001;
/// Added to every bound: process start-up, buffer registration and the exchanges between sizes
/// on a loaded host.
pub const SLACK: Duration = Duration::from_secs(120);
/// Largest bound: keeps `Instant + bound` far from overflow; a test that needs longer than
/// this at the floor rates runs for weeks and wants `--run_infinitely`.
pub const MAX_BOUND: Duration = Duration::from_secs(30 * 24 * 3600);

/// The work of one test as this side knows it from its own options.
#[derive(Clone, Debug, PartialEq)]
pub struct Work<'a> {
    /// Message sizes run back to back (`-a`: all of them).
    pub sizes: &'a [u64],
    /// Iterations per size per QP (`-n`).
    pub iters: u64,
    /// QPs (`-q`, after doubling).
    pub qps: u64,
    /// Data moves both ways (`-b`, or a latency ping-pong).
    pub both_ways: bool,
    /// `-D` seconds per size (iterations then do not bound the run).
    pub duration: Option<u32>,
    /// `--run_infinitely`: the run ends only when a side is stopped.
    pub infinite: bool,
}

/// What one wait may take, and in words what that figure stands for (for the error message).
#[derive(Clone, Debug, PartialEq)]
pub struct Bound {
    /// `None`: no deadline (the wait still ends at once on a hang-up or a stop signal).
    pub limit: Option<Duration>,
    pub basis: String,
}

/// The bound of a wait during the measurement phase; never below `setup` (the bound of one
/// setup message, `RPERFTEST_OOB_TIMEOUT`). `deadline_needed`: the channel cannot wait without
/// a deadline (the rdma_cm control QP), so an infinite run gets [`MAX_BOUND`] there.
pub fn run_wait(w: &Work<'_>, setup: Duration, deadline_needed: bool) -> Bound {
    if w.infinite {
        return if deadline_needed {
            Bound { limit: Some(MAX_BOUND), basis: "--run_infinitely".into() }
        } else {
            Bound { limit: None, basis: "--run_infinitely".into() }
        };
    }
    let n_sizes = w.sizes.len().max(1) as u64;
    let (secs, basis) = match w.duration {
        Some(d) => {
            let s = n_sizes as f64 * f64::from(d);
            (s, format!("-D {d} for {n_sizes} size{}", plural(n_sizes)))
        }
        None => {
            let ways = if w.both_ways { 2.0 } else { 1.0 };
            let msgs = w.iters as f64 * w.qps.max(1) as f64;
            let bytes: f64 = w.sizes.iter().map(|&s| s as f64).sum::<f64>() * msgs * ways;
            let s = bytes / FLOOR_BYTES_PER_SEC as f64 + n_sizes as f64 * msgs * FLOOR_SECS_PER_OP;
            (
                s,
                format!(
                    "{n_sizes} size{} x {} iterations x {} QP{} at >= 1 MB/s and >= 1000 messages/s",
                    plural(n_sizes),
                    w.iters,
                    w.qps.max(1),
                    plural(w.qps.max(1))
                ),
            )
        }
    };
    let need = Duration::try_from_secs_f64(secs).unwrap_or(MAX_BOUND).saturating_add(SLACK);
    Bound { limit: Some(need.min(MAX_BOUND).max(setup)), basis }
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SETUP: Duration = Duration::from_secs(30);

    fn work(sizes: &[u64], iters: u64) -> Work<'_> {
        Work { sizes, iters, qps: 1, both_ways: false, duration: None, infinite: false }
    }

    #[test]
    fn a_read_lat_sweep_gets_far_more_than_the_old_30_s() {
        // ib_read_lat -a -n 100: 2 B..8 MiB, about 16.8 MB per iteration, both ways (ping-pong).
        let sizes: Vec<u64> = (1..=23).map(|e| 1u64 << e).collect();
        let mut w = work(&sizes, 100);
        w.both_ways = true;
        let b = run_wait(&w, SETUP, false);
        // 2 x 16777214 x 100 B at 1 MB/s = 3355.4 s, + 23 x 100 x 1 ms, + 120 s.
        assert_eq!(b.limit, Some(Duration::from_secs_f64(3355.4428 + 2.3 + 120.0)));
        assert!(b.basis.contains("23 sizes x 100 iterations"), "{}", b.basis);
    }

    #[test]
    fn many_small_messages_are_bounded_by_the_message_rate() {
        // -s 2 -n 1000000: the bytes are nothing, the per-message floor is 1000 s.
        let b = run_wait(&work(&[2], 1_000_000), SETUP, false);
        assert_eq!(b.limit, Some(Duration::from_secs_f64(2.0 + 1000.0 + 120.0)));
    }

    #[test]
    fn qps_multiply_the_work() {
        let mut w = work(&[65536], 5000);
        let one = run_wait(&w, SETUP, false).limit.unwrap();
        w.qps = 4;
        let four = run_wait(&w, SETUP, false).limit.unwrap();
        assert_eq!(four - SLACK, (one - SLACK) * 4);
    }

    #[test]
    fn duration_runs_take_the_duration_per_size() {
        let mut w = work(&[65536], 5000);
        w.duration = Some(40);
        assert_eq!(run_wait(&w, SETUP, false).limit, Some(Duration::from_secs(160)));
        let sizes = [2u64, 4, 8];
        let mut w = work(&sizes, 5000);
        w.duration = Some(10);
        let b = run_wait(&w, SETUP, false);
        assert_eq!(b.limit, Some(Duration::from_secs(150)));
        assert_eq!(b.basis, "-D 10 for 3 sizes");
    }

    #[test]
    fn infinite_runs_have_no_deadline_where_the_channel_allows_it() {
        let mut w = work(&[65536], 5000);
        w.infinite = true;
        assert_eq!(run_wait(&w, SETUP, false).limit, None);
        assert_eq!(run_wait(&w, SETUP, true).limit, Some(MAX_BOUND));
    }

    #[test]
    fn never_below_the_setup_bound_and_never_overflowing() {
        let b = run_wait(&work(&[2], 1), Duration::from_secs(500), false);
        assert_eq!(b.limit, Some(Duration::from_secs(500)));
        let b = run_wait(&work(&[8 << 20], u64::MAX), SETUP, false);
        assert_eq!(b.limit, Some(MAX_BOUND));
        // An Instant that far ahead must exist (the transport adds the bound to now()).
        assert!(std::time::Instant::now().checked_add(MAX_BOUND).is_some());
    }
}
