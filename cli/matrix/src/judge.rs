//! Judgement of measured pairs, and which node the bad pairs point at.
//!
//! A bandwidth pair is LOW below `--min-bw`, or below `--rel` × the median of its test and
//! rail; a latency pair is LOW above `--max-lat`, or above `--rel-lat` × that median. The
//! median (not the maximum, as ClusterKit uses) keeps one unusually fast pair from making
//! every normal one look bad, and needs more than half of the pairs bad before it moves.

use std::collections::BTreeMap;

use super::results::Status;
use super::view::{Verdicts, View};

#[derive(Clone, Copy, Debug)]
pub struct Rules {
    pub min_bw: Option<f64>,
    pub max_lat: Option<f64>,
    pub rel: f64,
    pub rel_lat: f64,
    /// `--port-rate`: LOW below this fraction of the slower port's rate.
    pub port_rate: Option<f64>,
}

/// Latency tools report time (lower is better); the others bandwidth.
pub fn is_lat(test: &str) -> bool {
    test.ends_with("_lat")
}

pub fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 { v[m] } else { (v[m - 1] + v[m]) / 2.0 })
}

/// Pairs are judged against the median of their test and rail; a fabric pattern's flows
/// against their own (a flow sharing a port with seven others is not a slow pair).
pub fn group_key<'a>(r: impl View<'a>) -> (String, String) {
    if r.pattern() == super::results::PAIRS {
        (r.test().to_string(), r.rail().to_string())
    } else {
        (r.test().to_string(), format!("{} ({})", r.rail(), r.pattern()))
    }
}

/// A port's rate as sysfs writes it (`100 Gb/sec (4X EDR)`), in Gb/s.
pub fn port_gbps(rate: &str) -> Option<f64> {
    let mut w = rate.split_whitespace();
    let v: f64 = w.next()?.parse().ok()?;
    (w.next()? == "Gb/sec" && v.is_finite() && v > 0.0).then_some(v)
}

/// The slower port of the pair: its rate in Gb/s and in the record's unit (perftest's MB/sec
/// is 2^20 bytes per second).
fn line_rate<'a>(r: impl View<'a>) -> Option<(f64, f64)> {
    let gbps = port_gbps(&r.server().rate)?.min(port_gbps(&r.client().rate)?);
    let in_unit = if r.unit() == "Gb/sec" { gbps } else { gbps * 1e9 / 8.0 / 1_048_576.0 };
    Some((gbps, in_unit))
}

/// The median of each group ([`group_key`]) of the measured records, exact, in up to four
/// passes over them ([`super::select`]) rather than a copy of every value: `records` is walked
/// again for each pass.
pub fn medians<'a, V, I>(records: I) -> BTreeMap<(String, String), f64>
where
    V: View<'a>,
    I: IntoIterator<Item = V>,
    I::IntoIter: Clone,
{
    let all = records.into_iter();
    let mut ids = GroupIds::default();
    let found = super::select::medians(|sink| {
        for r in all.clone().filter(|r| r.status().measured()) {
            if let Some(v) = r.value() {
                sink(ids.id(r), v);
            }
        }
    });
    ids.keys.into_iter().zip(found).filter_map(|(k, m)| Some((k, m?))).collect()
}

/// Groups ([`group_key`]) numbered as they are met; the last one's names kept, since
/// consecutive records mostly share a group (no key is built for them).
#[derive(Default)]
struct GroupIds<'a> {
    keys: Vec<(String, String)>,
    ids: BTreeMap<(String, String), usize>,
    last: Option<(&'a str, &'a str, &'a str, usize)>,
}

impl<'a> GroupIds<'a> {
    fn id(&mut self, r: impl View<'a>) -> usize {
        let names = (r.test(), r.rail(), r.pattern());
        if let Some((t, rl, p, id)) = self.last {
            if (t, rl, p) == names {
                return id;
            }
        }
        let key = group_key(r);
        let next = self.keys.len();
        let id = *self.ids.entry(key.clone()).or_insert(next);
        if id == next {
            self.keys.push(key);
        }
        self.last = Some((names.0, names.1, names.2, id));
        id
    }
}

