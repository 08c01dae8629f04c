//! No barrier between rounds: a pair starts as soon as both of its nodes are free.
//!
//! With rounds, a round ends when its slowest pair does, so every round costs its slowest pair
//! plus a fixed start-up, and one slow node makes every fast node wait once per round. Here
//! the rounds only give the pairs (every pair once) and their order; each pair holds two
//! resources (its two nodes, or with `--rails-parallel` its two nodes' devices on its rail)
//! and runs the moment both are free, so a node is still in one pair at a time.
//!
//! Which pair a freed node takes: among its pending pairs whose other node is free, the
//! earliest in round order, unless another's other node has clearly more work left (over 1.5
//! times as much: pending pairs times the mean time of its pairs so far). With even times that
//! keeps the rounds' perfect matchings (n−1 pair times for n nodes); a slow node always has
//! the most work left, so the first node to free up after it joins it, and it never waits for
//! one given partner. The core is
//! a state machine ([`Dispatcher`]) so that a simulated clock can test it; [`run`] drives it
//! with threads.
//!
//! Memory: the pairs are not listed. A pair is its rail's place, its round and its slot in the
//! round ([`At`]); the rounds say who meets whom. Per resource the dispatcher keeps one bit per
//! pair of its node (set while that pair is to run), so a pending pair costs **2 bits** (one
//! per end), plus a row's padding to 64 bits. To find a bit's pair, its partner and the
//! partner's bit, the run's rounds are worked out from the circle method when asked
//! ([`Dispatcher::worked`], `schedule::Rounds`: nothing stored); a caller's own table of rounds
//! ([`Dispatcher::new`], the tests') gets a table of each node's pairs in round order ([`Ends`],
//! 16 bytes a node pair). Per resource: its count of pending pairs, the pair it runs and its
//! mean time (24 bytes). At 1,024 nodes and 8 rails run together that is 1.25 MB in all, where
//! a list of pairs took 306 MB.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::schedule::{Pair, Rounds};

/// A pair as the dispatcher hands it out: its rail's place in the dispatch (its resources
/// are its two nodes + place × nodes), its round, and its slot in the round.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct At {
    pub place: usize,
    pub round: usize,
    pub slot: usize,
}

/// A resource that runs no pair.
const IDLE: u32 = u32::MAX;

/// Per node, the pairs of the rounds it is in, in round order, as (round, slot): one table for
/// every rail (the bits of a resource are numbered by it).
struct Ends {
    /// Node x's entries are `at[start[x]..start[x + 1]]`.
    start: Vec<usize>,
    at: Vec<(u32, u32)>,
}

impl Ends {
    /// Err when a pair names a node out of range or twice, or a node is twice in a round: the
    /// rounds are matchings (schedule.rs), and the bits rely on it.
    fn new(rounds: &[Vec<Pair>], nodes: usize) -> Result<Ends, String> {
        let mut count = vec![0usize; nodes];
        // The last round each node was seen in, plus one (0: none yet).
        let mut seen_in = vec![0usize; nodes];
        for (r, round) in rounds.iter().enumerate() {
            for (s, p) in round.iter().enumerate() {
                if p.a >= nodes || p.b >= nodes || p.a == p.b {
                    return Err(format!(
                        "round {r} slot {s}: pair {} - {} is not two of the {nodes} nodes",
                        p.a, p.b
                    ));
                }
                for x in [p.a, p.b] {
                    if seen_in[x] == r + 1 {
                        return Err(format!("round {r}: node {x} is in two pairs"));
                    }
                    seen_in[x] = r + 1;
                    count[x] += 1;
                }
            }
        }
        let too_big = |v: usize| {
            u32::try_from(v)
                .map_err(|_| format!("{v} rounds or slots are more than the dispatcher counts"))
        };
        too_big(rounds.len())?;
        too_big(rounds.iter().map(Vec::len).max().unwrap_or(0))?;
        let mut start = Vec::with_capacity(nodes + 1);
        start.push(0);
        for c in &count {
            start.push(start.last().copied().unwrap_or(0) + c);
        }
        let mut at = vec![(0u32, 0u32); start[nodes]];
        let mut fill = start.clone();
        for (r, round) in rounds.iter().enumerate() {
            for (s, p) in round.iter().enumerate() {
                for x in [p.a, p.b] {
                    // Both fit in u32: checked above.
                    at[fill[x]] = (r as u32, s as u32);
                    fill[x] += 1;
                }
            }
        }
        Ok(Ends { start, at })
    }

    fn of(&self, node: usize) -> &[(u32, u32)] {
        &self.at[self.start[node]..self.start[node + 1]]
    }

    /// The number of node's pair (round, slot) among its pairs, if it is one of them.
    fn index(&self, node: usize, round: usize, slot: usize) -> Option<usize> {
        let (r, s) = (u32::try_from(round).ok()?, u32::try_from(slot).ok()?);
        self.of(node).binary_search(&(r, s)).ok()
    }
}

/// Who meets whom: the caller's table of rounds with [`Ends`] built from it, or the circle
/// method's rounds worked out when asked ([`Rounds`]: nothing stored, whatever the size).
enum Sched<'a> {
    Table { rounds: &'a [Vec<Pair>], ends: Ends },
    Worked(Rounds),
}

