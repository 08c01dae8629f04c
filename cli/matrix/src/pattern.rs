//! Fabric load patterns: beside the pair-wise rounds (one pair per node, one rail at a time),
//! the loads a training job puts on a fabric and perftest never does: every rail of a pair at
//! once (`all-rails`), many senders into one port (`incast`), everyone to everyone
//! (`alltoall`), half the cluster to the other half (`bisection`).
//!
//! Each pattern is a list of steps; a step's flows run at the same time, on every rail, and
//! the port counters are read before and after it. What is computed here is pure: the
//! steps, the spread of a step's flows and its fairness.

use std::collections::BTreeMap;

use super::results::{Record, Status, PAIRS};
use super::schedule::{circle_rounds, Pair};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    Pairs,
    AllRails,
    Incast,
    Alltoall,
    Bisection,
}

impl Pattern {
    pub const ALL: [Pattern; 5] = [
        Pattern::Pairs,
        Pattern::AllRails,
        Pattern::Incast,
        Pattern::Alltoall,
        Pattern::Bisection,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Pattern::Pairs => PAIRS,
            Pattern::AllRails => "all-rails",
            Pattern::Incast => "incast",
            Pattern::Alltoall => "alltoall",
            Pattern::Bisection => "bisection",
        }
    }

    pub fn parse(s: &str) -> Option<Pattern> {
        Pattern::ALL.into_iter().find(|p| p.name() == s)
    }
}

/// The patterns' knobs.
#[derive(Clone, Copy, Debug)]
pub struct Knobs {
    /// incast: senders per receiver (capped at n - 1).
    pub incast_senders: usize,
    /// alltoall: flows per node per rail at once (QPs per node are bounded by it).
    pub max_flows: usize,
    /// bisection: how many random halvings.
    pub draws: usize,
    pub seed: u64,
}

/// One step: flows (`a` serves, `b` sends) that run at once on every rail, and the most
/// flows one NIC carries in it (each flow's deadline grows by that share).
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub flows: Vec<Pair>,
    pub share: usize,
    pub what: String,
}

pub fn steps(p: Pattern, n: usize, k: &Knobs) -> Vec<Step> {
    if n < 2 {
        return Vec::new();
    }
    match p {
        Pattern::Pairs | Pattern::AllRails => circle_rounds(n)
            .into_iter()
            .enumerate()
            .map(|(i, flows)| Step {
                flows,
                share: 1,
                what: format!("round {}", i + 1),
            })
            .collect(),
        Pattern::Incast => {
            let senders = k.incast_senders.clamp(1, n - 1);
            (0..n)
                .map(|t| Step {
                    flows: (1..=senders)
                        .map(|j| Pair {
                            a: t,
                            b: (t + j) % n,
                        })
                        .collect(),
                    share: senders,
                    what: format!("into node #{} from {senders}", t + 1),
                })
                .collect()
        }
        Pattern::Alltoall => {
            let b = k.max_flows.max(1);
            circle_rounds(n)
                .chunks(b)
                .enumerate()
                .map(|(i, rs)| Step {
                    flows: rs.concat(),
                    share: rs.len(),
                    what: format!("rounds {}-{}", i * b + 1, i * b + rs.len()),
                })
                .collect()
        }
        Pattern::Bisection => {
            let mut rng = k.seed.max(1);
            (0..k.draws.max(1))
                .map(|d| {
                    let perm = shuffled(n, &mut rng);
                    let half = n / 2;
                    Step {
                        flows: (0..half)
                            .map(|i| Pair {
                                a: perm[half + i],
                                b: perm[i],
                            })
                            .collect(),
                        share: 1,
                        what: format!("draw {}", d + 1),
                    }
                })
                .collect()
        }
    }
}

/// Fisher-Yates with xorshift64: the same seed gives the same halves on every run, so a
/// resumed or repeated bisection compares like with like.
fn shuffled(n: usize, s: &mut u64) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        let j = usize::try_from(*s % (i as u64 + 1)).unwrap_or(0);
        v.swap(i, j);
    }
    v
}