/// Why a pair that measured `r.value()` is LOW against the median `med` of its group, or
/// None when it is OK.
pub fn low_reason<'a>(r: impl View<'a>, med: Option<f64>, rules: &Rules) -> Option<String> {
    let v = r.value()?;
    let unit = r.unit();
    if is_lat(r.test()) {
        return match (rules.max_lat, med) {
            (Some(max), _) if v > max => Some(format!("{v:.2} {unit} above --max-lat {max}")),
            (_, Some(m)) if v > rules.rel_lat * m => Some(format!("{v:.2} {unit} above {} x the median {m:.2}", rules.rel_lat)),
            _ => None,
        };
    }
    let line = rules.port_rate.and_then(|f| line_rate(r).map(|(rate, in_unit)| (f, rate, in_unit)));
    match (rules.min_bw, med) {
        (Some(min), _) if v < min => Some(format!("{v:.2} {unit} below --min-bw {min}")),
        _ => match line {
            Some((f, rate, in_unit)) if v < f * in_unit => {
                Some(format!("{v:.2} {unit} below {f} x the port rate {rate} Gb/sec ({in_unit:.2} {unit})"))
            }
            _ => match med {
                Some(m) if v < rules.rel * m => Some(format!("{v:.2} {unit} below {} x the median {m:.2}", rules.rel)),
                _ => None,
            },
        },
    }
}

/// The verdict [`judge`] gives a record against its group's median `med`: a measured pair
/// (OK, or LOW from an earlier judgement) is LOW with why, or OK; any other status stays.
pub fn verdict<'a>(r: impl View<'a>, med: Option<f64>, rules: &Rules) -> (Status, Option<String>) {
    match r.status() {
        Status::Ok | Status::Low => match low_reason(r, med, rules) {
            Some(why) => (Status::Low, Some(why)),
            None => (Status::Ok, None),
        },
        s => (s, None),
    }
}

/// Fill in each record's median and turn OK into LOW where the rules say so. A LOW from an
/// earlier judgement (a resumed file, a pass before a re-run moved the median) is judged
/// afresh, so judging twice gives what judging once does.
pub fn judge<R: Verdicts + ?Sized>(records: &mut R, rules: &Rules) {
    for i in 0..records.count() {
        let r = records.at(i);
        if r.status() == Status::Low {
            let med = r.median();
            records.set_verdict(i, Status::Ok, Some(String::new()), med);
        }
    }
    let medians = medians((0..records.count()).map(|i| records.at(i)));
    // Consecutive records mostly share a group: its key is looked up once per run of them.
    let mut last: Option<((String, String), Option<f64>)> = None;
    for i in 0..records.count() {
        let r = records.at(i);
        let key = group_key(r);
        let med = match &last {
            Some((k, m)) if *k == key => *m,
            _ => medians.get(&key).copied(),
        };
        let (status, why) = verdict(r, med, rules);
        records.set_verdict(i, status, why, med);
        last = Some((key, med));
    }
}

/// A pair that ran and is not OK (unreachable and skipped pairs never ran; the preflight names
/// their nodes).
fn bad(s: Status) -> bool {
    matches!(s, Status::Low | Status::Fail | Status::Timeout)
}

fn ran(s: Status) -> bool {
    !matches!(s, Status::Unreachable | Status::Skipped)
}

