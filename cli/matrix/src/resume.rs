//! `--resume`: an earlier invocation's results.jsonl read back into the cells, and which pairs
//! it recorded, so that they are not run again.
//!
//! Which pairs: a bit per pair per phase (test, rail, pattern, step), the nodes by their place
//! in `--hosts` ([`PairSets`]), not an index of every cell. A pair in the file twice (re-run
//! before a stop) is found by its bit already set; the later record goes in the place of the
//! first by a pass over the cells ([`Cells::merge_repeats`]), so only the repeats are held.
//! A record with a node not in `--hosts` (the list changed between invocations) cannot be
//! asked about by this run's rounds; its pair is kept in a small set for the repeats alone.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use super::cells::{Cells, PairId, Phase, PhaseKey};
use super::pairsets::PairSets;
use super::results;

/// The pairs recorded before this invocation.
pub struct Recorded {
    ordered: bool,
    sets: PairSets,
    /// Each phase's number in `sets`.
    phases: HashMap<PhaseKey, usize>,
    /// Each node's place in `--hosts`.
    hosts: HashMap<String, usize>,
    /// Pairs with a node not in `--hosts`.
    others: HashSet<PairId>,
}

impl Recorded {
    /// None recorded; `ordered`: pairs are (server, client) (`--both-directions`).
    pub fn none(hosts: &[String], ordered: bool) -> Recorded {
        Recorded {
            ordered,
            sets: PairSets::new(hosts.len(), ordered),
            phases: HashMap::new(),
            hosts: hosts
                .iter()
                .enumerate()
                .map(|(i, h)| (h.clone(), i))
                .collect(),
            others: HashSet::new(),
        }
    }

    /// The records of results.jsonl at `path` into `cells` (each line's cell noted for the
    /// final rewrite; a pair twice: the later record in the place of the first), and the
    /// pairs they are; with how many lines were not records.
    pub fn read(
        path: &Path,
        hosts: &[String],
        ordered: bool,
        cells: &mut Cells,
    ) -> std::io::Result<(Recorded, usize)> {
        let mut rec = Recorded::none(hosts, ordered);
        let mut repeats = Vec::new();
        let (bad, cut) = results::each_jsonl_line(path, |r| {
            let Some(r) = r else {
                return cells.note_line(None);
            };
            cells.push(&r);
            let i = cells.len() - 1;
            if !rec.mark(cells.pair_id_of(i, ordered), &r.server.node, &r.client.node) {
                repeats.push(i);
            }
        })?;
        if cut {
            cells.glue_next_line();
        }
        cells.merge_repeats(&repeats, ordered);
        Ok((rec, bad))
    }

    /// Pair `id` of nodes `a` (server) and `b` is recorded; false when it was already.
    fn mark(&mut self, id: PairId, a: &str, b: &str) -> bool {
        match (self.hosts.get(a), self.hosts.get(b)) {
            (Some(&pa), Some(&pb)) if pa != pb => {
                let phase = match self.phases.get(&id.phase()) {
                    Some(&p) => p,
                    None => {
                        let p = self.sets.add_phase();
                        self.phases.insert(id.phase(), p);
                        p
                    }
                };
                self.sets.insert(phase, pa, pb)
            }
            _ => self.others.insert(id),
        }
    }