impl Sched<'_> {
    fn rounds(&self) -> usize {
        match self {
            Sched::Table { rounds, .. } => rounds.len(),
            Sched::Worked(w) => w.len(),
        }
    }

    fn width(&self, r: usize) -> usize {
        match self {
            Sched::Table { rounds, .. } => rounds.get(r).map_or(0, Vec::len),
            Sched::Worked(w) => w.width(r),
        }
    }

    /// Pair `s` of round `r`, if there is one.
    fn pair(&self, r: usize, s: usize) -> Option<Pair> {
        match self {
            Sched::Table { rounds, .. } => rounds.get(r).and_then(|ps| ps.get(s)).copied(),
            Sched::Worked(w) => (s < w.width(r)).then(|| w.pair(r, s)),
        }
    }

    /// How many pairs node `x` is in.
    fn ends(&self, x: usize) -> usize {
        match self {
            Sched::Table { ends, .. } => ends.of(x).len(),
            Sched::Worked(w) => w.ends(x),
        }
    }

    /// Node `x`'s `k`-th pair, as (round, slot).
    fn end(&self, x: usize, k: usize) -> (usize, usize) {
        match self {
            Sched::Table { ends, .. } => {
                let (r, s) = ends.of(x)[k];
                (r as usize, s as usize)
            }
            Sched::Worked(w) => w.end(x, k),
        }
    }

    /// Which of node `x`'s pairs pair `slot` of round `round` is (`x` is one of its nodes).
    fn index(&self, x: usize, round: usize, slot: usize) -> Option<usize> {
        match self {
            Sched::Table { ends, .. } => ends.index(x, round, slot),
            Sched::Worked(w) => Some(w.end_index(x, round)),
        }
    }
}

/// The set bits of a word, lowest first.
struct Bits(u64);

impl Iterator for Bits {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let b = self.0.trailing_zeros() as usize;
        self.0 &= self.0 - 1;
        Some(b)
    }
}

/// Which pairs may start, as resources free up.
pub struct Dispatcher<'a> {
    sched: Sched<'a>,
    nodes: usize,
    /// Per resource (node + place × nodes) a row of bits: bit k set while its node's k-th pair
    /// ([`Ends`]) on its rail is still to start. Round order is bit order.
    pending: Vec<u64>,
    /// Node x's row starts `row_start[x]` words into its place's rows.
    row_start: Vec<usize>,
    /// Per resource: its pending pairs (the set bits of its row).
    left_of: Vec<u32>,
    /// Per resource: the bit of the pair it runs, or IDLE.
    running: Vec<u32>,
    /// Per resource: finished pairs and their summed time, for its mean.
    seen: Vec<(u32, f64)>,
    in_flight: usize,
    /// At most this many pairs at once (1 for `--serial`).
    max_in_flight: usize,
    left: usize,
    /// Resources freed since the last [`Dispatcher::startable`]: a pair can only have become
    /// startable through one of them, so only they are looked at (at 1,024 nodes a scan of
    /// every idle node's pending pairs on every event would cost the coordinator seconds).
    freed: Vec<usize>,
    /// Every resource is to be looked at: at the start, and after the `max_in_flight` cap
    /// stopped a scan (the pairs it skipped need no freed resource to start later).
    rescan: bool,
}

