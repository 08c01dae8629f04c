//! `cargo test -p vmtest --test vm`: the real-kernel suite (Debian kernel +
//! rdma_rxe under qemu), reported in libtest's format.
//!
//! It builds nothing in Rust. It needs a (static) `rperftest` binary:
//!   1. `$RPERFTEST_BIN` if set, else
//!   2. the newest of `<target>/x86_64-unknown-linux-musl/release/rperftest`,
//!      `<target>/x86_64-unknown-linux-gnu/release/rperftest` and
//!      `<target>/release/rperftest`, where `<target>` is `$CARGO_TARGET_DIR`
//!      and the target dir this test executable was built into.
//!
//! `tests/vm/build-static.sh` builds the right one (`tests/run-all.sh` runs it
//! first). Then: `tests/vm/build-image.sh` (cached), and
//! `tests/vm/run-suite.sh --mode full`, then `--mode bare`: one VM boot each; the cases with a
//! `# kernel: trixie-backports` header run in a third boot, bare, on Debian 13's kernel
//! (`vm::netns::…`).
//! Every case × mode is one test, `vm::<mode>::<case>`; a case skipped for
//! its mode or marked `# xfail:` counts as ignored. Then the cluster:
//! `tests/vm/cluster-suite.sh` boots four VMs on one virtual Ethernet segment
//! and runs `tests/vm/cluster-cases/*.sh` against them, as
//! `vm::cluster::up`, `vm::cluster::<case>` and `vm::cluster::down`; the cases with a
//! `# nodes: 5` header run on a second bed of five VMs, as `vm::cluster5::…` (booted only when
//! such a case exists).
//!
//! Arguments (libtest-like): `FILTER...` (substring of the test name),
//! `--exact`, `--list`, `--nocapture` (print every case's output).
//! Env: `RPERFTEST_SKIP_VM=1` reports everything as ignored without booting;
//! without it a missing qemu-system-x86_64 is an error.
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Instant, SystemTime};

const MODES: [&str; 5] = ["full", "bare", NETNS, CLUSTER, CLUSTER5];
/// The cases with a `# kernel: trixie-backports` header: one bare VM booted with Debian 13's
/// kernel, whose rxe serves network namespaces (the netns bed with an rxe per node).
const NETNS: &str = "netns";
const NETNS_KERNEL: &str = "trixie-backports";
/// The multi-VM suite: its cases live in tests/vm/cluster-cases.
const CLUSTER: &str = "cluster";
/// The cluster cases with a `# nodes: 5` header, on a bed of their own of 5 nodes (the others
/// count pairs and rounds of 4).
const CLUSTER5: &str = "cluster5";

fn is_cluster(mode: &str) -> bool {
    mode == CLUSTER || mode == CLUSTER5
}

/// A cluster case's `# nodes: N` header (in its first 40 lines); 4 when it has none.
fn case_nodes(root: &Path, case: &str) -> u32 {
    let text = std::fs::read_to_string(root.join("tests/vm/cluster-cases").join(format!("{case}.sh"))).unwrap_or_default();
    text.lines().take(40).find_map(|l| l.strip_prefix("# nodes:").and_then(|v| v.trim().parse().ok())).unwrap_or(4)
}

/// A suite case's `# kernel: SUITE` header (in its first 40 lines), if it has one.
fn case_kernel(root: &Path, case: &str) -> Option<String> {
    let text = std::fs::read_to_string(root.join("tests/vm/cases").join(format!("{case}.sh"))).unwrap_or_default();
    text.lines().take(40).find_map(|l| l.strip_prefix("# kernel:").map(|v| v.trim().to_string()))
}

#[derive(PartialEq)]
enum Outcome {
    Ok,
    /// With the case's last `FAIL:` line, repeated under "failures:" so that the reason
    /// survives a log that keeps only its head and tail.
    Failed(String),
    Ignored(String),
}

struct Args {
    filters: Vec<String>,
    exact: bool,
    list: bool,
    nocapture: bool,
}

fn parse_args() -> Args {
    let mut a = Args { filters: vec![], exact: false, list: false, nocapture: false };
    let mut it = std::env::args().skip(1);
    while let Some(s) = it.next() {
        match s.as_str() {
            "--exact" => a.exact = true,
            "--list" => a.list = true,
            "--nocapture" | "--show-output" => a.nocapture = true,
            // options with a value that cargo or a user may pass
            "--test-threads" | "--format" | "--color" | "--skip" | "-Z" => {
                it.next();
            }
            s if s.starts_with('-') => {} // --ignored, --include-ignored, -q, ...
            s => a.filters.push(s.to_string()),
        }
    }
    a
}