/// Jain's fairness index: 1 when every flow got the same, 1/n when one got everything.
pub fn jain(v: &[f64]) -> Option<f64> {
    let sum: f64 = v.iter().sum();
    let sq: f64 = v.iter().map(|x| x * x).sum();
    (!v.is_empty() && sq > 0.0).then(|| sum * sum / (v.len() as f64 * sq))
}

/// One line per pattern step (test, rail): the flows, min/median/max and fairness.
pub fn step_lines(records: &[Record]) -> Vec<String> {
    let mut g: BTreeMap<(&str, &str, &str, usize), Vec<&Record>> = BTreeMap::new();
    for r in records.iter().filter(|r| r.pattern != PAIRS) {
        g.entry((
            r.pattern.as_str(),
            r.test.as_str(),
            r.rail.as_str(),
            r.round,
        ))
        .or_default()
        .push(r);
    }
    g.into_iter()
        .map(|((p, test, rail, step), rs)| {
            let mut v: Vec<f64> = rs.iter().filter_map(|r| r.value).collect();
            let unit = rs.first().map_or("", |r| r.unit.as_str());
            let bad = rs.iter().filter(|r| r.status != Status::Ok).count();
            let mut s = format!(
                "{p} step {} {test} on rail {rail}: {} flow(s), {bad} not OK",
                step + 1,
                rs.len()
            );
            let j = jain(&v);
            if let (Some(min), Some(max), Some(med)) = (
                v.iter().copied().reduce(f64::min),
                v.iter().copied().reduce(f64::max),
                super::judge::median(&mut v),
            ) {
                s.push_str(&format!(
                    "; min/median/max {min:.2}/{med:.2}/{max:.2} {unit}"
                ));
            }
            if let Some(j) = j {
                s.push_str(&format!(", Jain {j:.3}"));
            }
            s
        })
        .collect()
}

