//! `rperftest matrix --launcher srun` against tests/matrix-fake/fake-srun (a stand-in for srun
//! that logs each job step): one `matrix-agent` step per node starts the pair sides, and
//! `--no-agent` keeps a step per side. The real agent runs behind the fake srun too.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn fake(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/matrix-fake")
        .join(name)
}

/// A fresh directory with `bin/srun` linked to fake-srun (for PATH).
fn workdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "rperftest-matrix-srun-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("bin")).expect("work dir");
    std::os::unix::fs::symlink(fake("fake-srun"), d.join("bin/srun")).expect("link srun");
    d
}

/// The job steps fake-srun saw: (node, what it ran).
fn steps(dir: &Path) -> Vec<(String, String)> {
    let log = std::fs::read_to_string(dir.join("srun.log")).unwrap_or_default();
    log.lines()
        .map(|l| {
            l.split_once(' ')
                .map(|(n, c)| (n.to_string(), c.to_string()))
                .unwrap_or_default()
        })
        .collect()
}

fn matrix(dir: &Path, extra: &[&str]) -> std::process::Output {
    let path = format!(
        "{}:{}",
        dir.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new(env!("CARGO_BIN_EXE_rperftest"))
        .args([
            "matrix",
            "--hosts",
            "n[1-6]",
            "--launcher",
            "srun",
            "--preflight-timeout",
            "20",
            "--out",
        ])
        .arg(dir.join("out"))
        .args(extra)
        .args(["--", "-s", "4096", "-n", "5"])
        .env("PATH", path)
        .env("FAKE_DIR", dir)
        .env("FAKE_PAIR_S", "0.02")
        .env("TMPDIR", dir)
        .env_remove("SLURM_JOB_ID")
        .env_remove("SLURM_JOB_NODELIST")
        .env_remove("FAKE_SRUN_LOCAL")
        .output()
        .expect("run")
}

#[test]
fn over_srun_each_node_gets_one_agent_step_and_no_step_per_side() {
    let dir = workdir("agents");
    let out = matrix(&dir, &[]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("15 pair(s) in 5 round(s): 15 OK"),
        "{stdout}"
    );
    let steps = steps(&dir);
    let agents: Vec<&String> = steps
        .iter()
        .filter(|(_, c)| c.ends_with(" matrix-agent"))
        .map(|(n, _)| n)
        .collect();
    let mut nodes = agents.clone();
    nodes.sort();
    assert_eq!(
        nodes,
        ["n1", "n2", "n3", "n4", "n5", "n6"],
        "one agent step per node: {steps:?}"
    );
    assert!(
        steps.iter().all(|(_, c)| !c.contains("matrix-exec")),
        "a side ran as a step of its own: {steps:?}"
    );
    // The other steps are the preflight's probes, one per node.
    assert_eq!(steps.len(), 12, "{steps:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn over_srun_no_agent_keeps_a_step_per_side() {
    let dir = workdir("no-agent");
    let out = matrix(&dir, &["--no-agent"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let steps = steps(&dir);
    assert_eq!(
        steps
            .iter()
            .filter(|(_, c)| c.contains(" matrix-exec "))
            .count(),
        30,
        "two steps per pair: {steps:?}"
    );
    assert!(
        steps.iter().all(|(_, c)| !c.contains("matrix-agent")),
        "{steps:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The coordinator's launcher with the real agent behind fake-srun (which runs the argv here,
/// its stdin and stdout piped through as srun's are): sides start, say their lines and end
/// through one step per node, and closing the run ends the agents.
#[test]
fn the_real_agent_behind_srun_runs_sides_and_ends_with_the_run() {
    let dir = workdir("real");
    let args: Vec<String> = ["--hosts", "n[1-2]", "--out", "/tmp/x", "--launcher", "srun"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut cfg = matrix::args::parse_config(&args, &matrix::args::Env::default()).expect("parse");
    // fake-srun in its local mode, its settings in a wrapper (not this process's environment).
    let wrapper = dir.join("bin/srun-local");
    let script = format!(
        "#!/bin/sh\nFAKE_DIR='{}' FAKE_SRUN_LOCAL=1 exec '{}' \"$@\"\n",
        dir.display(),
        fake("fake-srun").display()
    );
    std::fs::write(&wrapper, script).expect("wrapper");
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    cfg.launcher.program = wrapper.display().to_string();
    let bin = env!("CARGO_BIN_EXE_rperftest").to_string();
    let side = |node: &str| {
        let argv: Vec<String> = [
            bin.as_str(),
            "matrix-exec",
            "--deadline",
            "20",
            "--",
            "ib_write_bw",
            "-d",
            "no_such_dev",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        cfg.launcher.start(node, &argv).expect("start a side")
    };
    let mut sides = vec![side("n1"), side("n2"), side("n1")];
    for p in &mut sides {
        assert!(
            p.wait_until(Instant::now() + Duration::from_secs(60)),
            "a side did not end"
        );
        p.drain(Duration::from_millis(200));
        let code = p.exit.expect("exit");
        assert_ne!(code, 0);
        assert!(
            p.out.contains(&format!("@rpt-matrix exit {code}")),
            "{:?} {:?}",
            p.out,
            p.err
        );
        assert!(
            p.err.iter().any(|l| l.contains("no_such_dev")),
            "{:?}",
            p.err
        );
    }
    let t = Instant::now();
    cfg.launcher.close_shared(&cfg.hosts);
    assert!(
        t.elapsed() < Duration::from_secs(8),
        "the agents did not end when their stdin closed: {:?}",
        t.elapsed()
    );
    let mut steps = steps(&dir);
    steps.sort();
    assert_eq!(
        steps,
        [
            ("n1".to_string(), format!("{bin} matrix-agent")),
            ("n2".to_string(), format!("{bin} matrix-agent"))
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}
