//! The re-run rule: a pair is reported LOW only after it was run a second time.
//!
//! A LOW verdict compares a pair with the median of its test and rail, and a re-run changes
//! that median: when the first pass's outlier comes back normal, the median can move enough
//! that pairs judged OK before now cross the threshold (issue #39: one re-run moved a
//! latency median from 703 to 490 µs, and two pairs never re-run were then reported LOW).
//! So judging and re-running alternate until a judgement finds no suspect that has not run
//! twice, for at most [`MAX_PASSES`] re-run passes; [`final_verdict`] then keeps the rule even
//! when the passes ran out or the run was stopped. Nothing here starts a process: the caller
//! hands in the re-run as a function, so the sequence is tested without nodes.

use super::judge::{judge, Rules};
use super::results::{Record, Status};
use super::view::{Verdicts, View};

/// At most this many judge/re-run passes per test and rail. The first re-runs the outliers
/// of the first median (and every FAIL or TIMEOUT, which no median changes); the second the
/// pairs that those re-runs moved across the threshold, as in issue #39; the third is the
/// margin for a second, smaller shift (the pairs it catches were nearer the median, so their
/// re-runs move it less). A median still moving after that means the pairs spread as widely
/// as the `--rel`/`--rel-lat` margin, which more re-runs would not settle: the pairs left are
/// named instead of being reported LOW. Each pass re-runs only pairs not re-run before, so the
/// cost is bounded by the pair count as well.
pub const MAX_PASSES: usize = 3;

/// A pair the judgement holds against: LOW, FAIL or TIMEOUT.
pub fn suspect(s: Status) -> bool {
    matches!(s, Status::Low | Status::Fail | Status::Timeout)
}

/// What [`settle`] did.
#[derive(Debug, Default, PartialEq)]
pub struct Settled {
    /// Re-run passes made.
    pub passes: usize,
    /// Indices into the records of the pairs replaced by their re-run, in re-run order.
    pub rerun: Vec<usize>,
}

/// One test and rail's records as [`settle`] works on them: records, or the run's cells.
pub trait Group {
    /// The records judged (the verdicts not written: the group stays as it is) that the
    /// judgement holds against and that have not run twice, each with its index, in the
    /// group's order.
    fn suspects(&mut self, rules: &Rules) -> Vec<(usize, Record)>;
    /// Has record `i` been replaced by a re-run?
    fn was_retried(&self, i: usize) -> bool;
    /// Record `i` is replaced by its re-run.
    fn replace(&mut self, i: usize, rec: Record);
    /// A fresh record from the re-run went into results.jsonl (each does, in the order
    /// returned): `replaced` says which record it became, None when it was not kept.
    fn appended(&mut self, _replaced: Option<usize>) {}
}

impl Group for [Record] {
    fn suspects(&mut self, rules: &Rules) -> Vec<(usize, Record)> {
        let mut judged = self.to_vec();
        judge(&mut judged[..], rules);
        judged.into_iter().enumerate().filter(|(_, r)| suspect(r.status) && r.retried.is_none()).collect()
    }
    fn was_retried(&self, i: usize) -> bool {
        self[i].retried.is_some()
    }
    fn replace(&mut self, i: usize, rec: Record) {
        self[i] = rec;
    }
}

impl Group for Vec<Record> {
    fn suspects(&mut self, rules: &Rules) -> Vec<(usize, Record)> {
        self[..].suspects(rules)
    }
    fn was_retried(&self, i: usize) -> bool {
        self[..].was_retried(i)
    }
    fn replace(&mut self, i: usize, rec: Record) {
        self[..].replace(i, rec);
    }
}

/// Judge `records` (one test and rail), re-run the suspects that have not run twice through
/// `rerun`, and repeat while new suspects appear, at most `max_passes` times. `rerun` gets the
/// suspects as judged (status and reason say why) and returns the fresh records it has, in any
/// order (fewer when it was stopped); `key` says which fresh record is which pair. A fresh
/// record replaces its pair in place, with the first run's `STATUS: reason` in `retried`. The
/// loop also ends when a pass re-runs nothing, so a stopped caller ends it.
pub fn settle<G: Group + ?Sized, K: PartialEq, E>(
    records: &mut G,
    rules: &Rules,
    max_passes: usize,
    key: impl Fn(&Record) -> K,
    mut rerun: impl FnMut(&[Record]) -> Result<Vec<Record>, E>,
) -> Result<Settled, E> {
    let mut done = Settled::default();
    while done.passes < max_passes {
        let (at, suspects): (Vec<usize>, Vec<Record>) = records.suspects(rules).into_iter().unzip();
        if suspects.is_empty() {
            break;
        }
        done.passes += 1;
        let mut replaced = 0;
        for mut fresh in rerun(&suspects)? {
            let k = key(&fresh);
            let asked = suspects.iter().position(|s| key(s) == k).filter(|&j| !records.was_retried(at[j]));
            let Some(j) = asked else {
                records.appended(None);
                continue;
            };
            let (first, i) = (&suspects[j], at[j]);
            fresh.retried = Some(format!("{}: {}", first.status.name(), first.reason));
            records.replace(i, fresh);
            records.appended(Some(i));
            done.rerun.push(i);
            replaced += 1;
        }
        if replaced == 0 {
            break;
        }
    }
    Ok(done)
}