/// `all-rails`: each pair's rails side by side with their sum, and the rails that were fine
/// alone (the pair-wise record) but not under all-rail load.
pub fn all_rails_lines(records: &[Record]) -> Vec<String> {
    let mut by_pair: BTreeMap<(&str, &str, &str), Vec<&Record>> = BTreeMap::new();
    for r in records
        .iter()
        .filter(|r| r.pattern == Pattern::AllRails.name())
    {
        by_pair
            .entry((
                r.test.as_str(),
                r.server.node.as_str(),
                r.client.node.as_str(),
            ))
            .or_default()
            .push(r);
    }
    let mut out = Vec::new();
    for ((test, a, b), rs) in &by_pair {
        let mut rs = rs.clone();
        rs.sort_by(|x, y| x.rail.cmp(&y.rail));
        let vals: Vec<f64> = rs.iter().filter_map(|r| r.value).collect();
        let sum = vals.iter().fold(0.0, |a, b| a + b);
        let unit = rs.first().map_or("", |r| r.unit.as_str());
        let agg = if super::judge::is_lat(test) || vals.is_empty() {
            String::new()
        } else {
            format!(" = {sum:.2} {unit} in all")
        };
        let parts: Vec<String> = rs
            .iter()
            .map(|r| {
                format!(
                    "{} {}",
                    r.rail,
                    r.value
                        .map_or(r.status.name().to_string(), |v| format!("{v:.2}"))
                )
            })
            .collect();
        out.push(format!(
            "all-rails {test} {a} - {b}: {}{agg}",
            parts.join(" + ")
        ));
        for r in rs.iter().filter(|r| r.status != Status::Ok) {
            let alone = records.iter().find(|p| {
                p.pattern == PAIRS
                    && p.test == r.test
                    && p.rail == r.rail
                    && p.key() == r.key()
                    && p.status == Status::Ok
            });
            if let Some(p) = alone {
                out.push(format!(
                    "{a} - {b} on rail {}: OK alone ({:.2} {unit}) but {} under all-rail load{}",
                    r.rail,
                    p.value.unwrap_or(0.0),
                    r.status.name(),
                    r.value
                        .map(|v| format!(" ({v:.2} {unit})"))
                        .unwrap_or_else(|| format!(": {}", r.reason))
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::sample;

    const K: Knobs = Knobs {
        incast_senders: 3,
        max_flows: 2,
        draws: 3,
        seed: 1,
    };

    fn per_node(s: &Step, n: usize) -> Vec<usize> {
        let mut c = vec![0; n];
        for f in &s.flows {
            c[f.a] += 1;
            c[f.b] += 1;
        }
        c
    }

    #[test]
    fn incast_targets_every_node_once_with_k_senders() {
        let s = steps(Pattern::Incast, 4, &K);
        assert_eq!(s.len(), 4);
        for (t, st) in s.iter().enumerate() {
            assert_eq!(st.flows.len(), 3);
            assert!(st.flows.iter().all(|f| f.a == t && f.b != t), "{st:?}");
            assert_eq!(st.share, 3);
        }
        assert_eq!(
            steps(
                Pattern::Incast,
                3,
                &Knobs {
                    incast_senders: 9,
                    ..K
                }
            )[0]
            .flows
            .len(),
            2,
            "capped at n - 1"
        );
    }

    #[test]
    fn alltoall_covers_every_pair_once_with_bounded_flows_per_node() {
        for n in [4, 5, 8] {
            let s = steps(Pattern::Alltoall, n, &K);
            let mut pairs: Vec<(usize, usize)> = s
                .iter()
                .flat_map(|st| st.flows.iter().map(|f| (f.a.min(f.b), f.a.max(f.b))))
                .collect();
            pairs.sort_unstable();
            let want: Vec<(usize, usize)> = (0..n)
                .flat_map(|a| (a + 1..n).map(move |b| (a, b)))
                .collect();
            assert_eq!(pairs, want, "n={n}");
            assert!(
                s.iter()
                    .all(|st| per_node(st, n).iter().all(|&c| c <= K.max_flows)),
                "n={n}"
            );
        }
    }

    #[test]
    fn bisection_pairs_each_node_of_one_half_with_one_of_the_other() {
        let s = steps(Pattern::Bisection, 8, &K);
        assert_eq!(s.len(), 3);
        for st in &s {
            assert_eq!(st.flows.len(), 4);
            assert!(per_node(st, 8).iter().all(|&c| c == 1), "{st:?}");
        }
        assert_ne!(s[0].flows, s[1].flows, "draws differ");
        assert_eq!(
            s,
            steps(Pattern::Bisection, 8, &K),
            "the same seed, the same halves"
        );
        assert!(steps(Pattern::Bisection, 1, &K).is_empty());
    }

    #[test]
    fn fairness_and_the_step_lines() {
        assert_eq!(jain(&[2.0, 2.0, 2.0]), Some(1.0));
        assert!((jain(&[3.0, 0.0, 0.0]).expect("j") - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(jain(&[]), None);
        let mut rs: Vec<Record> = [("n1", "n2", 1.0), ("n1", "n3", 2.0), ("n1", "n4", 3.0)]
            .iter()
            .map(|(a, b, v)| {
                let mut r = sample("ib_write_bw", "rxe0", a, b, Status::Ok, Some(*v));
                r.pattern = "incast".into();
                r
            })
            .collect();
        rs.push(sample(
            "ib_write_bw",
            "rxe0",
            "n1",
            "n2",
            Status::Ok,
            Some(9.0),
        ));
        assert_eq!(step_lines(&rs), ["incast step 1 ib_write_bw on rail rxe0: 3 flow(s), 0 not OK; min/median/max 1.00/2.00/3.00 MB/sec, Jain 0.857"]);
    }

    #[test]
    fn a_rail_fine_alone_but_not_under_all_rail_load_is_flagged() {
        let alone = sample("ib_write_bw", "rxe0", "n1", "n2", Status::Ok, Some(5.0));
        let mut r0 = sample("ib_write_bw", "rxe0", "n1", "n2", Status::Low, Some(1.0));
        let mut r1 = sample("ib_write_bw", "rxe1", "n1", "n2", Status::Ok, Some(4.0));
        r0.pattern = "all-rails".into();
        r1.pattern = "all-rails".into();
        let l = all_rails_lines(&[alone, r0, r1]);
        assert_eq!(l, ["all-rails ib_write_bw n1 - n2: rxe0 1.00 + rxe1 4.00 = 5.00 MB/sec in all", "n1 - n2 on rail rxe0: OK alone (5.00 MB/sec) but LOW under all-rail load (1.00 MB/sec)"]);
    }
}