fn selected(a: &Args, name: &str) -> bool {
    a.filters.is_empty()
        || a.filters.iter().any(|f| if a.exact { name == f } else { name.contains(f.as_str()) })
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root")
}

fn case_names(root: &Path, dir: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root.join(dir))
        .expect(dir)
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".sh").map(str::to_string))
        .filter(|n| n != "lib")
        .collect();
    v.sort();
    v
}

fn find_binary() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("RPERFTEST_BIN") {
        let p = PathBuf::from(p);
        return if p.is_file() { Ok(p) } else { Err(format!("RPERFTEST_BIN={} is not a file", p.display())) };
    }
    let mut dirs: Vec<PathBuf> = vec![];
    if let Some(d) = std::env::var_os("CARGO_TARGET_DIR") {
        dirs.push(root().join(d));
    }
    // <target>[/<triple>]/<profile>/deps/vm-<hash>
    if let Ok(exe) = std::env::current_exe() {
        if let Some(t) = exe.ancestors().nth(3) {
            dirs.push(t.to_path_buf());
            if let Some(tt) = t.parent() {
                dirs.push(tt.to_path_buf());
            }
        }
    }
    dirs.push(root().join("target"));
    let mut best: Option<(SystemTime, PathBuf)> = None;
    for d in &dirs {
        for sub in ["x86_64-unknown-linux-musl/release", "x86_64-unknown-linux-gnu/release", "release"] {
            let p = d.join(sub).join("rperftest");
            if let Ok(m) = p.metadata().and_then(|m| m.modified()) {
                if p.is_file() && best.as_ref().is_none_or(|(t, _)| m > *t) {
                    best = Some((m, p));
                }
            }
        }
    }
    best.map(|(_, p)| p).ok_or_else(|| {
        "no rperftest binary found: run tests/vm/build-static.sh (or set RPERFTEST_BIN)".to_string()
    })
}

/// The GPU flavour and the CUDA and HSA test doubles (tests/gpu-double/flavour.sh) for
/// cases/35-gpu-double.sh, from `$RPERFTEST_GPU_DIR` or target/gpu-flavour, when built; the
/// case skips itself without them.
fn link_gpu_flavour(root: &Path, bin_dir: &Path) {
    let dir = std::env::var_os("RPERFTEST_GPU_DIR").map_or_else(|| root.join("target/gpu-flavour"), PathBuf::from);
    for f in ["rperftest-gpu", "libcuda.so.1", "libhsa-runtime64.so.1"] {
        let p = dir.join(f);
        if p.is_file() {
            let _ = std::os::unix::fs::symlink(&p, bin_dir.join(f));
        }
    }
}

fn have_qemu() -> bool {
    Command::new("/bin/sh")
        .args(["-c", "command -v qemu-system-x86_64"])
        .stdout(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

fn regex_escape(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c.to_string() } else { format!("\\{c}") }).collect()
}