impl<'a> Dispatcher<'a> {
    /// The pairs of `rounds` on `places` rails of `nodes` nodes each, those `wanted` says are
    /// to run (asked in round order, then place, then slot); priority is round order.
    pub fn new(
        rounds: &'a [Vec<Pair>],
        nodes: usize,
        places: usize,
        max_in_flight: usize,
        wanted: impl FnMut(At, Pair) -> bool,
    ) -> Result<Dispatcher<'a>, String> {
        let ends = Ends::new(rounds, nodes)?;
        Ok(Dispatcher::with(Sched::Table { rounds, ends }, nodes, places, max_in_flight, wanted))
    }

    /// As [`Dispatcher::new`], over the circle method's rounds of `nodes` nodes worked out
    /// when asked: no table of pairs at all.
    pub fn worked(
        rounds: Rounds,
        nodes: usize,
        places: usize,
        max_in_flight: usize,
        wanted: impl FnMut(At, Pair) -> bool,
    ) -> Result<Dispatcher<'a>, String> {
        if rounds.nodes() != nodes {
            return Err(format!("the rounds are of {} nodes, not {nodes}", rounds.nodes()));
        }
        Ok(Dispatcher::with(Sched::Worked(rounds), nodes, places, max_in_flight, wanted))
    }

    fn with(
        sched: Sched<'a>,
        nodes: usize,
        places: usize,
        max_in_flight: usize,
        mut wanted: impl FnMut(At, Pair) -> bool,
    ) -> Dispatcher<'a> {
        let mut row_start = Vec::with_capacity(nodes + 1);
        row_start.push(0);
        for x in 0..nodes {
            row_start.push(row_start[x] + sched.ends(x).div_ceil(64));
        }
        let resources = nodes * places;
        let mut d = Dispatcher {
            nodes,
            pending: vec![0; row_start[nodes] * places],
            row_start,
            left_of: vec![0; resources],
            running: vec![IDLE; resources],
            seen: vec![(0, 0.0); resources],
            in_flight: 0,
            max_in_flight: max_in_flight.max(1),
            left: 0,
            freed: Vec::new(),
            rescan: true,
            sched,
        };
        // Each node's bit for the round now looked at: its pairs so far.
        let mut bit = vec![0usize; nodes];
        for round in 0..d.sched.rounds() {
            let width = d.sched.width(round);
            for place in 0..places {
                for slot in 0..width {
                    let Some(p) = d.sched.pair(round, slot) else { continue };
                    if wanted(At { place, round, slot }, p) {
                        d.set_pending(place * nodes + p.a, bit[p.a], true);
                        d.set_pending(place * nodes + p.b, bit[p.b], true);
                        d.left += 1;
                    }
                }
            }
            // A node is in at most one pair of a round (Ends::new; the circle method).
            for p in (0..width).filter_map(|slot| d.sched.pair(round, slot)) {
                bit[p.a] += 1;
                bit[p.b] += 1;
            }
        }
        d
    }

    /// Resource `res`'s row of bits in `pending`.
    fn row(&self, res: usize) -> std::ops::Range<usize> {
        let (place, node) = (res / self.nodes, res % self.nodes);
        let base = place * self.row_start[self.nodes];
        base + self.row_start[node]..base + self.row_start[node + 1]
    }

    fn set_pending(&mut self, res: usize, bit: usize, on: bool) {
        let w = self.row(res).start + bit / 64;
        let mask = 1u64 << (bit % 64);
        if (self.pending[w] & mask != 0) != on {
            self.pending[w] ^= mask;
            if on {
                self.left_of[res] += 1;
            } else {
                self.left_of[res] -= 1;
            }
        }
    }

    /// Resource `res`'s pending pairs as bits, in round order.
    fn pending_of(&self, res: usize) -> impl Iterator<Item = usize> + '_ {
        self.pending[self.row(res)]
            .iter()
            .enumerate()
            .flat_map(|(i, &w)| Bits(w).map(move |b| i * 64 + b))
    }

    /// The pair of `node`'s bit `bit`.
    fn pair_of(&self, node: usize, bit: usize) -> (usize, usize, Pair) {
        let (r, s) = self.sched.end(node, bit);
        let p = self.sched.pair(r, s).expect("a node's pairs are pairs of the rounds");
        (r, s, p)
    }

    /// The work a resource has left: its pending pairs times its mean pair time so far (1 s
    /// before it has finished one).
    fn work_left(&self, r: usize) -> f64 {
        let (n, sum) = self.seen[r];
        let mean = if n == 0 { 1.0 } else { sum / f64::from(n) };
        f64::from(self.left_of[r]) * mean
    }

    /// Resource `res` starts its pair `bit` (its partner is free): both ends leave pending.
    fn take(&mut self, res: usize, bit: usize) -> At {
        let (place, node) = (res / self.nodes, res % self.nodes);
        let (round, slot, p) = self.pair_of(node, bit);
        for x in [p.a, p.b] {
            let b = if x == node {
                Some(bit)
            } else {
                self.sched.index(x, round, slot)
            };
            // Every pair is in both of its nodes' tables (Ends::new).
            let Some(b) = b else { continue };
            let r = place * self.nodes + x;
            self.set_pending(r, b, false);
            self.running[r] = b as u32;
        }
        self.in_flight += 1;
        self.left -= 1;
        At { place, round, slot }
    }

    /// The bit of the pair resource `r` should start now, if any (see the module comment).
    fn best_for(&self, r: usize) -> Option<usize> {
        if self.running[r] != IDLE {
            return None;
        }
        let (place, node) = (r / self.nodes, r % self.nodes);
        // (work left of the other node, bit): the first startable in round order, and the
        // one whose other node has the most work left.
        let mut first: Option<(f64, usize)> = None;
        let mut most: Option<(f64, usize)> = None;
        for bit in self.pending_of(r) {
            let (_, _, p) = self.pair_of(node, bit);
            let other = place * self.nodes + if p.a == node { p.b } else { p.a };
            if self.running[other] != IDLE {
                continue;
            }
            let w = self.work_left(other);
            first.get_or_insert((w, bit));
            if most.is_none_or(|(mw, _)| w > mw) {
                most = Some((w, bit));
            }
        }
        // Round order keeps the rounds' perfect matchings when times are even; a node with
        // clearly more work left (half as much again: a slow node) goes first.
        match (first, most) {
            (Some((fw, f)), Some((mw, m))) => Some(if mw > 1.5 * fw { m } else { f }),
            _ => None,
        }
    }

    /// The pairs to start now; they leave pending and their resources are busy.
    pub fn startable(&mut self) -> Vec<At> {
        let mut out = Vec::new();
        let look: Vec<usize> = if std::mem::take(&mut self.rescan) {
            self.freed.clear();
            (0..self.running.len()).collect()
        } else {
            std::mem::take(&mut self.freed)
        };
        for r in look {
            if self.in_flight >= self.max_in_flight {
                self.rescan = true;
                break;
            }
            if let Some(bit) = self.best_for(r) {
                out.push(self.take(r, bit));
            }
        }
        out
    }

    /// Pair `at` ended after `secs`: its resources are free again. A pair not running is
    /// ignored.
    pub fn finished(&mut self, at: At, secs: f64) {
        let Some(p) = self.sched.pair(at.round, at.slot) else {
            return;
        };
        let base = at.place * self.nodes;
        let running = |x: usize| {
            let b = self.sched.index(x, at.round, at.slot)?;
            (self.running.get(base + x) == Some(&(b as u32))).then_some(())
        };
        if running(p.a).and(running(p.b)).is_none() {
            return;
        }
        self.in_flight -= 1;
        for r in [base + p.a, base + p.b] {
            self.running[r] = IDLE;
            self.freed.push(r);
            self.seen[r].0 += 1;
            self.seen[r].1 += secs.max(0.0);
        }
    }

    /// Start nothing more (a stop signal): the pending pairs are dropped.
    pub fn drop_pending(&mut self) {
        self.pending.fill(0);
        self.left_of.fill(0);
        self.left = 0;
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// No pair pending and none running.
    pub fn done(&self) -> bool {
        self.left == 0 && self.in_flight == 0
    }

    /// Bytes the dispatcher holds on the heap (its vectors' capacities), for the measure.
    #[cfg(test)]
    pub fn heap_bytes(&self) -> usize {
        fn bytes<T>(_: &[T], capacity: usize) -> usize {
            capacity * std::mem::size_of::<T>()
        }
        let ends = match &self.sched {
            Sched::Table { ends, .. } => bytes(&ends.start, ends.start.capacity()) + bytes(&ends.at, ends.at.capacity()),
            Sched::Worked(_) => 0,
        };
        ends + bytes(&self.pending, self.pending.capacity())
            + bytes(&self.row_start, self.row_start.capacity())
            + bytes(&self.left_of, self.left_of.capacity())
            + bytes(&self.running, self.running.capacity())
            + bytes(&self.seen, self.seen.capacity())
            + bytes(&self.freed, self.freed.capacity())
    }
}