/// The verdicts reported. `judge`, and with re-runs on (`--no-retry` not given), a pair that
/// the judgement finds LOW but that never ran twice (the passes ran out, or the run was
/// stopped before its re-run) is reported OK instead; one line each says so. FAIL and TIMEOUT
/// are what the tools said and stay.
pub fn final_verdict<R: Verdicts + ?Sized>(records: &mut R, rules: &Rules, reruns: bool) -> Vec<String> {
    judge(records, rules);
    let mut lines = Vec::new();
    if !reruns {
        return lines;
    }
    // Only pairs are re-run: a fabric pattern's flow alone would not be under its load.
    for i in 0..records.count() {
        let r = records.at(i);
        if r.status() != Status::Low || r.retried().is_some() || r.pattern() != crate::results::PAIRS {
            continue;
        }
        lines.push(format!(
            "not re-run, so not reported LOW: {} - {} ({}, {}): {} (re-run passes used up or the run stopped; run the matrix again)",
            r.server().node,
            r.client().node,
            r.test(),
            r.rail(),
            r.reason()
        ));
        let med = r.median();
        records.set_verdict(i, Status::Ok, Some(String::new()), med);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::diagnose;
    use crate::results::sample;

    const RULES: Rules = Rules { min_bw: None, max_lat: None, rel: 0.9, rel_lat: 1.5, port_rate: None };

    fn key(r: &Record) -> (String, String) {
        let (a, b) = (r.server.node.clone(), r.client.node.clone());
        if a <= b {
            (a, b)
        } else {
            (b, a)
        }
    }

    /// Issue #39's send_lat pass on four nodes, in µs: the sorted values are
    /// 410 426 554 852 992 1198, so the median is (554 + 852) / 2 = 703 and only node1-node2
    /// is above 1.5 x 703 = 1054.5. Its re-run at 300 makes them 300 410 426 554 852 992: the
    /// median is (426 + 554) / 2 = 490, and node4-node2 and node4-node3 are above 735.
    fn issue39() -> Vec<Record> {
        [
            ("node1", "node2", 1198.0),
            ("node4", "node2", 992.0),
            ("node4", "node3", 852.0),
            ("node1", "node3", 554.0),
            ("node1", "node4", 426.0),
            ("node2", "node3", 410.0),
        ]
        .into_iter()
        .map(|(a, b, v)| {
            let mut r = sample("send_lat", "rxe0", a, b, Status::Ok, Some(v));
            r.unit = "usec".into();
            r
        })
        .collect()
    }

    fn fresh(a: &str, b: &str, v: f64) -> Record {
        let mut r = sample("send_lat", "rxe0", a, b, Status::Ok, Some(v));
        r.unit = "usec".into();
        r
    }

    /// Runs `settle` with a fake re-run giving each pair the next of its values, and records
    /// the pairs each pass asked for (with the median they were judged against).
    fn run(rs: &mut [Record], max: usize, values: &[(&str, &str, &[f64])]) -> (Settled, Vec<Vec<String>>) {
        let mut asked = Vec::new();
        let mut used: Vec<usize> = vec![0; values.len()];
        let s = settle(rs, &RULES, max, key, |sus: &[Record]| -> Result<Vec<Record>, ()> {
            asked.push(sus.iter().map(|r| format!("{}-{} vs {:.0}", r.server.node, r.client.node, r.median.unwrap_or(0.0))).collect());
            Ok(sus
                .iter()
                .filter_map(|r| {
                    let j = values.iter().position(|(a, b, _)| key(&fresh(a, b, 0.0)) == key(r))?;
                    let v = *values[j].2.get(used[j])?;
                    used[j] += 1;
                    Some(fresh(&r.server.node, &r.client.node, v))
                })
                .collect())
        })
        .expect("no error");
        (s, asked)
    }

    #[test]
    fn issue39_the_pairs_the_moved_median_flags_are_re_run_before_any_verdict() {
        // The second pass's re-runs come back normal: nothing is LOW, no node is named.
        let mut rs = issue39();
        let (s, asked) = run(&mut rs, MAX_PASSES, &[("node1", "node2", &[300.0]), ("node4", "node2", &[480.0]), ("node4", "node3", &[470.0])]);
        assert_eq!(asked, [vec!["node1-node2 vs 703"], vec!["node4-node2 vs 490", "node4-node3 vs 490"]]);
        assert_eq!(s, Settled { passes: 2, rerun: vec![0, 1, 2] });
        let lines = final_verdict(&mut rs, &RULES, true);
        assert!(lines.is_empty(), "{lines:?}");
        assert!(rs.iter().all(|r| r.status == Status::Ok), "{rs:?}");
        assert!(rs[0].retried.as_deref().is_some_and(|w| w.starts_with("LOW: 1198.00 usec above 1.5 x the median 703.00")));
        assert!(rs[1].retried.as_deref().is_some_and(|w| w.starts_with("LOW: 992.00 usec above 1.5 x the median 490.00")));
        assert!(diagnose(&rs).is_empty());
    }

    #[test]
    fn issue39_a_node_that_stays_slow_is_low_after_its_re_runs_and_named() {
        let mut rs = issue39();
        let (s, asked) = run(&mut rs, MAX_PASSES, &[("node1", "node2", &[300.0]), ("node4", "node2", &[990.0]), ("node4", "node3", &[850.0])]);
        assert_eq!(asked.len(), 2, "{asked:?}");
        assert_eq!(s.passes, 2);
        assert!(final_verdict(&mut rs, &RULES, true).is_empty());
        let low: Vec<usize> = (0..rs.len()).filter(|&i| rs[i].status == Status::Low).collect();
        assert_eq!(low, [1, 2]);
        assert!(low.iter().all(|&i| rs[i].retried.is_some()), "no pair LOW without its re-run");
        assert_eq!(diagnose(&rs), ["2 of 2 bad pairs of send_lat on rail rxe0 include node4"]);
    }

    #[test]
    fn when_the_passes_run_out_the_pairs_left_are_named_not_low() {
        // One pass only (the behaviour before #39): node1-node2 is re-run, then node4's pairs
        // are suspects with no pass left. They are not reported LOW, and node4 is not named.
        let mut rs = issue39();
        let (s, asked) = run(&mut rs, 1, &[("node1", "node2", &[300.0])]);
        assert_eq!((s.passes, asked.len()), (1, 1));
        let lines = final_verdict(&mut rs, &RULES, true);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].starts_with("not re-run, so not reported LOW: node4 - node2 (send_lat, rxe0): 992.00 usec above 1.5 x the median 490.00"), "{}", lines[0]);
        assert!(rs.iter().all(|r| r.status == Status::Ok));
        assert!(diagnose(&rs).is_empty());
        // With --no-retry the first results are the verdict, as documented.
        let mut first = issue39();
        assert!(final_verdict(&mut first, &RULES, false).is_empty());
        assert_eq!(first[0].status, Status::Low);
    }

    #[test]
    fn a_stopped_re_run_ends_the_loop_and_failures_run_once_more() {
        let mut rs = issue39();
        for (r, v) in rs.iter_mut().zip([500.0, 510.0, 490.0, 505.0, 495.0, 0.0]) {
            r.value = Some(v);
        }
        rs[5].status = Status::Fail;
        rs[5].value = None;
        rs[5].reason = "client: Couldn't connect".into();
        // The re-run returns nothing (a signal stopped it): one pass, nothing replaced.
        let mut calls = 0;
        let s = settle(&mut rs, &RULES, MAX_PASSES, key, |_: &[Record]| -> Result<Vec<Record>, ()> {
            calls += 1;
            Ok(Vec::new())
        })
        .expect("ok");
        assert_eq!((calls, s.passes, s.rerun.len()), (1, 1, 0));
        // An error from the re-run comes back as it is.
        assert_eq!(settle(&mut rs, &RULES, MAX_PASSES, key, |_: &[Record]| Err::<Vec<Record>, _>("io")), Err("io"));
        // The FAIL is a suspect of the first pass, and its re-run replaces it; a fresh record
        // for a pair that was not asked for is ignored.
        let mut asked = Vec::new();
        let s = settle(&mut rs, &RULES, MAX_PASSES, key, |sus: &[Record]| -> Result<Vec<Record>, ()> {
            asked.push(sus.iter().map(key).collect::<Vec<_>>());
            Ok(vec![fresh("node1", "node2", 1.0), fresh("node3", "node2", 500.0)])
        })
        .expect("ok");
        assert_eq!(asked, [vec![("node2".to_string(), "node3".to_string())]]);
        assert_eq!(s, Settled { passes: 1, rerun: vec![5] });
        assert_eq!(rs[5].retried.as_deref(), Some("FAIL: client: Couldn't connect"));
        assert_eq!(rs[0].value, Some(500.0));
        // Nothing to re-run: no pass.
        assert_eq!(run(&mut rs, MAX_PASSES, &[]).0, Settled::default());
    }
}