/// Runs one suite; returns (case -> outcome, VMSUITE line, exit status).
fn run_mode(
    root: &Path,
    mode: &str,
    cases: &[String],
    bin_dir: &Path,
    verbose: bool,
    results: &mut Vec<(String, Outcome)>,
) -> (Option<String>, i32) {
    // the cluster's own "up" and "down" lines always run; the filter picks cases
    let picked: Vec<&String> = cases.iter().filter(|c| *c != "up" && *c != "down").collect();
    let filter = format!("^({})$", picked.iter().map(|c| regex_escape(c)).collect::<Vec<_>>().join("|"));
    let mut cmd = if is_cluster(mode) {
        let mut c = Command::new(root.join("tests/vm/cluster-suite.sh"));
        // The 4-node bed has two rails (the rails cases); the 5-node one, one.
        let (nodes, rails) = if mode == CLUSTER5 { ("5", "1") } else { ("4", "2") };
        c.args(["--nodes", nodes, "--rails", rails, "--filter", &filter]);
        c
    } else if mode == NETNS {
        let mut c = Command::new(root.join("tests/vm/run-suite.sh"));
        c.args(["--mode", "bare", "--kernel-suite", NETNS_KERNEL, "--filter", &filter]);
        c
    } else {
        let mut c = Command::new(root.join("tests/vm/run-suite.sh"));
        c.args(["--mode", mode, "--filter", &filter]);
        c
    };
    if verbose {
        cmd.arg("-v");
    }
    if is_cluster(mode) {
        cmd.arg(bin_dir.join("rperftest"));
    } else {
        cmd.arg(bin_dir);
    }
    cmd.stdout(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            println!("error: cannot run tests/vm/run-suite.sh: {e}");
            return (None, 125);
        }
    };
    let mut summary = None;
    let mut last_fail = String::new();
    // The runner prints a failed case's output after its VMTEST line: its FAIL: line then
    // belongs to that case.
    let mut pending: Option<usize> = None;
    let out = BufReader::new(child.stdout.take().unwrap());
    for line in out.lines() {
        let Ok(line) = line else { break };
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.first() == Some(&"VMTEST") && f.len() >= 4 {
            let name = format!("vm::{mode}::{}", f[1]);
            let mut note = f[4..].join(" ");
            if note.starts_with('(') && note.ends_with(')') {
                note = note[1..note.len() - 1].to_string();
            }
            let (outcome, shown) = match f[2] {
                "ok" => (Outcome::Ok, "ok".to_string()),
                "skipped" => (Outcome::Ignored(note.clone()), format!("ignored, {note}")),
                "xfail" => (Outcome::Ignored(note.clone()), format!("ignored, xfail {note}")),
                _ => (Outcome::Failed(std::mem::take(&mut last_fail)), format!("FAILED ({}s {note})", f[3])),
            };
            let secs = if matches!(outcome, Outcome::Ok) { format!(" <{}s>", f[3]) } else { String::new() };
            println!("test {name} ... {shown}{secs}");
            pending = matches!(outcome, Outcome::Failed(_)).then_some(results.len());
            results.push((name, outcome));
            last_fail.clear();
        } else if f.first() == Some(&"VMSUITE") {
            summary = Some(line.clone());
        } else if !line.starts_with("VMTEST-") {
            if let Some(i) = line.find("FAIL: ") {
                let why = line[i..].trim_end().to_string();
                match pending.and_then(|k| results.get_mut(k)) {
                    // The first one: `fail` ends a case, so later FAIL: lines are another's.
                    Some((_, Outcome::Failed(r))) if r.is_empty() => *r = why,
                    _ => last_fail = why,
                }
            }
            println!("{line}");
        }
    }
    let rc = child.wait().map(|s| s.code().unwrap_or(125)).unwrap_or(125);
    (summary, rc)
}

fn field<'a>(line: &'a str, key: &str) -> &'a str {
    line.split_whitespace().find_map(|w| w.strip_prefix(key).and_then(|r| r.strip_prefix('='))).unwrap_or("-")
}

