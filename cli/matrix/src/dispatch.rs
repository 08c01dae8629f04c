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

use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Which pairs may start, as resources free up.
pub struct Dispatcher {
    /// The two resources each pair holds.
    pairs: Vec<[usize; 2]>,
    /// Per resource, its pairs not yet started, in priority (round) order.
    pending: Vec<Vec<usize>>,
    busy: Vec<bool>,
    started: Vec<bool>,
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

impl Dispatcher {
    /// `pairs` in priority order; every resource index below `resources`.
    pub fn new(pairs: Vec<[usize; 2]>, resources: usize, max_in_flight: usize) -> Dispatcher {
        let mut pending = vec![Vec::new(); resources];
        for (i, p) in pairs.iter().enumerate() {
            pending[p[0]].push(i);
            pending[p[1]].push(i);
        }
        let left = pairs.len();
        Dispatcher {
            started: vec![false; pairs.len()],
            pairs,
            pending,
            busy: vec![false; resources],
            seen: vec![(0, 0.0); resources],
            in_flight: 0,
            max_in_flight: max_in_flight.max(1),
            left,
            freed: Vec::new(),
            rescan: true,
        }
    }

    /// The work a resource has left: its pending pairs times its mean pair time so far (1 s
    /// before it has finished one).
    fn work_left(&self, r: usize) -> f64 {
        let (n, sum) = self.seen[r];
        let mean = if n == 0 { 1.0 } else { sum / f64::from(n) };
        self.pending[r].len() as f64 * mean
    }

    fn take(&mut self, i: usize) {
        self.started[i] = true;
        self.in_flight += 1;
        self.left -= 1;
        for r in self.pairs[i] {
            self.busy[r] = true;
            self.pending[r].retain(|&j| j != i);
        }
    }

    /// The pair resource `r` should start now, if any (see the module comment).
    fn best_for(&self, r: usize) -> Option<usize> {
        if self.busy[r] {
            return None;
        }
        // (work left of the other node, pair): the first startable in round order, and the
        // one whose other node has the most work left.
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
        // Round order keeps the rounds' perfect matchings when times are even; a node with
        // clearly more work left (half as much again: a slow node) goes first.
        match (first, most) {
            (Some((fw, f)), Some((mw, m))) => Some(if mw > 1.5 * fw { m } else { f }),
            _ => None,
        }
    }

    /// The pairs to start now; they are marked started and their resources busy.
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
                self.take(i);
                out.push(i);
            }
        }
        out
    }

    /// Pair `i` ended after `secs`: its resources are free again.
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

    /// Start nothing more (a stop signal): the pending pairs are dropped.
    pub fn drop_pending(&mut self) {
        for p in &mut self.pending {
            p.clear();
        }
        self.left = 0;
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// No pair pending and none running.
    pub fn done(&self) -> bool {
        self.left == 0 && self.in_flight == 0
    }
}

/// What [`run`] is given: each pair's resources, and how to run, record and stop.
pub struct Hooks<L, E, S, T> {
    /// Runs pair i (on its own thread); None when a stop signal ended it unrecorded.
    pub launch: L,
    /// Pair i ended with this result: record it. An Err stops the run (nothing new starts).
    pub each: E,
    /// True once the run is to stop: nothing new starts, the running pairs end by themselves.
    pub stop: S,
    /// Called about once a second while pairs run (progress).
    pub tick: T,
}