    /// Was the pair of nodes `a` (server) and `b` in `phase` recorded before this invocation?
    pub fn contains(&self, cells: &Cells, phase: Phase, a: &str, b: &str) -> bool {
        let Some(id) = cells.pair_id(self.ordered, phase, a, b) else {
            return false;
        };
        match (self.hosts.get(a), self.hosts.get(b)) {
            (Some(&pa), Some(&pb)) if pa != pb => self
                .phases
                .get(&id.phase())
                .is_some_and(|&p| self.sets.contains(p, pa, pb)),
            _ => self.others.contains(&id),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{sample, JsonlLog, Record, Status, PAIRS};
    use crate::view::View;

    fn hosts(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("n{i}")).collect()
    }

    fn ph<'a>(rail: &'a str, pattern: &'a str, step: usize) -> Phase<'a> {
        Phase {
            test: "ib_write_bw",
            rail,
            pattern,
            step,
        }
    }

    /// A results.jsonl of `rs`, then `tail` (written as it is).
    fn file(tag: &str, rs: &[Record], tail: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("rpt-resume-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("dir");
        let mut log = JsonlLog::open(&d).expect("open");
        rs.iter().for_each(|r| log.append(r).expect("append"));
        let p = d.join("results.jsonl");
        let mut text = std::fs::read_to_string(&p).expect("read");
        text.push_str(tail);
        std::fs::write(&p, text).expect("write");
        p
    }

    fn rec(rail: &str, a: &str, b: &str, v: f64) -> Record {
        let mut r = sample("ib_write_bw", rail, a, b, Status::Ok, Some(v));
        r.started_unix = v;
        r
    }

    #[test]
    fn the_pairs_recorded_and_a_pair_twice_in_the_place_of_the_first() {
        let mut rs = vec![
            rec("r0", "n1", "n2", 1.0),
            rec("r0", "n3", "n4", 2.0),
            rec("r1", "n1", "n2", 3.0),
            rec("r0", "n9", "n1", 4.0), // n9 is not in --hosts
            rec("r0", "n2", "n1", 5.0), // n1-n2 on r0 again: a re-run before the stop
            rec("r0", "n1", "n9", 6.0), // and n9's pair again
            rec("r0", "n4", "n2", 7.0),
        ];
        let mut flow = rec("r0", "n1", "n3", 8.0);
        (flow.pattern, flow.round) = ("bisection".into(), 2);
        rs.push(flow);
        // A pair whose first cell is past the first repeat, again.
        rs.push(rec("r0", "n2", "n4", 11.0));
        let path = file("two", &rs, "not json\n{\"test\": \"ib_wr");
        for cells in [Cells::default(), Cells::spilling(&std::env::temp_dir(), 2)] {
            let mut cells = cells;
            let (have, bad) = Recorded::read(&path, &hosts(4), false, &mut cells).expect("read");
            assert_eq!(bad, 2);
            let values: Vec<Option<f64>> = cells.iter().map(|v| v.value()).collect();
            assert_eq!(
                values,
                [
                    Some(5.0),
                    Some(2.0),
                    Some(3.0),
                    Some(6.0),
                    Some(11.0),
                    Some(8.0)
                ]
            );
            // Each line's cell: a repeat's first line is no cell's any more.
            let line = |k: usize| cells.line_cell(k, &rs[k]);
            let lines: Vec<Option<usize>> = (0..rs.len()).map(line).collect();
            assert_eq!(
                lines,
                [
                    None,
                    Some(1),
                    Some(2),
                    None,
                    Some(0),
                    Some(3),
                    None,
                    Some(5),
                    Some(4)
                ]
            );
            assert!(cells.error().is_ok());
            let yes = |rail, p, s, a, b| have.contains(&cells, ph(rail, p, s), a, b);
            assert!(yes("r0", PAIRS, 0, "n2", "n1") && yes("r0", PAIRS, 9, "n1", "n2"));
            assert!(yes("r1", PAIRS, 0, "n1", "n2") && !yes("r1", PAIRS, 0, "n3", "n4"));
            assert!(yes("r0", PAIRS, 0, "n1", "n9") && !yes("r0", PAIRS, 0, "n2", "n3"));
            assert!(
                yes("r0", "bisection", 2, "n3", "n1") && !yes("r0", "bisection", 1, "n1", "n3")
            );
            assert!(!yes("r9", PAIRS, 0, "n1", "n2") && !yes("r0", PAIRS, 0, "n1", "n5"));
            // The file ended inside a line: the next line appended joins it.
            cells.push(&rec("r1", "n3", "n4", 9.0));
            assert_eq!(cells.line_cell(11, &rec("r1", "n3", "n4", 9.0)), None);
            cells.push(&rec("r1", "n2", "n3", 10.0));
            assert_eq!(cells.line_cell(11, &rec("r1", "n2", "n3", 10.0)), Some(7));
        }
        let _ = std::fs::remove_dir_all(path.parent().expect("dir"));
    }

    #[test]
    fn both_directions_are_two_pairs_and_no_file_is_none() {
        let rs = vec![rec("r0", "n1", "n2", 1.0), rec("r0", "n2", "n1", 2.0)];
        let path = file("dir", &rs, "");
        let mut cells = Cells::default();
        let (have, _) = Recorded::read(&path, &hosts(3), true, &mut cells).expect("read");
        assert_eq!(cells.len(), 2);
        let yes = |a, b| have.contains(&cells, ph("r0", PAIRS, 0), a, b);
        assert!(yes("n1", "n2") && yes("n2", "n1") && !yes("n1", "n3"));
        let mut none = Cells::default();
        let (have, bad) =
            Recorded::read(&path.with_extension("none"), &hosts(3), true, &mut none).expect("none");
        assert_eq!((none.len(), bad), (0, 0));
        assert!(!have.contains(&cells, ph("r0", PAIRS, 0), "n1", "n2"));
        let _ = std::fs::remove_dir_all(path.parent().expect("dir"));
    }
}
