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

/// The rounds of [`rounds`] without a table: pair `slot` of round `r`, and a node's k-th pair,
/// are worked out from the circle method's rotation when asked for, so that the schedule of
/// 1,024 nodes costs a few words, not half a million pairs and their index by node. Equal to
/// [`rounds`] pair for pair (a unit test holds it to that for every n to 300 and some beyond).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rounds {
    n: usize,
    serial: bool,
    both_directions: bool,
}

impl Rounds {
    pub fn new(n: usize, serial: bool, both_directions: bool) -> Rounds {
        Rounds { n, serial, both_directions }
    }

    /// The nodes the rounds are of.
    pub fn nodes(&self) -> usize {
        self.n
    }

    /// The circle method's rounds and pairs a round (`n` - 1 or `n` rounds of `n` / 2).
    fn circle(&self) -> (usize, usize) {
        if self.n < 2 {
            (0, 0)
        } else {
            (self.n + self.n % 2 - 1, self.n / 2)
        }
    }

    /// Rounds one way.
    fn one_way(&self) -> usize {
        let (rounds, width) = self.circle();
        if self.serial {
            rounds * width
        } else {
            rounds
        }
    }

    pub fn len(&self) -> usize {
        self.one_way() * if self.both_directions { 2 } else { 1 }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The pairs of round `r` (0 past the last round).
    pub fn width(&self, r: usize) -> usize {
        match (r < self.len(), self.serial) {
            (false, _) => 0,
            (true, true) => 1,
            (true, false) => self.circle().1,
        }
    }

    /// Pair `slot` of round `r`; both below [`Rounds::len`] and [`Rounds::width`].
    pub fn pair(&self, r: usize, slot: usize) -> Pair {
        let one_way = self.one_way();
        let (r, back) = if r >= one_way { (r - one_way, true) } else { (r, false) };
        let (r, slot) = if self.serial {
            let w = self.circle().1;
            (r / w, r % w)
        } else {
            (r, slot)
        };
        let p = circle_pair(self.n, r, slot);
        if back {
            Pair { a: p.b, b: p.a }
        } else {
            p
        }
    }

    /// The pairs of round `r`, in slot order.
    pub fn round(&self, r: usize) -> impl Iterator<Item = Pair> + '_ {
        (0..self.width(r)).map(move |s| self.pair(r, s))
    }

    /// Every pair of every round.
    pub fn pairs(&self) -> usize {
        self.len() * self.width(0)
    }

    /// How many pairs node `x` is in (each other node once, twice with both directions).
    pub fn ends(&self, x: usize) -> usize {
        if x >= self.n || self.n < 2 {
            return 0;
        }
        (self.n - 1) * if self.both_directions { 2 } else { 1 }
    }

    /// Node `x`'s `k`-th pair in round order, as (round, slot); `k` below [`Rounds::ends`].
    pub fn end(&self, x: usize, k: usize) -> (usize, usize) {
        let per_way = self.n - 1;
        let (k, base) = if k >= per_way { (k - per_way, self.one_way()) } else { (k, 0) };
        // The circle round of x's k-th pair: x sits out its bye round when n is odd.
        let r = if self.n % 2 == 1 && k >= self.bye_round(x) { k + 1 } else { k };
        let slot = circle_slot(self.n, r, x);
        if self.serial {
            (base + r * self.circle().1 + slot, 0)
        } else {
            (base + r, slot)
        }
    }

    /// Which of node `x`'s pairs (its k for [`Rounds::end`]) its pair in round `r` is; `x`
    /// is to play in that round.
    pub fn end_index(&self, x: usize, r: usize) -> usize {
        let one_way = self.one_way();
        let (r, before) = if r >= one_way { (r - one_way, self.n - 1) } else { (r, 0) };
        let r = if self.serial { r / self.circle().1 } else { r };
        before + if self.n % 2 == 1 && r > self.bye_round(x) { r - 1 } else { r }
    }

    /// The circle round in which node `x` meets the bye (n odd): position 1 + (x - 1 + r) mod
    /// n meets the bye's 1 + (r - 1) mod n when the two add up to n, that is 2r ≡ n - x.
    fn bye_round(&self, x: usize) -> usize {
        let len = self.n; // n odd: the circle has n + 1 places, n rounds
        ((len - x % len) % len * len.div_ceil(2)) % len
    }
}

/// The slot of node `x` in round `r` of [`circle_rounds`]`(n)` (x plays in that round).
fn circle_slot(n: usize, r: usize, x: usize) -> usize {
    let m = n + n % 2;
    let len = m - 1;
    let k = if x == 0 { 0 } else { 1 + (x - 1 + r) % len };
    let i = k.min(m - 1 - k);
    if n % 2 == 1 && i > bye_meeting(m, r) {
        i - 1
    } else {
        i
    }
}

/// The meeting (position i against m - 1 - i) that holds the bye in round `r` of `m` places.
fn bye_meeting(m: usize, r: usize) -> usize {
    let at = 1 + (r + m - 2) % (m - 1);
    at.min(m - 1 - at)
}

/// Pair `slot` of round `r` of [`circle_rounds`]`(n)`, worked out. Position k of round r holds
/// node `1 + (k - 1 - r) mod (m - 1)` (position 0 holds node 0; node m - 1 is the bye when n
/// is odd, m = n rounded up to even); slot s is the s-th meeting i (position i against
/// m - 1 - i) that is not the bye's.
fn circle_pair(n: usize, r: usize, slot: usize) -> Pair {
    let m = n + n % 2;
    let len = m - 1;
    let pos = |k: usize| if k == 0 { 0 } else { 1 + (k - 1 + len - r % len) % len };
    let i = if n % 2 == 1 && slot >= bye_meeting(m, r) { slot + 1 } else { slot };
    let (x, y) = (pos(i), pos(m - 1 - i));
    if (r + i).is_multiple_of(2) {
        Pair { a: x, b: y }
    } else {
        Pair { a: y, b: x }
    }
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
    fn worked_out_rounds_equal_the_table() {
        let sizes = (0..=300).chain([511, 512, 1023, 1024]);
        for n in sizes {
            for (serial, both) in [(false, false), (true, false), (false, true), (true, true)] {
                if serial && n > 120 {
                    continue; // n²/2 rounds of one pair: the small sizes say it
                }
                let table = rounds(n, serial, both);
                let worked = Rounds::new(n, serial, both);
                assert_eq!(worked.len(), table.len(), "n={n} serial={serial} both={both}");
                // Each node's pairs in round order, from the table.
                let mut ends: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n];
                for (r, round) in table.iter().enumerate() {
                    assert_eq!(worked.width(r), round.len(), "n={n} round {r}");
                    assert!(worked.round(r).eq(round.iter().copied()), "n={n} serial={serial} both={both} round {r}");
                    for (s, p) in round.iter().enumerate() {
                        ends[p.a].push((r, s));
                        ends[p.b].push((r, s));
                    }
                }
                assert_eq!(worked.width(table.len()), 0);
                assert_eq!(worked.pairs(), table.iter().map(Vec::len).sum::<usize>());
                for (x, e) in ends.iter().enumerate() {
                    assert_eq!(worked.ends(x), e.len(), "n={n} node {x}");
                    for (k, &(r, s)) in e.iter().enumerate() {
                        assert_eq!(worked.end(x, k), (r, s), "n={n} serial={serial} both={both} node {x} pair {k}");
                        assert_eq!(worked.end_index(x, r), k, "n={n} serial={serial} both={both} node {x} ({r}, {s})");
                    }
                }
            }
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
