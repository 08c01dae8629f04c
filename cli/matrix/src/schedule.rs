//! Which pairs run together, and how long a pair may take.
//!
//! Rounds come from the round-robin "circle method": the nodes stand in a list (plus a dummy
//! "bye" when their number is odd); in each round position i meets position len-1-i, then the
//! first stays put and the others rotate by one. Every unordered pair meets exactly once, and
//! no node is in two pairs of one round, so a NIC carries one test at a time and a slow node
//! cannot hide behind a busy one. n-1 rounds for even n, n for odd n.

use std::time::Duration;

use perftest::params::{Params, TestKind, TestMethod, TestType};

/// One pair of a round: indices into the host list; `a` runs the server, `b` the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pair {
    pub a: usize,
    pub b: usize,
}

/// The rounds for `n` nodes (empty for n < 2).
pub fn circle_rounds(n: usize) -> Vec<Vec<Pair>> {
    if n < 2 {
        return Vec::new();
    }
    // usize::MAX is the bye.
    let mut pos: Vec<usize> = (0..n).collect();
    if n % 2 == 1 {
        pos.push(usize::MAX);
    }
    let len = pos.len();
    let mut rounds = Vec::with_capacity(len - 1);
    for r in 0..len - 1 {
        let mut round = Vec::with_capacity(len / 2);
        for i in 0..len / 2 {
            let (x, y) = (pos[i], pos[len - 1 - i]);
            if x == usize::MAX || y == usize::MAX {
                continue;
            }
            // Alternate which side serves, so a node is not always the server.
            let (a, b) = if (r + i) % 2 == 0 { (x, y) } else { (y, x) };
            round.push(Pair { a, b });
        }
        rounds.push(round);
        pos[1..].rotate_right(1);
    }
    rounds
}

/// One pair at a time (`--serial`): the same pairs, one per round.
pub fn serial_rounds(n: usize) -> Vec<Vec<Pair>> {
    circle_rounds(n).into_iter().flatten().map(|p| vec![p]).collect()
}

/// The rounds of one test and rail: the circle method (or one pair per round with `serial`),
/// then, with `both_directions`, the same rounds with server and client swapped.
pub fn rounds(n: usize, serial: bool, both_directions: bool) -> Vec<Vec<Pair>> {
    let mut rounds = if serial { serial_rounds(n) } else { circle_rounds(n) };
    if both_directions {
        let back: Vec<Vec<Pair>> = rounds.iter().map(|r| r.iter().map(|p| Pair { a: p.b, b: p.a }).collect()).collect();
        rounds.extend(back);
    }
    rounds
}

/// The slowest a healthy link may be and still count as working, for the deadlines.
#[derive(Clone, Copy, Debug)]
pub struct Floors {
    /// Bytes per second (`--floor-rate`, given in MB/s).
    pub rate: f64,
    /// The longest round trip of one latency iteration (`--floor-lat`).
    pub iter_time: Duration,
    /// Starting both sides, connecting, exchanging, and ending (`--setup-time`).
    pub setup: Duration,
}

/// The hard deadline of one pair running `p` (the tool's own parse of the options).
///
/// Iteration mode: the bytes the test moves at the floor rate, plus one floor round trip per
/// latency iteration (latency tests are bound by round trips, not bytes). `-a` runs every size
/// from 2 bytes to 8 MiB, so its bytes are iterations × (2^24 - 2). Duration mode (`-D`): the
/// duration, plus perftest's warm-up margin on both ends. `-b` doubles the bytes. Then set-up.
pub fn pair_deadline(p: &Params, f: &Floors) -> Duration {
    let work = match p.test_type {
        TestType::Duration => {
            let margin = p.margin.unwrap_or(p.duration / 4);
            f64::from(p.duration) + 2.0 * f64::from(margin)
        }
        TestType::Iterations => {
            let per_iter_bytes = match p.test_method {
                TestMethod::All => f64::from((1u32 << 24) - 2),
                _ => p.size as f64,
            };
            let dirs = if p.duplex || p.kind == TestKind::Lat { 2.0 } else { 1.0 };
            let qps = f64::from(p.num_qps.max(1));
            let bytes = per_iter_bytes * p.iters as f64 * dirs * qps;
            let trips = if p.kind == TestKind::Lat {
                let sizes = if p.test_method == TestMethod::All { 23.0 } else { 1.0 };
                p.iters as f64 * sizes * f.iter_time.as_secs_f64()
            } else {
                0.0
            };
            bytes / f.rate.max(1.0) + trips
        }
    };
    // A bound past a day is a typo; cap it so the arithmetic stays finite.
    Duration::from_secs_f64(work.clamp(0.0, 86_400.0)) + f.setup
}