/// One sentence per test and rail with bad pairs: the node most of them share, if any.
///
/// A node is named when at least two of its pairs are bad and more than half of the pairs it
/// ran are: a bad cable or port fails every pair through it, while the partner nodes each have
/// only the one bad pair with it. Its pairs on the other rails are mentioned when they are
/// fine, which points at the rail (cable, port) rather than the node.
pub fn diagnose<'a, V: View<'a>>(records: impl IntoIterator<Item = V>) -> Vec<String> {
    // Counts per group and node, not the records: the run's pairs may be millions.
    let mut groups: BTreeMap<(String, String), Tally<'a>> = BTreeMap::new();
    for r in records.into_iter().filter(|r| ran(r.status())) {
        groups.entry(group_key(r)).or_default().add(r);
    }
    let mut out = Vec::new();
    for ((test, rail), t) in &groups {
        let nbad = t.nbad;
        if nbad == 0 {
            continue;
        }
        let suspects: Vec<(&str, usize)> =
            t.per.iter().filter(|(_, (b, n, _))| *b >= 2 && 2 * b > *n).map(|(node, (b, _, _))| (*node, *b)).collect();
        if suspects.is_empty() {
            match t.first_bad {
                Some((server, client, status)) if nbad == 1 => out.push(format!(
                    "1 bad pair of {test} on rail {rail}: {server} - {client} ({}); one pair cannot tell which node",
                    status.name()
                )),
                _ => out.push(format!("{nbad} bad pairs of {test} on rail {rail}; no node is in most of them")),
            }
            continue;
        }
        for (node, b) in suspects {
            let mut s = format!("{b} of {nbad} bad pairs of {test} on rail {rail} include {node}");
            // The node's pairs on the test's other rails: it has some there, all OK.
            let fine: Vec<&str> = groups
                .iter()
                .filter(|((t2, r), other)| t2 == test && r != rail && other.per.get(node).is_some_and(|&(_, _, ok)| ok))
                .map(|((_, r), _)| r.as_str())
                .collect();
            if !fine.is_empty() {
                s.push_str(&format!("; {node}'s pairs on rail {} are fine", fine.join(", ")));
            }
            out.push(s);
        }
    }
    out
}

/// One group's pairs as [`diagnose`] counts them.
#[derive(Default)]
struct Tally<'a> {
    /// Bad pairs.
    nbad: usize,
    /// Per node: its bad pairs and its pairs (a pair counts once for each side), and
    /// whether every pair it is in is OK.
    per: BTreeMap<&'a str, (usize, usize, bool)>,
    /// The first bad pair: server, client, status.
    first_bad: Option<(&'a str, &'a str, Status)>,
}