fn main() -> ExitCode {
    let t0 = Instant::now();
    let args = parse_args();
    let root = root();
    let (netns_cases, cases): (Vec<String>, Vec<String>) =
        case_names(&root, "tests/vm/cases").into_iter().partition(|c| case_kernel(&root, c).as_deref() == Some(NETNS_KERNEL));
    let (cluster5, cluster4): (Vec<String>, Vec<String>) =
        case_names(&root, "tests/vm/cluster-cases").into_iter().partition(|c| case_nodes(&root, c) == 5);
    // a bed boots only for its cases: none, no boot
    let bed = |cs: Vec<String>| {
        if cs.is_empty() {
            return cs;
        }
        std::iter::once("up".to_string()).chain(cs).chain(std::iter::once("down".to_string())).collect::<Vec<_>>()
    };
    let (cluster_cases, cluster5_cases) = (bed(cluster4), bed(cluster5));
    let cases_of = |m: &str| match m {
        CLUSTER => cluster_cases.clone(),
        CLUSTER5 => cluster5_cases.clone(),
        NETNS => netns_cases.clone(),
        _ => cases.clone(),
    };
    let total = MODES.iter().map(|m| cases_of(m).len()).sum::<usize>();
    let mut all: Vec<(String, &str, String)> = MODES
        .iter()
        .flat_map(|m| cases_of(m).into_iter().map(move |c| (format!("vm::{m}::{c}"), *m, c)))
        .filter(|(n, _, _)| selected(&args, n))
        .collect();
    // a cluster run always reports its up and down lines
    for bedm in [CLUSTER, CLUSTER5] {
        if all.iter().any(|(_, m, _)| *m == bedm) {
            for c in ["up", "down"] {
                let n = format!("vm::{bedm}::{c}");
                if !all.iter().any(|(x, _, _)| *x == n) {
                    all.push((n, bedm, c.to_string()));
                }
            }
        }
    }
    if args.list {
        for (n, _, _) in &all {
            println!("{n}: test");
        }
        return ExitCode::SUCCESS;
    }
    let filtered_out = total.saturating_sub(all.len());
    println!("\nrunning {} tests", all.len());
    let summary = |passed: usize, failed: usize, ignored: usize| {
        println!(
            "\ntest result: {}. {passed} passed; {failed} failed; {ignored} ignored; 0 measured; {filtered_out} filtered out; finished in {:.2}s\n",
            if failed == 0 { "ok" } else { "FAILED" },
            t0.elapsed().as_secs_f64()
        );
    };
    if all.is_empty() {
        summary(0, 0, 0);
        return ExitCode::SUCCESS;
    }
    if std::env::var("RPERFTEST_SKIP_VM").as_deref() == Ok("1") {
        for (n, _, _) in &all {
            println!("test {n} ... ignored, RPERFTEST_SKIP_VM=1");
        }
        summary(0, 0, all.len());
        return ExitCode::SUCCESS;
    }
    let fatal = |msg: &str| {
        println!("error: {msg}");
        println!("\ntest result: FAILED. 0 passed; {} failed; 0 ignored; 0 measured; {filtered_out} filtered out; finished in {:.2}s\n", all.len(), t0.elapsed().as_secs_f64());
        ExitCode::FAILURE
    };
    if !have_qemu() {
        return fatal(
            "qemu-system-x86_64 is not installed: apt-get install --no-install-recommends qemu-system-x86 \
             (or set RPERFTEST_SKIP_VM=1 to skip the VM suite)",
        );
    }
    let bin = match find_binary() {
        Ok(b) => b,
        Err(e) => return fatal(&e),
    };
    println!("vm: rperftest binary {}", bin.display());
    let bin_dir = std::env::temp_dir().join(format!("rperftest-vmtest-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&bin_dir);
    if let Err(e) = std::fs::create_dir_all(&bin_dir)
        .and_then(|_| std::os::unix::fs::symlink(&bin, bin_dir.join("rperftest")))
    {
        return fatal(&format!("cannot prepare {}: {e}", bin_dir.display()));
    }
    link_gpu_flavour(&root, &bin_dir);

    let tb = Instant::now();
    let st = Command::new(root.join("tests/vm/build-image.sh")).stdout(Stdio::null()).status();
    let image_s = tb.elapsed().as_secs_f64();
    match st {
        Ok(s) if s.success() => println!("vm: image ready in {image_s:.1}s"),
        Ok(s) => return fatal(&format!("tests/vm/build-image.sh failed ({s})")),
        Err(e) => return fatal(&format!("cannot run tests/vm/build-image.sh: {e}")),
    }

    let mut results: Vec<(String, Outcome)> = vec![];
    let mut timings = vec![format!("image {image_s:.1}s")];
    let mut infra_fail = false;
    for mode in MODES {
        let mc: Vec<String> = all.iter().filter(|(_, m, _)| *m == mode).map(|(_, _, c)| c.clone()).collect();
        if mc.is_empty() {
            continue;
        }
        let before = results.len();
        let (line, rc) = run_mode(&root, mode, &mc, &bin_dir, args.nocapture, &mut results);
        match &line {
            Some(l) => timings.push(format!(
                "{mode}: boot {}s, cases {}s, total {}s",
                field(l, "boot"),
                field(l, "cases"),
                field(l, "total")
            )),
            None => timings.push(format!("{mode}: no summary (rc={rc})")),
        }
        // every selected case must have reported
        for c in &mc {
            let n = format!("vm::{mode}::{c}");
            if !results[before..].iter().any(|(r, _)| *r == n) {
                println!("test {n} ... FAILED (no result, run-suite rc={rc})");
                results.push((n, Outcome::Failed(format!("no result, run-suite rc={rc}"))));
            }
        }
        if rc != 0 && rc != 1 {
            println!("vm: {mode} suite ended with rc={rc} (124 VM timeout, 125 VM broke, 120-123 guest setup)");
            infra_fail = true;
        }
    }
    let _ = std::fs::remove_dir_all(&bin_dir);
    println!("vm: timings: {}", timings.join("; "));

    let passed = results.iter().filter(|(_, o)| *o == Outcome::Ok).count();
    let failed: Vec<(&String, &String)> =
        results.iter().filter_map(|(n, o)| if let Outcome::Failed(why) = o { Some((n, why)) } else { None }).collect();
    let ignored = results.iter().filter(|(_, o)| matches!(o, Outcome::Ignored(_))).count();
    if !failed.is_empty() {
        // The reasons in a block of their own: the libtest-style "failures:" list below
        // stays names only, as tools that read it expect.
        println!("\nwhy they failed:");
        for (n, why) in &failed {
            println!("    {n}: {}", if why.is_empty() { "(no FAIL: line; see its output above)" } else { why });
        }
        println!("\nfailures:");
        for (n, _) in &failed {
            println!("    {n}");
        }
    }
    summary(passed, failed.len(), ignored);
    if failed.is_empty() && !infra_fail {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
