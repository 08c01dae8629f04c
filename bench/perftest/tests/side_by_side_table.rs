//! The side-by-side table script (bench/scripts/side-by-side-table.sh) over synthetic raw rows:
//! medians, ratios, the bootstrap interval's verdicts and the paired sign test. The script is
//! what turns a benchmark run into the claims docs/benchmarks.md makes, so its arithmetic is
//! checked here rather than trusted.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/side-by-side-table.sh")
}

/// One raw row as side-by-side-guest.sh writes it.
fn bw_row(out: &mut String, tool: &str, size: u32, imp: &str, run: u32, avg: f64, rate: f64) {
    writeln!(out, "bw\t{tool}\t{size}\t{imp}\t{run}\t0\t10000\t{avg:.2}\t{avg:.2}\t{rate:.6}\t-\t-\t-\t0.100\t0.300\t8000\t1.0").unwrap();
}

fn lat_row(out: &mut String, tool: &str, imp: &str, run: u32, typ: f64, p99: f64, cpu: f64) {
    writeln!(
        out,
        "lat\t{tool}\t2\t{imp}\t{run}\t0\t2000\t{:.2}\t{:.2}\t{typ:.2}\t{typ:.2}\t0.50\t{p99:.2}\t{cpu:.3}\t0.000\t7000\t1.0",
        typ - 1.0,
        p99 + 10.0
    )
    .unwrap();
}

fn table(raw: &str) -> String {
    // one directory per call: the tests run in parallel threads of one process
    static CALLS: AtomicU32 = AtomicU32::new(0);
    let n = CALLS.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("sbs-table-test-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("raw.tsv"), raw).unwrap();
    let out = Command::new("bash").arg(script()).arg(&dir).output().expect("run bash");
    std::fs::remove_dir_all(&dir).ok();
    assert!(out.status.success(), "table script failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The row of the "resolves" table for (test, metric), split into cells.
fn resolve_row(t: &str, test: &str, metric: &str) -> Vec<String> {
    let sec = t.split("### Which differences").nth(1).expect("resolves section");
    sec.lines()
        .map(|l| l.split('|').map(|c| c.trim().to_string()).collect::<Vec<_>>())
        .find(|c| c.len() > 3 && c[1] == test && c[3] == metric)
        .unwrap_or_else(|| panic!("no row {test} {metric} in\n{sec}"))
}

fn synthetic() -> String {
    let mut raw = String::new();
    for run in 1..=9u32 {
        let j = f64::from(run);
        // write_bw: ours 20 % faster in every round, a small spread on both sides
        bw_row(&mut raw, "ib_write_bw", 64, "c", run, 2.0 + 0.01 * j, 0.030 + 0.0001 * j);
        bw_row(&mut raw, "ib_write_bw", 64, "ours", run, 2.4 + 0.01 * j, 0.036 + 0.0001 * j);
        // read_bw: the same distribution for both (rotated), so no verdict
        let v = 1.0 + 0.1 * f64::from((run * 4) % 9);
        let w = 1.0 + 0.1 * f64::from((run * 7) % 9);
        bw_row(&mut raw, "ib_read_bw", 64, "c", run, v, v / 64.0);
        bw_row(&mut raw, "ib_read_bw", 64, "ours", run, w, w / 64.0);
        // send_lat: ours 10 % slower in every round (latency: lower is better)
        lat_row(&mut raw, "ib_send_lat", "c", run, 10.0 + 0.05 * j, 30.0 + j, 0.6);
        lat_row(&mut raw, "ib_send_lat", "ours", run, 11.0 + 0.05 * j, 33.0 + j, 0.2);
    }
    raw
}

#[test]
fn verdicts_follow_the_interval() {
    let t = table(&synthetic());
    let r = resolve_row(&t, "ib_write_bw", "MsgRate");
    assert_eq!(r[4..6], ["9", "9"]);
    assert_eq!(r[6], "1.20");
    assert_eq!(r[8], "9 of 9");
    assert_eq!(r[9], "0.004"); // 2 / 2^9
    assert_eq!(r[10], "**ours faster**");

    let r = resolve_row(&t, "ib_read_bw", "BW average");
    assert_eq!(r[6], "1.00");
    assert_eq!(r[10], "not resolved");

    let r = resolve_row(&t, "ib_send_lat", "t_typical");
    assert_eq!(r[8], "0 of 9");
    assert_eq!(r[10], "**C faster**");
    let r = resolve_row(&t, "ib_send_lat", "CPU/op");
    assert_eq!(r[10], "**ours lower**");
}

#[test]
fn interval_brackets_the_ratio_and_is_reproducible() {
    let raw = synthetic();
    let (a, b) = (table(&raw), table(&raw));
    assert_eq!(a, b, "the bootstrap uses a fixed seed");
    for (test, metric) in [("ib_write_bw", "BW average"), ("ib_read_bw", "MsgRate"), ("ib_send_lat", "p99")] {
        let r = resolve_row(&a, test, metric);
        let ratio: f64 = r[6].parse().unwrap();
        let (lo, hi) = r[7].split_once('–').expect("an interval");
        let (lo, hi): (f64, f64) = (lo.parse().unwrap(), hi.parse().unwrap());
        assert!(lo <= ratio && ratio <= hi, "{test} {metric}: {ratio} outside {lo}–{hi}");
    }
}

#[test]
fn sign_test_counts_only_rounds_with_both_sides() {
    let mut raw = String::new();
    for run in 1..=5u32 {
        let j = f64::from(run);
        if run == 3 {
            // a C run without a finite result (its clock calibration failed under TCG): not a pair
            raw.push_str("lat\tib_write_lat\t2\tc\t3\t0\t2000\tinf\tinf\tinf\tinf\t-nan\tinf\t0.148\t0.478\t15664\t0.80\n");
        } else {
            lat_row(&mut raw, "ib_write_lat", "c", run, 10.0 + j, 30.0, 0.5);
        }
        lat_row(&mut raw, "ib_write_lat", "ours", run, 9.5 + j, 30.0, 0.5);
    }
    let t = table(&raw);
    let r = resolve_row(&t, "ib_write_lat", "t_typical");
    assert_eq!(r[4..6], ["4", "5"]);
    assert_eq!(r[8], "4 of 4");
    assert_eq!(r[9], "0.125"); // 2 / 2^4
    // p99 is tied in every round: no untied pair, no p value
    let r = resolve_row(&t, "ib_write_lat", "p99");
    assert_eq!(r[8], "–");
    assert_eq!(r[10], "not resolved");
}