impl<'a> Tally<'a> {
    fn add(&mut self, r: impl View<'a>) {
        let (server, client) = (r.server().node.as_str(), r.client().node.as_str());
        let is_bad = bad(r.status());
        if is_bad {
            self.nbad += 1;
            self.first_bad.get_or_insert((server, client, r.status()));
        }
        for n in [server, client] {
            let e = self.per.entry(n).or_insert((0, 0, true));
            e.0 += usize::from(is_bad);
            e.1 += 1;
            e.2 &= r.status() == Status::Ok;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{sample, Record};

    const RULES: Rules = Rules { min_bw: None, max_lat: None, rel: 0.9, rel_lat: 1.5, port_rate: None };

    fn four(test: &str, rail: &str, vals: [f64; 6]) -> Vec<Record> {
        let pairs = [("n1", "n2"), ("n3", "n4"), ("n1", "n3"), ("n2", "n4"), ("n1", "n4"), ("n2", "n3")];
        pairs.iter().zip(vals).map(|((a, b), v)| sample(test, rail, a, b, Status::Ok, Some(v))).collect()
    }

    /// The diagnosis as it was made from the records themselves (before [`Tally`]): the
    /// oracle of the test below.
    fn old_diagnose<'a, V: View<'a>>(records: impl IntoIterator<Item = V>) -> Vec<String> {
        let mut groups: BTreeMap<(String, String), Vec<V>> = BTreeMap::new();
        for r in records.into_iter().filter(|r| ran(r.status())) {
            groups.entry(group_key(r)).or_default().push(r);
        }
        let mut out = Vec::new();
        for ((test, rail), rs) in &groups {
            let nbad = rs.iter().filter(|r| bad(r.status())).count();
            if nbad == 0 {
                continue;
            }
            let mut per: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
            for r in rs {
                for n in [r.server().node.as_str(), r.client().node.as_str()] {
                    let e = per.entry(n).or_default();
                    e.1 += 1;
                    if bad(r.status()) {
                        e.0 += 1;
                    }
                }
            }
            let suspects: Vec<(&str, usize)> =
                per.iter().filter(|(_, (b, t))| *b >= 2 && 2 * b > *t).map(|(n, (b, _))| (*n, *b)).collect();
            if suspects.is_empty() {
                if nbad == 1 {
                    let r = rs.iter().find(|r| bad(r.status())).expect("one bad pair");
                    out.push(format!(
                        "1 bad pair of {test} on rail {rail}: {} - {} ({}); one pair cannot tell which node",
                        r.server().node,
                        r.client().node,
                        r.status().name()
                    ));
                } else {
                    out.push(format!("{nbad} bad pairs of {test} on rail {rail}; no node is in most of them"));
                }
                continue;
            }
            for (node, b) in suspects {
                let mut s = format!("{b} of {nbad} bad pairs of {test} on rail {rail} include {node}");
                let fine: Vec<&str> = groups
                    .iter()
                    .filter(|((t, r), _)| t == test && r != rail)
                    .filter(|(_, rs2)| {
                        let mine: Vec<_> = rs2.iter().filter(|r| r.server().node == node || r.client().node == node).collect();
                        !mine.is_empty() && mine.iter().all(|r| r.status() == Status::Ok)
                    })
                    .map(|((_, r), _)| r.as_str())
                    .collect();
                if !fine.is_empty() {
                    s.push_str(&format!("; {node}'s pairs on rail {} are fine", fine.join(", ")));
                }
                out.push(s);
            }
        }
        out
    }

    #[test]
    fn the_tallied_diagnosis_is_the_one_from_the_records() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        let statuses = [Status::Ok, Status::Ok, Status::Ok, Status::Low, Status::Fail, Status::Timeout, Status::Unreachable];
        let (mut named, mut fine) = (0, 0);
        for round in 0..300 {
            let n = 2 + next(6);
            let rs: Vec<Record> = (0..next(40))
                .map(|_| {
                    let (a, b) = (next(n), next(n));
                    let test = if next(3) == 0 { "ib_send_lat" } else { "ib_write_bw" };
                    let rail = ["r0", "r1", "r2"][next(3) as usize];
                    let mut r = sample(test, rail, &format!("n{a}"), &format!("n{b}"), statuses[next(7) as usize], Some(1.0));
                    if next(5) == 0 {
                        r.pattern = "incast".into();
                    }
                    r
                })
                .collect();
            let d = diagnose(&rs);
            assert_eq!(d, old_diagnose(&rs), "round {round}");
            named += usize::from(d.iter().any(|l| l.contains(" include ")));
            fine += usize::from(d.iter().any(|l| l.contains(" are fine")));
        }
        assert!(named > 30 && fine > 3, "the draws name nodes: {named}, {fine}");
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&mut []), None);
    }

    #[test]
    fn the_slow_node_is_low_and_named() {
        // n4's pairs (indices 1, 3, 4) at about 1 MB/s, the others at about 5.
        let mut rs = four("ib_write_bw", "rxe0", [5.1, 1.0, 4.8, 0.9, 1.1, 5.3]);
        rs.extend(four("ib_write_bw", "rxe1", [5.0; 6]));
        judge(&mut rs, &RULES);
        let low: Vec<usize> = rs.iter().enumerate().filter(|(_, r)| r.status == Status::Low).map(|(i, _)| i).collect();
        assert_eq!(low, [1, 3, 4]);
        assert!(rs[1].reason.contains("below 0.9 x the median"), "{}", rs[1].reason);
        assert!((rs[0].median.expect("median") - 2.95).abs() < 1e-9);
        let d = diagnose(&rs);
        assert_eq!(d, ["3 of 3 bad pairs of ib_write_bw on rail rxe0 include n4; n4's pairs on rail rxe1 are fine"]);
    }

    #[test]
    fn the_port_rate_rule_uses_the_slower_port() {
        assert_eq!(port_gbps("100 Gb/sec (4X EDR)"), Some(100.0));
        assert_eq!(port_gbps("2.5 Gb/sec (1X SDR)"), Some(2.5));
        for bad in ["", "fast", "100 Mb/sec", "-1 Gb/sec", "NaN Gb/sec", "inf Gb/sec"] {
            assert_eq!(port_gbps(bad), None, "{bad:?}");
        }
        // 100 and 25 Gb/s ports: 25 Gb/s = 2980.23 MB/sec (2^20 bytes); 0.9 of it is 2682.21.
        let mut rs = four("ib_write_bw", "r", [2700.0, 2600.0, 2700.0, 2700.0, 2700.0, 2700.0]);
        for r in &mut rs {
            r.server.rate = "100 Gb/sec (4X EDR)".into();
            r.client.rate = "25 Gb/sec (1X EDR)".into();
        }
        judge(&mut rs, &Rules { port_rate: Some(0.9), ..RULES });
        assert_eq!(rs.iter().filter(|r| r.status == Status::Low).count(), 1);
        assert!(rs[1].reason.contains("below 0.9 x the port rate 25 Gb/sec (2980.23 MB/sec)"), "{}", rs[1].reason);
        // Without a readable rate on one side the rule does not apply (the median rule does).
        let mut rs2 = rs.clone();
        for r in &mut rs2 {
            r.status = Status::Ok;
            r.server.rate.clear();
        }
        judge(&mut rs2, &Rules { port_rate: Some(0.99), ..RULES });
        assert!(rs2.iter().all(|r| r.status == Status::Ok));
        // In Gb/sec the unit is the rate's own.
        let mut g = four("ib_write_bw", "r", [20.0, 24.0, 24.0, 24.0, 24.0, 24.0]);
        for r in &mut g {
            r.unit = "Gb/sec".into();
            (r.server.rate, r.client.rate) = ("25 Gb/sec (1X EDR)".into(), "25 Gb/sec (1X EDR)".into());
        }
        judge(&mut g, &Rules { port_rate: Some(0.9), rel: 0.5, ..RULES });
        assert_eq!(g.iter().filter(|r| r.status == Status::Low).count(), 1);
        assert!(g[0].reason.contains("below 0.9 x the port rate 25 Gb/sec (25.00 Gb/sec)"), "{}", g[0].reason);
    }

    #[test]
    fn absolute_floors_and_latency_ceilings() {
        let mut rs = four("ib_write_bw", "r", [5.0; 6]);
        judge(&mut rs, &Rules { min_bw: Some(6.0), ..RULES });
        assert!(rs.iter().all(|r| r.status == Status::Low && r.reason.contains("--min-bw 6")));
        let mut lat = four("ib_send_lat", "r", [10.0, 10.5, 30.0, 9.8, 10.1, 10.2]);
        judge(&mut lat, &RULES);
        let low: Vec<usize> = lat.iter().enumerate().filter(|(_, r)| r.status == Status::Low).map(|(i, _)| i).collect();
        assert_eq!(low, [2]);
        let mut lat2 = four("ib_send_lat", "r", [10.0; 6]);
        judge(&mut lat2, &Rules { max_lat: Some(9.0), ..RULES });
        assert!(lat2.iter().all(|r| r.status == Status::Low));
        // Judged again under other rules: the earlier LOWs do not stick.
        judge(&mut lat2, &RULES);
        assert!(lat2.iter().all(|r| r.status == Status::Ok && r.reason.is_empty()));
    }

    #[test]
    fn failures_unreachable_and_single_pairs() {
        let mut rs = four("ib_write_bw", "rxe0", [5.0; 6]);
        rs[1].status = Status::Timeout;
        rs[3].status = Status::Fail;
        rs[4].status = Status::Fail;
        for i in [1, 3, 4] {
            rs[i].value = None;
        }
        judge(&mut rs, &RULES);
        assert_eq!(rs.iter().filter(|r| r.status == Status::Ok).count(), 3);
        assert_eq!(diagnose(&rs), ["3 of 3 bad pairs of ib_write_bw on rail rxe0 include n4"]);
        // Unreachable pairs never ran: no diagnosis from them.
        for r in rs.iter_mut() {
            if r.status != Status::Ok {
                r.status = Status::Unreachable;
            }
        }
        assert!(diagnose(&rs).is_empty());
        let mut one = vec![sample("ib_write_bw", "rxe0", "a", "b", Status::Fail, None)];
        judge(&mut one, &RULES);
        assert_eq!(diagnose(&one), ["1 bad pair of ib_write_bw on rail rxe0: a - b (FAIL); one pair cannot tell which node"]);
        // Two bad pairs with no common node.
        let mut rs = four("ib_write_bw", "rxe0", [5.0; 6]);
        rs[0].status = Status::Fail;
        rs[1].status = Status::Fail;
        assert_eq!(diagnose(&rs), ["2 bad pairs of ib_write_bw on rail rxe0; no node is in most of them"]);
    }
}
