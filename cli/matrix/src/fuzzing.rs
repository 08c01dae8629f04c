//! Fuzz target bodies for the `rperftest matrix` parsers of bytes that come from other hosts
//! or from an earlier, possibly killed, run: `results.jsonl` (read back by `--resume`), the
//! probe line a node prints through ssh or srun (among login banners and warnings), the wire
//! check's and the counters' lines and the ARP frames the wire check takes off a cable, and
//! Slurm hostlists (`SLURM_JOB_NODELIST`, `--hosts`, host files).
//!
//! Each `pub fn <target>(data: &[u8])` is run by the cargo-fuzz target of the same name
//! (`fuzz/fuzz_targets/<target>.rs`, nightly) and by the stable replay test
//! (`cli/matrix/tests/fuzz_replay.rs`) over every file of `fuzz/corpus/<target>/`. A body panics only
//! when a property it checks fails. See docs/fuzzing.md.
#![doc(hidden)]

use crate::{agent, arp, counters, hostlist, probe, results, wire};

/// Any text: the records found survive a write and read back unchanged, the counts add up, and
/// the CSV has one row per record after its header.
pub fn matrix_results(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (recs, bad) = results::parse_jsonl(&text);
    let lines = text.lines().filter(|l| !l.trim().is_empty()).count();
    assert_eq!(recs.len() + bad, lines, "every non-blank line is a record or counted bad");
    for r in &recs {
        let again = results::Record::from_json(&r.to_json());
        assert_eq!(again.as_ref(), Some(r), "a record read from results.jsonl round-trips");
    }
    let csv = results::csv_text(&recs);
    assert!(csv.starts_with(results::CSV_HEADER), "CSV header first");
    // Quoted fields may hold line breaks, so count records as unquoted line ends.
    let mut rows = 0usize;
    let mut quoted = false;
    for c in csv.chars() {
        match c {
            '"' => quoted = !quoted,
            '\n' if !quoted => rows += 1,
            _ => {}
        }
    }
    assert!(!quoted, "CSV quotes balanced");
    assert_eq!(rows, recs.len() + 1, "one CSV row per record plus the header");
}

/// A launcher's output (lines): finding the probe never panics, and what is found round-trips
/// through the probe's own JSON.
pub fn matrix_probe(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    if let Some((_version, devs)) = probe::find_in_output(&lines) {
        let back = probe::from_json(&probe::to_json(&devs)).map(|(_, d)| d);
        assert_eq!(back.as_ref(), Some(&devs), "a probe's devices round-trip");
    }
}

/// A hostlist expression or host file: expansion is bounded, names are safe to hand to ssh or
/// srun, and the expansion of the names written back as a list is the same list.
pub fn matrix_hostlist(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for parsed in [hostlist::expand(text.trim()), hostlist::parse_hostfile(&text)] {
        let Ok(names) = parsed else { continue };
        assert!(names.len() <= hostlist::MAX_HOSTS, "{} names", names.len());
        for n in &names {
            assert!(!n.is_empty() && !n.starts_with('-'), "unsafe name {n:?}");
            assert!(n.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')), "unsafe name {n:?}");
        }
        if !names.is_empty() {
            assert_eq!(hostlist::expand(&names.join(",")).as_ref(), Ok(&names), "names re-expand to themselves");
        }
    }
}

/// What nodes and cables hand the wire check and the counters: the first byte picks the
/// parser. An ARP frame is a reply only to the MAC it names, and only for a well-formed reply;
/// a node's wire line never names a miswire on a rail no answering NIC belongs to; a counters
/// line never makes a counter move backwards or from nothing; a node agent's line is read as
/// the text it carries, and a command it would take round-trips.
pub fn matrix_node_lines(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    match sel % 4 {
        0 => {
            let ours = [0x52, 0x54, 0x0a, 0x4d, 0x01, 0x02];
            if let Some((_, mac)) = arp::parse_arp_reply(rest, ours) {
                assert_eq!(&rest[18..24], &ours, "a reply to us");
                assert_eq!(&rest[8..14], &mac, "the sender's MAC");
            }
        }
        1 => {
            let devs: Vec<Vec<probe::DevProbe>> = (0..2)
                .map(|r| (1..=3).map(|k| bed_dev(r, k)).collect())
                .collect();
            let views: Vec<wire::RailView> = ["rxe0", "rxe1"]
                .iter()
                .zip(&devs)
                .map(|(l, v)| wire::RailView {
                    label: l,
                    per_node: v.iter().map(Some).collect(),
                })
                .collect();
            let hosts: Vec<String> = (1..=3).map(|k| format!("node{k}")).collect();
            let answers = vec![
                Some(Ok(text.to_string())),
                Some(Err(text.to_string())),
                None,
            ];
            let (found, _) = wire::judge(&views, &hosts, &answers);
            for m in &found {
                assert_eq!(m.node, 0, "only the node that answered");
                assert!(!m.on.is_empty() && !m.on.contains(&m.rail), "{m:?}");
                let _ = m.line(&hosts, &views);
            }
        }
        3 => {
            for line in text.lines() {
                if let Some(agent::Said::Out(_, t) | agent::Said::Err(_, t)) = agent::parse_said(line) {
                    assert!(line.ends_with(t), "the side's text is the line's end");
                }
                if let Ok(agent::Request::Run { id, args }) = agent::parse_command(line) {
                    let again = agent::parse_command(&agent::run_line(id, &args));
                    assert_eq!(again, Ok(agent::Request::Run { id, args }), "a run line round-trips");
                }
            }
        }
        _ => {
            let mut before = counters::Snapshot::new();
            counters::add_line(&mut before, "n1", &text);
            let mut after = before.clone();
            counters::add_line(&mut after, "n2", &text);
            assert!(
                counters::moved(&before, &after).is_empty(),
                "the same counters did not move"
            );
            let _ = counters::summary("x", &[counters::moved(&counters::Snapshot::new(), &after)]);
        }
    }
}

fn bed_dev(r: usize, k: usize) -> probe::DevProbe {
    probe::DevProbe {
        name: format!("rxe{r}"),
        active: true,
        state: "ACTIVE".into(),
        rate: String::new(),
        ethernet: true,
        ipv4: Some(format!("10.77.{r}.{k}")),
        gid_index: Some(1),
        netdev: Some(format!("eth{r}")),
        mac: Some(format!("52:54:0a:4d:{r:02x}:{k:02x}")),
        prefix: Some(24),
        gpus: Vec::new(),
        gpu: None,
    }
}