/// Run every pair once, each as soon as both of its resources are free. Ok(true) when a stop
/// came before every pair had run.
pub fn run<R, L, E, S, T>(
    pairs: Vec<[usize; 2]>,
    resources: usize,
    max_in_flight: usize,
    mut h: Hooks<L, E, S, T>,
) -> Result<bool, String>
where
    R: Send,
    L: Fn(usize) -> Option<R> + Sync,
    E: FnMut(usize, R) -> Result<(), String>,
    S: Fn() -> bool,
    T: FnMut(),
{
    let mut d = Dispatcher::new(pairs, resources, max_in_flight);
    let (tx, rx) = mpsc::channel::<(usize, f64, Option<R>)>();
    let mut err = None;
    let mut stopped = false;
    let launch = &h.launch;
    std::thread::scope(|s| {
        loop {
            if !stopped && (h.stop)() {
                stopped = !d.done();
                d.drop_pending();
            }
            for i in d.startable() {
                let tx = tx.clone();
                s.spawn(move || {
                    let t = Instant::now();
                    let r = launch(i);
                    let _ = tx.send((i, t.elapsed().as_secs_f64(), r));
                });
            }
            if d.done() {
                break;
            }
            match rx.recv_timeout(Duration::from_secs(1)) {
                Ok((i, secs, r)) => {
                    d.finished(i, secs);
                    match r {
                        Some(rec) => {
                            if let Err(e) = (h.each)(i, rec) {
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

/// The wall time of the pairs under the dispatcher with pair i taking `secs[i]`, on a
/// simulated clock (the plan's estimate, and the tests).
pub fn simulate(pairs: &[[usize; 2]], resources: usize, max_in_flight: usize, secs: &[f64]) -> f64 {
    let mut d = Dispatcher::new(pairs.to_vec(), resources, max_in_flight);
    // (end time, pair), the running ones.
    let mut running: Vec<(f64, usize)> = Vec::new();
    let mut now = 0.0_f64;
    loop {
        for i in d.startable() {
            running.push((now + secs[i], i));
        }
        let Some(k) = (0..running.len()).min_by(|&x, &y| running[x].0.total_cmp(&running[y].0))
        else {
            break;
        };
        now = running[k].0;
        // Pairs that end at the same moment free their nodes together.
        while let Some(k) = running.iter().position(|&(end, _)| end <= now) {
            let (_, i) = running.swap_remove(k);
            d.finished(i, secs[i]);
        }
    }
    now
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::circle_rounds;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    fn pairs_of(n: usize) -> (Vec<[usize; 2]>, Vec<usize>) {
        let mut pairs = Vec::new();
        let mut round = Vec::new();
        for (r, ps) in circle_rounds(n).iter().enumerate() {
            for p in ps {
                pairs.push([p.a, p.b]);
                round.push(r);
            }
        }
        (pairs, round)
    }

    /// Σ over rounds of the slowest pair: what the rounds with a barrier take at best.
    fn ideal(round: &[usize], secs: &[f64]) -> f64 {
        let mut max = vec![0.0_f64; round.iter().max().map_or(0, |m| m + 1)];
        for (i, &r) in round.iter().enumerate() {
            max[r] = max[r].max(secs[i]);
        }
        max.iter().sum()
    }

    #[test]
    fn one_slow_node_at_32_nodes_stays_within_1_2_of_the_ideal() {
        let (pairs, round) = pairs_of(32);
        // Node 5 takes 3 s per pair, the others 1 s (with a little spread).
        let secs: Vec<f64> = pairs
            .iter()
            .enumerate()
            .map(|(i, p)| {
                if p.contains(&5) {
                    3.0
                } else {
                    1.0 + (i % 7) as f64 * 0.05
                }
            })
            .collect();
        let wall = simulate(&pairs, 32, usize::MAX, &secs);
        let best = ideal(&round, &secs);
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
            let (pairs, round) = pairs_of(n);
            // Deterministic spread of 0.5..2.5 s.
            let secs: Vec<f64> = (0..pairs.len())
                .map(|i| 0.5 + ((i * 7919) % 101) as f64 / 50.0)
                .collect();
            let wall = simulate(&pairs, n, usize::MAX, &secs);
            eprintln!(
                "{n} nodes, uneven: wall {wall:.1} s, ideal {:.1} s",
                ideal(&round, &secs)
            );
            assert!(
                wall <= 1.2 * ideal(&round, &secs),
                "n={n}: {wall} against {}",
                ideal(&round, &secs)
            );
        }
    }

    /// Pairs ending together free their nodes together, and round order then rebuilds the
    /// rounds' perfect matchings.
    #[test]
    fn equal_times_take_one_pair_time_a_round_at_256_nodes() {
        let (pairs, _) = pairs_of(256);
        let secs = vec![1.0; pairs.len()];
        assert_eq!(simulate(&pairs, 256, usize::MAX, &secs), 255.0);
    }

    #[test]
    fn serial_runs_one_at_a_time() {
        let (pairs, _) = pairs_of(6);
        let secs = vec![1.0; pairs.len()];
        assert_eq!(simulate(&pairs, 6, 1, &secs), 15.0);
    }

    #[test]
    fn a_fake_launcher_sees_every_pair_once_and_a_node_in_one_pair_at_a_time() {
        let n = 32;
        let (pairs, _) = pairs_of(n);
        let on_node: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
        let ran: Vec<AtomicUsize> = (0..pairs.len()).map(|_| AtomicUsize::new(0)).collect();
        let clash = AtomicUsize::new(0);
        let recorded = Mutex::new(Vec::new());
        let p2 = pairs.clone();
        let stopped = run(
            pairs.clone(),
            n,
            usize::MAX,
            Hooks {
                launch: |i: usize| {
                    for &x in &p2[i] {
                        if on_node[x].fetch_add(1, Ordering::SeqCst) != 0 {
                            clash.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    ran[i].fetch_add(1, Ordering::SeqCst);
                    // One slow node; the others quick.
                    std::thread::sleep(Duration::from_millis(if p2[i].contains(&3) {
                        6
                    } else {
                        1
                    }));
                    for &x in &p2[i] {
                        on_node[x].fetch_sub(1, Ordering::SeqCst);
                    }
                    Some(i)
                },
                each: |i, r| {
                    assert_eq!(i, r);
                    recorded.lock().map_err(|e| e.to_string())?.push(i);
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
        assert_eq!(rec, (0..pairs.len()).collect::<Vec<_>>());
    }

    #[test]
    fn a_stop_starts_nothing_new_and_a_record_error_ends_the_run() {
        let (pairs, _) = pairs_of(8);
        let started = AtomicUsize::new(0);
        let stop_after = 5;
        let stopped = run(
            pairs.clone(),
            8,
            usize::MAX,
            Hooks {
                launch: |_| {
                    started.fetch_add(1, Ordering::SeqCst);
                    Some(())
                },
                each: |_, ()| Ok(()),
                stop: || started.load(Ordering::SeqCst) >= stop_after,
                tick: || {},
            },
        )
        .expect("run");
        assert!(stopped);
        let n = started.load(Ordering::SeqCst);
        assert!(n >= stop_after && n < pairs.len(), "{n}");
        let e = run(
            pairs,
            8,
            usize::MAX,
            Hooks {
                launch: |_| Some(()),
                each: |_, ()| Err("disk full".to_string()),
                stop: || false,
                tick: || {},
            },
        );
        assert_eq!(e, Err("disk full".to_string()));
    }

    #[test]
    fn a_pair_ended_by_a_signal_counts_as_a_stop() {
        let (pairs, _) = pairs_of(4);
        let r = run(
            pairs,
            4,
            usize::MAX,
            Hooks {
                launch: |i| (i != 0).then_some(()),
                each: |_, ()| Ok(()),
                stop: || false,
                tick: || {},
            },
        );
        assert_eq!(r, Ok(true));
    }
}