/// What [`run`] is given: how to run, record and stop each pair.
pub struct Hooks<L, E, S, T> {
    /// Runs a pair (on its own thread); None when a stop signal ended it unrecorded.
    pub launch: L,
    /// A pair ended with this result: record it. An Err stops the run (nothing new starts).
    pub each: E,
    /// True once the run is to stop: nothing new starts, the running pairs end by themselves.
    pub stop: S,
    /// Called about once a second while pairs run (progress).
    pub tick: T,
}

/// Run every pair of `d` once, each as soon as both of its resources are free. Ok(true) when a
/// stop came before every pair had run.
pub fn run<R, L, E, S, T>(mut d: Dispatcher<'_>, mut h: Hooks<L, E, S, T>) -> Result<bool, String>
where
    R: Send,
    L: Fn(At) -> Option<R> + Sync,
    E: FnMut(At, R) -> Result<(), String>,
    S: Fn() -> bool,
    T: FnMut(),
{
    let (tx, rx) = mpsc::channel::<(At, f64, Option<R>)>();
    let mut err = None;
    let mut stopped = false;
    let launch = &h.launch;
    std::thread::scope(|s| {
        loop {
            if !stopped && (h.stop)() {
                stopped = !d.done();
                d.drop_pending();
            }
            for at in d.startable() {
                let tx = tx.clone();
                s.spawn(move || {
                    let t = Instant::now();
                    let r = launch(at);
                    let _ = tx.send((at, t.elapsed().as_secs_f64(), r));
                });
            }
            if d.done() {
                break;
            }
            match rx.recv_timeout(Duration::from_secs(1)) {
                Ok((at, secs, r)) => {
                    d.finished(at, secs);
                    match r {
                        Some(rec) => {
                            if let Err(e) = (h.each)(at, rec) {
                                err.get_or_insert(e);
                                d.drop_pending();
                            }
                        }
                        // Ended by a stop signal: not recorded, so --resume runs it again.
                        None => {
                            stopped = true;
                            d.drop_pending();
                        }
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => (h.tick)(),
                // Never: this function holds a sender.
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
    });
    err.map_or(Ok(stopped), Err)
}

/// The wall time of `d`'s pairs with pair `at` taking `secs(at)`, on a simulated clock (the
/// tests); `started` sees each batch of pairs as it starts.
pub fn simulate(
    mut d: Dispatcher<'_>,
    secs: impl Fn(At) -> f64,
    mut started: impl FnMut(&[At]),
) -> f64 {
    // (end time, pair), the running ones.
    let mut running: Vec<(f64, At)> = Vec::new();
    let mut now = 0.0_f64;
    loop {
        let batch = d.startable();
        started(&batch);
        running.extend(batch.into_iter().map(|at| (now + secs(at), at)));
        let Some(k) = (0..running.len()).min_by(|&x, &y| running[x].0.total_cmp(&running[y].0))
        else {
            break;
        };
        now = running[k].0;
        // Pairs that end at the same moment free their nodes together.
        while let Some(k) = running.iter().position(|&(end, _)| end <= now) {
            let (_, at) = running.swap_remove(k);
            d.finished(at, secs(at));
        }
    }
    now
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::{circle_rounds, rounds as schedule_rounds};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    /// Pair numbers in round order (one rail): `at` → index.
    fn numbering(rounds: &[Vec<Pair>]) -> impl Fn(At) -> usize + '_ {
        let mut off = vec![0];
        for r in rounds {
            off.push(off.last().copied().unwrap_or(0) + r.len());
        }
        move |at: At| off[at.round] + at.slot
    }

    fn all(rounds: &[Vec<Pair>], n: usize, max: usize) -> Dispatcher<'_> {
        Dispatcher::new(rounds, n, 1, max, |_, _| true).expect("dispatcher")
    }

    /// Σ over rounds of the slowest pair: what the rounds with a barrier take at best.
    fn ideal(rounds: &[Vec<Pair>], secs: &[f64]) -> f64 {
        let mut i = 0;
        let mut sum = 0.0;
        for r in rounds {
            sum += secs[i..i + r.len()].iter().fold(0.0_f64, |m, &s| m.max(s));
            i += r.len();
        }
        sum
    }

    fn wall(rounds: &[Vec<Pair>], n: usize, max: usize, secs: &[f64]) -> f64 {
        let ix = numbering(rounds);
        simulate(all(rounds, n, max), |at| secs[ix(at)], |_| {})
    }

    #[test]
    fn one_slow_node_at_32_nodes_stays_within_1_2_of_the_ideal() {
        let rounds = circle_rounds(32);
        // Node 5 takes 3 s per pair, the others 1 s (with a little spread).
        let secs: Vec<f64> = rounds
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, p)| {
                if p.a == 5 || p.b == 5 {
                    3.0
                } else {
                    1.0 + (i % 7) as f64 * 0.05
                }
            })
            .collect();
        let wall = wall(&rounds, 32, usize::MAX, &secs);
        let best = ideal(&rounds, &secs);
        eprintln!(
            "32 nodes, one slow: wall {wall:.1} s, ideal {best:.1} s, {:.3}x",
            wall / best
        );
        assert!(
            wall <= 1.2 * best,
            "wall {wall:.1} s against the ideal {best:.1} s"
        );
        // The slow node's own pairs one after another are a floor nobody can beat.
        assert!(wall >= 31.0 * 3.0 - 1e-9, "{wall}");
    }

    #[test]
    fn uneven_times_beat_the_rounds() {
        for n in [4, 7, 32, 64] {
            let rounds = circle_rounds(n);
            let pairs: usize = rounds.iter().map(Vec::len).sum();
            // Deterministic spread of 0.5..2.5 s.
            let secs: Vec<f64> = (0..pairs)
                .map(|i| 0.5 + ((i * 7919) % 101) as f64 / 50.0)
                .collect();
            let wall = wall(&rounds, n, usize::MAX, &secs);
            let best = ideal(&rounds, &secs);
            eprintln!("{n} nodes, uneven: wall {wall:.1} s, ideal {best:.1} s");
            assert!(wall <= 1.2 * best, "n={n}: {wall} against {best}");
        }
    }

    /// Pairs ending together free their nodes together, and round order then rebuilds the
    /// rounds' perfect matchings.
    #[test]
    fn equal_times_take_one_pair_time_a_round_at_256_nodes() {
        let rounds = circle_rounds(256);
        let secs = vec![1.0; rounds.iter().map(Vec::len).sum()];
        assert_eq!(wall(&rounds, 256, usize::MAX, &secs), 255.0);
    }

    #[test]
    fn serial_runs_one_at_a_time() {
        let rounds = circle_rounds(6);
        let secs = vec![1.0; 15];
        assert_eq!(wall(&rounds, 6, 1, &secs), 15.0);
    }

    #[test]
    fn rails_run_side_by_side_and_skipped_pairs_never_start() {
        // Two rails of 8 nodes; rail 1 lacks node 2's pairs (as when node 2 has no such rail).
        let rounds = circle_rounds(8);
        let d = Dispatcher::new(&rounds, 8, 2, usize::MAX, |at, p| {
            at.place == 0 || (p.a != 2 && p.b != 2)
        })
        .expect("dispatcher");
        let mut seen = Vec::new();
        let wall = simulate(d, |_| 1.0, |b| seen.extend_from_slice(b));
        // The rails do not wait on each other: the wall is the longer rail's alone.
        let lacking = |_: At, p: Pair| p.a != 2 && p.b != 2;
        let alone = simulate(
            Dispatcher::new(&rounds, 8, 1, usize::MAX, lacking).expect("dispatcher"),
            |_| 1.0,
            |_| {},
        );
        assert_eq!(wall, alone.max(7.0));
        assert_eq!(seen.len(), 28 + 21);
        for at in &seen {
            let p = rounds[at.round][at.slot];
            assert!(at.place == 0 || (p.a != 2 && p.b != 2), "{at:?}");
        }
        let mut uniq = seen.clone();
        uniq.sort_by_key(|a| (a.place, a.round, a.slot));
        uniq.dedup();
        assert_eq!(uniq.len(), seen.len(), "a pair started twice");
    }

    #[test]
    fn rounds_that_are_not_matchings_are_refused() {
        let twice = vec![vec![Pair { a: 0, b: 1 }, Pair { a: 1, b: 2 }]];
        let e = Dispatcher::new(&twice, 3, 1, 1, |_, _| true)
            .err()
            .expect("refused");
        assert_eq!(e, "round 0: node 1 is in two pairs");
        let out = vec![vec![Pair { a: 0, b: 3 }]];
        assert!(Dispatcher::new(&out, 3, 1, 1, |_, _| true).is_err());
        let same = vec![vec![Pair { a: 1, b: 1 }]];
        assert!(Dispatcher::new(&same, 3, 1, 1, |_, _| true).is_err());
    }

    #[test]
    fn a_pair_not_running_is_not_finished() {
        let rounds = circle_rounds(4);
        let mut d = all(&rounds, 4, usize::MAX);
        let first = d.startable();
        assert_eq!(first.len(), 2);
        // Not started, out of range, and a finish twice: no effect.
        d.finished(
            At {
                place: 0,
                round: 1,
                slot: 0,
            },
            1.0,
        );
        d.finished(
            At {
                place: 3,
                round: 0,
                slot: 0,
            },
            1.0,
        );
        d.finished(
            At {
                place: 0,
                round: 9,
                slot: 0,
            },
            1.0,
        );
        assert_eq!(d.in_flight(), 2);
        d.finished(first[0], 1.0);
        d.finished(first[0], 1.0);
        assert_eq!(d.in_flight(), 1);
    }

    #[test]
    fn a_fake_launcher_sees_every_pair_once_and_a_node_in_one_pair_at_a_time() {
        let n = 32;
        let rounds = circle_rounds(n);
        let ix = numbering(&rounds);
        let count: usize = rounds.iter().map(Vec::len).sum();
        let on_node: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
        let ran: Vec<AtomicUsize> = (0..count).map(|_| AtomicUsize::new(0)).collect();
        let clash = AtomicUsize::new(0);
        let recorded = Mutex::new(Vec::new());
        let stopped = run(
            all(&rounds, n, usize::MAX),
            Hooks {
                launch: |at: At| {
                    let p = rounds[at.round][at.slot];
                    for x in [p.a, p.b] {
                        if on_node[x].fetch_add(1, Ordering::SeqCst) != 0 {
                            clash.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    ran[ix(at)].fetch_add(1, Ordering::SeqCst);
                    // One slow node; the others quick.
                    std::thread::sleep(Duration::from_millis(if p.a == 3 || p.b == 3 {
                        6
                    } else {
                        1
                    }));
                    for x in [p.a, p.b] {
                        on_node[x].fetch_sub(1, Ordering::SeqCst);
                    }
                    Some(at)
                },
                each: |at, r| {
                    assert_eq!(at, r);
                    recorded.lock().map_err(|e| e.to_string())?.push(ix(at));
                    Ok(())
                },
                stop: || false,
                tick: || {},
            },
        )
        .expect("run");
        assert!(!stopped);
        assert_eq!(
            clash.load(Ordering::SeqCst),
            0,
            "a node was in two pairs at once"
        );
        assert!(
            ran.iter().all(|c| c.load(Ordering::SeqCst) == 1),
            "a pair ran twice or never"
        );
        let mut rec = recorded.into_inner().expect("lock");
        rec.sort_unstable();
        assert_eq!(rec, (0..count).collect::<Vec<_>>());
    }

    #[test]
    fn a_stop_starts_nothing_new_and_a_record_error_ends_the_run() {
        let rounds = circle_rounds(8);
        let started = AtomicUsize::new(0);
        let stop_after = 5;
        let hooks = Hooks {
            launch: |_| {
                started.fetch_add(1, Ordering::SeqCst);
                Some(())
            },
            each: |_, ()| Ok(()),
            stop: || started.load(Ordering::SeqCst) >= stop_after,
            tick: || {},
        };
        let stopped = run(all(&rounds, 8, usize::MAX), hooks).expect("run");
        assert!(stopped);
        let n = started.load(Ordering::SeqCst);
        assert!(n >= stop_after && n < 28, "{n}");
        let hooks = Hooks {
            launch: |_| Some(()),
            each: |_, ()| Err("disk full".to_string()),
            stop: || false,
            tick: || {},
        };
        assert_eq!(
            run(all(&rounds, 8, usize::MAX), hooks),
            Err("disk full".to_string())
        );
    }

    #[test]
    fn a_pair_ended_by_a_signal_counts_as_a_stop() {
        let rounds = circle_rounds(4);
        let hooks = Hooks {
            launch: |at: At| (at.round != 0 || at.slot != 0).then_some(()),
            each: |_, ()| Ok(()),
            stop: || false,
            tick: || {},
        };
        assert_eq!(run(all(&rounds, 4, usize::MAX), hooks), Ok(true));
    }

    /// The dispatcher before issue #35, word for word in its choices: a list of pairs, and per
    /// resource a list of its pending pairs. The reference the bitsets are checked against.
    mod listed {
        pub struct Dispatcher {
            pub pairs: Vec<[usize; 2]>,
            pub pending: Vec<Vec<usize>>,
            busy: Vec<bool>,
            pub started: Vec<bool>,
            seen: Vec<(u32, f64)>,
            in_flight: usize,
            max_in_flight: usize,
            freed: Vec<usize>,
            rescan: bool,
        }

        impl Dispatcher {
            pub fn new(
                pairs: Vec<[usize; 2]>,
                resources: usize,
                max_in_flight: usize,
            ) -> Dispatcher {
                let mut pending = vec![Vec::new(); resources];
                for (i, p) in pairs.iter().enumerate() {
                    pending[p[0]].push(i);
                    pending[p[1]].push(i);
                }
                Dispatcher {
                    started: vec![false; pairs.len()],
                    pairs,
                    pending,
                    busy: vec![false; resources],
                    seen: vec![(0, 0.0); resources],
                    in_flight: 0,
                    max_in_flight: max_in_flight.max(1),
                    freed: Vec::new(),
                    rescan: true,
                }
            }

            fn work_left(&self, r: usize) -> f64 {
                let (n, sum) = self.seen[r];
                let mean = if n == 0 { 1.0 } else { sum / f64::from(n) };
                self.pending[r].len() as f64 * mean
            }

            fn best_for(&self, r: usize) -> Option<usize> {
                if self.busy[r] {
                    return None;
                }
                let mut first: Option<(f64, usize)> = None;
                let mut most: Option<(f64, usize)> = None;
                for &i in &self.pending[r] {
                    let [a, b] = self.pairs[i];
                    let other = if a == r { b } else { a };
                    if self.busy[other] {
                        continue;
                    }
                    let w = self.work_left(other);
                    first.get_or_insert((w, i));
                    if most.is_none_or(|(mw, _)| w > mw) {
                        most = Some((w, i));
                    }
                }
                match (first, most) {
                    (Some((fw, f)), Some((mw, m))) => Some(if mw > 1.5 * fw { m } else { f }),
                    _ => None,
                }
            }

            pub fn startable(&mut self) -> Vec<usize> {
                let mut out = Vec::new();
                let look: Vec<usize> = if std::mem::take(&mut self.rescan) {
                    self.freed.clear();
                    (0..self.pending.len()).collect()
                } else {
                    std::mem::take(&mut self.freed)
                };
                for r in look {
                    if self.in_flight >= self.max_in_flight {
                        self.rescan = true;
                        break;
                    }
                    if let Some(i) = self.best_for(r) {
                        self.started[i] = true;
                        self.in_flight += 1;
                        for x in self.pairs[i] {
                            self.busy[x] = true;
                            self.pending[x].retain(|&j| j != i);
                        }
                        out.push(i);
                    }
                }
                out
            }

            pub fn finished(&mut self, i: usize, secs: f64) {
                if !self.started[i] {
                    return;
                }
                self.in_flight -= 1;
                for r in self.pairs[i] {
                    self.busy[r] = false;
                    self.freed.push(r);
                    self.seen[r].0 += 1;
                    self.seen[r].1 += secs.max(0.0);
                }
            }
        }
    }

    /// The old way's pairs of `rounds` on `places` rails, as run_rounds listed them (round, then
    /// place, then slot), with what each is.
    fn listed_pairs(
        rounds: &[Vec<Pair>],
        n: usize,
        places: usize,
        wanted: &impl Fn(At) -> bool,
    ) -> (Vec<[usize; 2]>, Vec<At>) {
        let (mut holds, mut ats) = (Vec::new(), Vec::new());
        for (round, ps) in rounds.iter().enumerate() {
            for place in 0..places {
                for (slot, p) in ps.iter().enumerate() {
                    let at = At { place, round, slot };
                    if wanted(at) {
                        holds.push([place * n + p.a, place * n + p.b]);
                        ats.push(at);
                    }
                }
            }
        }
        (holds, ats)
    }

    /// The old dispatcher's start order on a simulated clock (the loop of [`simulate`]).
    fn listed_order(
        holds: Vec<[usize; 2]>,
        resources: usize,
        max: usize,
        ats: &[At],
        secs: &impl Fn(At) -> f64,
    ) -> Vec<Vec<At>> {
        let mut d = listed::Dispatcher::new(holds, resources, max);
        let mut running: Vec<(f64, usize)> = Vec::new();
        let mut order = Vec::new();
        let mut now = 0.0_f64;
        loop {
            let batch = d.startable();
            order.push(batch.iter().map(|&i| ats[i]).collect());
            running.extend(batch.into_iter().map(|i| (now + secs(ats[i]), i)));
            let Some(k) = (0..running.len()).min_by(|&x, &y| running[x].0.total_cmp(&running[y].0))
            else {
                break;
            };
            now = running[k].0;
            while let Some(k) = running.iter().position(|&(end, _)| end <= now) {
                let (_, i) = running.swap_remove(k);
                d.finished(i, secs(ats[i]));
            }
        }
        order
    }

    /// A small deterministic generator (xorshift64*), for the random schedules.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    #[test]
    fn the_bitsets_start_the_pairs_in_the_order_the_lists_did() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for case in 0..60 {
            let n = 2 + rng.below(40) as usize;
            let places = 1 + rng.below(3) as usize;
            let (serial, both) = (rng.below(6) == 0, rng.below(3) == 0);
            // Nodes renamed at random, so the circle's order is not the nodes' order.
            let mut name: Vec<usize> = (0..n).collect();
            for i in (1..n).rev() {
                name.swap(i, rng.below(i as u64 + 1) as usize);
            }
            let rounds: Vec<Vec<Pair>> = schedule_rounds(n, serial, both)
                .into_iter()
                .map(|r| {
                    r.into_iter()
                        .map(|p| Pair {
                            a: name[p.a],
                            b: name[p.b],
                        })
                        .collect()
                })
                .collect();
            // A fifth of the pairs recorded already or without the rail; times 0.2..3 s with
            // ties (a tenth of a second steps), a slow node now and then.
            let salt = rng.next();
            let slow = if rng.below(2) == 0 {
                Some(rng.below(n as u64) as usize)
            } else {
                None
            };
            let hash = |at: At| {
                (at.place as u64 * 1_000_003 + at.round as u64 * 1009 + at.slot as u64)
                    .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                    ^ salt
            };
            let wanted = |at: At| hash(at) % 5 != 0;
            let secs = |at: At| {
                let p = rounds[at.round][at.slot];
                let x = if slow == Some(p.a) || slow == Some(p.b) {
                    3.0
                } else {
                    1.0
                };
                x * (0.2 + ((hash(at) >> 8) % 28) as f64 / 10.0)
            };
            let max = [usize::MAX, 1, 3, n / 3 + 1][rng.below(4) as usize];
            let (holds, ats) = listed_pairs(&rounds, n, places, &wanted);
            let old = listed_order(holds, n * places, max, &ats, &secs);
            let d =
                Dispatcher::new(&rounds, n, places, max, |at, _| wanted(at)).expect("dispatcher");
            let mut new: Vec<Vec<At>> = Vec::new();
            simulate(d, secs, |b| new.push(b.to_vec()));
            assert_eq!(
                new, old,
                "case {case}: n={n} places={places} serial={serial} both={both} max={max}"
            );
        }
    }

    /// The rounds worked out ([`Dispatcher::worked`]) start the same pairs at the same moments
    /// as their table, for even and odd n, serial, both directions, caps and skipped pairs.
    #[test]
    fn worked_rounds_dispatch_as_their_table() {
        for n in [2, 3, 4, 5, 8, 13, 32, 33] {
            for (serial, both) in [(false, false), (false, true), (true, false), (true, true)] {
                for max in [usize::MAX, 1, 3] {
                    let table = schedule_rounds(n, serial, both);
                    let worked = Rounds::new(n, serial, both);
                    let hash = |at: At| (at.place * 31 + at.round * 7 + at.slot * 3) % 11;
                    let secs = |at: At| 0.5 + hash(at) as f64 * 0.2;
                    let wanted = |at: At, _: Pair| hash(at) != 4;
                    let (mut a, mut b) = (Vec::new(), Vec::new());
                    let d = Dispatcher::new(&table, n, 2, max, wanted).expect("table");
                    let wall_table = simulate(d, secs, |s| a.push(s.to_vec()));
                    let d = Dispatcher::worked(worked, n, 2, max, wanted).expect("worked");
                    let wall_worked = simulate(d, secs, |s| b.push(s.to_vec()));
                    let case = format!("n={n} serial={serial} both={both} max={max}");
                    assert_eq!(a, b, "{case}");
                    assert_eq!(wall_table, wall_worked, "{case}");
                    assert!(!a.concat().is_empty() || n < 2, "{case}: nothing ran");
                }
            }
        }
        assert!(Dispatcher::worked(Rounds::new(5, false, false), 6, 1, 1, |_, _| true).is_err());
    }

    /// Issue #35's measure: the dispatcher's heap at 1,024 nodes and 8 rails run together, the
    /// list way (as run_rounds and the old dispatcher built it) against the bitsets.
    #[test]
    #[ignore = "a measure (about a minute in the debug profile): cargo test -p matrix --release dispatcher_heap -- --ignored --nocapture"]
    fn dispatcher_heap_at_1024_nodes_and_8_rails() {
        let (n, places) = (1024, 8);
        let rounds = circle_rounds(n);
        let d = Dispatcher::new(&rounds, n, places, usize::MAX, |_, _| true).expect("dispatcher");
        let pairs = d.left;
        let new = d.heap_bytes();
        let worked = Dispatcher::worked(Rounds::new(n, false, false), n, places, usize::MAX, |_, _| true)
            .expect("worked")
            .heap_bytes();
        // The old way: run_rounds' jobs (40 bytes) and holds, then the dispatcher's lists.
        let mut jobs: Vec<(usize, usize, usize, Pair)> = Vec::new();
        let mut holds: Vec<[usize; 2]> = Vec::new();
        for (r, ps) in rounds.iter().enumerate() {
            for j in 0..places {
                for (slot, p) in ps.iter().enumerate() {
                    jobs.push((j, r, slot, *p));
                    holds.push([j * n + p.a, j * n + p.b]);
                }
            }
        }
        let outer = jobs.capacity() * std::mem::size_of::<(usize, usize, usize, Pair)>();
        let old = listed::Dispatcher::new(holds, n * places, usize::MAX);
        let lists: usize = old.pending.iter().map(|p| p.capacity() * 8).sum::<usize>()
            + old.pending.capacity() * 24;
        let old_bytes = outer
            + old.pairs.capacity() * 16
            + lists
            + old.started.capacity()
            + n * places * (1 + 16);
        eprintln!(
            "{pairs} pairs: lists {old_bytes} B ({:.1} B a pair), bitsets {new} B ({:.2} B a pair), worked rounds {worked} B ({:.2} B a pair)",
            old_bytes as f64 / pairs as f64,
            new as f64 / pairs as f64,
            worked as f64 / pairs as f64
        );
        assert!(new * 20 < old_bytes, "{new} against {old_bytes}");
        assert!(worked < new, "{worked} against {new}");
    }
}
