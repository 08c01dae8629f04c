//! `rperftest matrix` at 32 nodes against tests/matrix-fake/fake-ssh, which plays every node
//! on this machine (no network, no RDMA): the coordinator's side of a large run, end to end.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn fake_ssh() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/matrix-fake/fake-ssh")
}

fn workdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "rperftest-matrix-fake-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("work dir");
    d
}

fn matrix(dir: &Path, nodes: usize, extra: &[&str], env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rperftest"));
    c.args([
        "matrix",
        "--hosts",
        &format!("n[1-{nodes}]"),
        "--launcher",
        "ssh",
        "--ssh",
    ])
    .arg(fake_ssh())
    .args(["--preflight-timeout", "20", "--out"])
    .arg(dir.join("out"))
    .args(extra)
    .args(["--", "-s", "4096", "-n", "5"])
    .env("FAKE_DIR", dir)
    .env("TMPDIR", dir)
    .env_remove("SLURM_JOB_ID")
    .env_remove("SLURM_JOB_NODELIST");
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

/// Each unordered pair's records: (status, reason) per record.
fn records(dir: &Path) -> BTreeMap<(String, String), Vec<(String, String)>> {
    let text = std::fs::read_to_string(dir.join("out/results.jsonl")).expect("results.jsonl");
    let mut by: BTreeMap<(String, String), Vec<(String, String)>> = BTreeMap::new();
    for l in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(l).expect("a JSON record");
        let (a, b) = (
            v["server"]["node"].as_str().unwrap_or("").to_string(),
            v["client"]["node"].as_str().unwrap_or("").to_string(),
        );
        let key = if a <= b { (a, b) } else { (b, a) };
        by.entry(key).or_default().push((
            v["status"].as_str().unwrap_or("").into(),
            v["reason"].as_str().unwrap_or("").into(),
        ));
    }
    by
}

#[test]
fn thirty_two_nodes_one_down_one_low() {
    let dir = workdir("32");
    let out = matrix(
        &dir,
        32,
        &[],
        &[
            ("FAKE_PAIR_S", "0.02"),
            ("FAKE_LOW", "n7"),
            ("FAKE_DOWN", "n32"),
            ("FAKE_SLOW", "n3"),
        ],
    )
    .output()
    .expect("run");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let by = records(&dir);
    assert_eq!(by.len(), 496, "every unordered pair of 32 nodes");
    for ((a, b), recs) in &by {
        assert_eq!(recs.len(), 1, "{a}-{b} recorded {} times", recs.len());
        let (status, reason) = &recs[0];
        let want = if a == "n32" || b == "n32" {
            "UNREACHABLE"
        } else if a == "n7" || b == "n7" {
            "LOW"
        } else {
            "OK"
        };
        assert_eq!(status, want, "{a}-{b}: {reason}");
    }
    assert!(
        stderr.contains("preflight: 31 of 32 node(s) up"),
        "{stderr}"
    );
    assert!(
        stdout.contains("n32 unreachable: ") && stdout.contains("Connection refused"),
        "{stdout}"
    );
    assert!(
        stdout.contains("30 of 30 bad pairs of ib_write_bw on rail fake0 include n7"),
        "{stdout}"
    );
    assert!(
        stdout.contains("496 pair(s) in 31 round(s): 30 LOW, 435 OK, 31 UNREACHABLE"),
        "{stdout}"
    );
    let html = std::fs::read_to_string(dir.join("out/report.html")).expect("report.html");
    assert!(
        html.len() > 10_000 && html.contains("<svg") && html.contains("n32"),
        "report.html: {} bytes",
        html.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_stop_then_resume_runs_every_pair_once() {
    let dir = workdir("resume");
    let env = [("FAKE_PAIR_S", "0.1"), ("FAKE_SLOW", "")];
    let first = matrix(&dir, 16, &[], &env)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run");
    let jsonl = dir.join("out/results.jsonl");
    let t = Instant::now();
    while std::fs::read_to_string(&jsonl)
        .map(|s| s.lines().count())
        .unwrap_or(0)
        < 20
    {
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "fewer than 20 pairs in 120 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let kill = Command::new("kill")
        .args(["-INT", &first.id().to_string()])
        .status()
        .expect("kill");
    assert!(kill.success());
    let out = first.wait_with_output().expect("wait");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("stopped by a signal: "), "{stdout}");
    let kept: usize = records(&dir).values().map(Vec::len).sum();
    assert!((20..120).contains(&kept), "kept {kept}");
    let out = matrix(&dir, 16, &["--resume"], &env)
        .output()
        .expect("resume");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(&format!("resume: {kept} pair(s) already in")),
        "{stderr}"
    );
    let by = records(&dir);
    assert_eq!(by.len(), 120);
    assert!(
        by.values().all(|r| r.len() == 1 && r[0].0 == "OK"),
        "{by:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn rails_parallel_runs_both_rails_at_once_on_their_own_ports() {
    let dir = workdir("rails");
    let env = [
        ("FAKE_PAIR_S", "0.3"),
        ("FAKE_RAILS", "2"),
        ("FAKE_SLOW", ""),
    ];
    let out = matrix(&dir, 8, &["--rails-parallel"], &env)
        .output()
        .expect("run");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let text = std::fs::read_to_string(dir.join("out/results.jsonl")).expect("results.jsonl");
    let recs: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(recs.len(), 56, "28 pairs on each of 2 rails");
    let mut seen = std::collections::BTreeSet::new();
    // (rail, start, end) of each pair, to find two rails' pairs running at the same time.
    let mut spans: Vec<(String, f64, f64)> = Vec::new();
    for r in &recs {
        let rail = r["rail"].as_str().unwrap_or("").to_string();
        let (a, b) = (
            r["server"]["node"].as_str().unwrap_or(""),
            r["client"]["node"].as_str().unwrap_or(""),
        );
        let key = (rail.clone(), a.min(b).to_string(), a.max(b).to_string());
        assert!(seen.insert(key.clone()), "{key:?} twice");
        assert_eq!(r["status"], "OK", "{r}");
        // 4 pairs a round: rail fake0 on 18600-18603, fake1 on 18604-18607.
        let port = r["port"].as_u64().unwrap_or(0);
        let want = if rail == "fake0" {
            18600..18604
        } else {
            18604..18608
        };
        assert!(want.contains(&port), "{rail} on port {port}");
        let t = r["started_unix"].as_f64().unwrap_or(0.0);
        spans.push((rail, t, t + r["wall_s"].as_f64().unwrap_or(0.0)));
    }
    let overlap = spans.iter().any(|(ra, s, e)| {
        spans
            .iter()
            .any(|(rb, s2, e2)| ra != rb && s < e2 && s2 < e)
    });
    assert!(
        overlap,
        "no pair of fake0 ran at the same time as one of fake1"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
