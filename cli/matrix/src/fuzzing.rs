//! Fuzz target bodies for the `rperftest matrix` parsers of bytes that come from other hosts
//! or from an earlier, possibly killed, run: `results.jsonl` (read back by `--resume`), the
//! probe line a node prints through ssh or srun (among login banners and warnings), and Slurm
//! hostlists (`SLURM_JOB_NODELIST`, `--hosts`, host files).
//!
//! Each `pub fn <target>(data: &[u8])` is run by the cargo-fuzz target of the same name
//! (`fuzz/fuzz_targets/<target>.rs`, nightly) and by the stable replay test
//! (`cli/matrix/tests/fuzz_replay.rs`) over every file of `fuzz/corpus/<target>/`. A body panics only
//! when a property it checks fails. See docs/fuzzing.md.
#![doc(hidden)]

use crate::{hostlist, probe, results};

/// Any text: the records found survive a write and read back unchanged, the counts add up, and
/// the CSV has one row per record after its header.
pub fn matrix_results(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (recs, bad) = results::parse_jsonl(&text);
    let lines = text.lines().filter(|l| !l.trim().is_empty()).count();
    assert_eq!(
        recs.len() + bad,
        lines,
        "every non-blank line is a record or counted bad"
    );
    for r in &recs {
        let again = results::Record::from_json(&r.to_json());
        assert_eq!(
            again.as_ref(),
            Some(r),
            "a record read from results.jsonl round-trips"
        );
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
    assert_eq!(
        rows,
        recs.len() + 1,
        "one CSV row per record plus the header"
    );
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
    for parsed in [
        hostlist::expand(text.trim()),
        hostlist::parse_hostfile(&text),
    ] {
        let Ok(names) = parsed else { continue };
        assert!(names.len() <= hostlist::MAX_HOSTS, "{} names", names.len());
        for n in &names {
            assert!(!n.is_empty() && !n.starts_with('-'), "unsafe name {n:?}");
            assert!(
                n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')),
                "unsafe name {n:?}"
            );
        }
        if !names.is_empty() {
            assert_eq!(
                hostlist::expand(&names.join(",")).as_ref(),
                Ok(&names),
                "names re-expand to themselves"
            );
        }
    }
}