#[cfg(test)]
mod tests {
    use super::*;
    use perftest::params::{parse, ParseOutcome, Tool};

    fn check(n: usize, rounds: &[Vec<Pair>]) {
        let want_rounds = if n < 2 { 0 } else if n % 2 == 1 { n } else { n - 1 };
        assert_eq!(rounds.len(), want_rounds, "n={n}");
        let mut seen = vec![false; n * n];
        let mut in_round = vec![usize::MAX; n];
        let mut total = 0;
        for (r, round) in rounds.iter().enumerate() {
            assert_eq!(round.len(), n / 2, "n={n} round {r}: every node but the bye plays");
            for p in round {
                assert!(p.a < n && p.b < n && p.a != p.b, "n={n}: bad pair {p:?}");
                for x in [p.a, p.b] {
                    assert_ne!(in_round[x], r, "n={n}: node {x} twice in round {r}");
                    in_round[x] = r;
                }
                let (lo, hi) = (p.a.min(p.b), p.a.max(p.b));
                assert!(!seen[lo * n + hi], "n={n}: pair {lo}-{hi} twice");
                seen[lo * n + hi] = true;
                total += 1;
            }
        }
        assert_eq!(total, n * n.saturating_sub(1) / 2, "n={n}: every unordered pair once");
    }

    #[test]
    fn circle_method_for_every_n_up_to_1024() {
        for n in 0..=1024 {
            check(n, &circle_rounds(n));
        }
    }

    #[test]
    fn small_cases_by_hand() {
        assert_eq!(circle_rounds(2), vec![vec![Pair { a: 0, b: 1 }]]);
        assert_eq!(circle_rounds(4).len(), 3);
        let five = circle_rounds(5);
        assert_eq!(five.len(), 5);
        assert!(five.iter().all(|r| r.len() == 2));
        // Servers are spread: in 4 nodes nobody serves all three of its pairs.
        let mut serves = [0; 4];
        for p in circle_rounds(4).iter().flatten() {
            serves[p.a] += 1;
        }
        assert!(serves.iter().all(|&s| s < 3), "{serves:?}");
    }

    #[test]
    fn serial_has_the_same_pairs_one_per_round() {
        for n in [2, 3, 4, 7, 16] {
            let s = serial_rounds(n);
            assert_eq!(s.len(), n * (n - 1) / 2);
            assert!(s.iter().all(|r| r.len() == 1));
        }
    }

    fn params(t: Tool, args: &[&str]) -> Box<Params> {
        let a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match parse(t, &a) {
            Ok(ParseOutcome::Run(p)) => p,
            _ => panic!("{args:?}"),
        }
    }

    #[test]
    fn deadlines_follow_the_work() {
        let f = Floors { rate: 1e6, iter_time: Duration::from_millis(10), setup: Duration::from_secs(30) };
        // 4096 B x 200 at 1 MB/s = 0.82 s, plus 30 s.
        let d = pair_deadline(&params(Tool::WriteBw, &["-s", "4096", "-n", "200"]), &f);
        assert!((d.as_secs_f64() - 30.8192).abs() < 1e-3, "{d:?}");
        // -b doubles the bytes.
        let d2 = pair_deadline(&params(Tool::WriteBw, &["-s", "4096", "-n", "200", "-b"]), &f);
        assert!((d2.as_secs_f64() - 31.6384).abs() < 1e-3, "{d2:?}");
        // Latency: 200 round trips of 10 ms, bytes both ways.
        let l = pair_deadline(&params(Tool::SendLat, &["-n", "200"]), &f);
        assert!(l > Duration::from_secs(32) && l < Duration::from_secs(33), "{l:?}");
        // -D 10: 10 s plus the default margin (D/4) on both ends.
        let dd = pair_deadline(&params(Tool::WriteBw, &["-D", "10"]), &f);
        assert_eq!(dd, Duration::from_secs(30 + 10 + 2 * 2));
        // Defaults (5000 x 64 KiB) take long at the floor, and -a longer still.
        let def = pair_deadline(&params(Tool::WriteBw, &[]), &f);
        let all = pair_deadline(&params(Tool::WriteBw, &["-a"]), &f);
        assert!(def > Duration::from_secs(300) && all > def, "{def:?} {all:?}");
        // An absurd request is capped, not overflowed.
        let huge = pair_deadline(&params(Tool::WriteBw, &["-n", "4000000000", "-s", "8388608"]), &f);
        assert_eq!(huge, Duration::from_secs(86_400 + 30));
    }
}
