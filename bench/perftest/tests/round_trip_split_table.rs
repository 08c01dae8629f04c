//! The round-trip split table (bench/scripts/round-trip-split-table.sh) over synthetic ftrace
//! output: which events count as doorbells, the split into time inside write() and between
//! doorbells, the quantiles and the ratios. docs/benchmarks.md quotes this table, so its
//! parsing and arithmetic are checked here rather than trusted.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/round-trip-split-table.sh")
}

/// A trace of `n` doorbells by `comm`-`pid`: each write() takes `k(i)` ticks inside, and the next
/// one enters `u(i)` ticks after the return. Interleaved with noise the script must ignore: a
/// 16-byte write (not a doorbell), another process's doorbells, and exits with no enter.
fn trace(comm: &str, pid: u32, n: u32, k: impl Fn(u32) -> u64, u: impl Fn(u32) -> u64) -> String {
    let mut s = String::new();
    let mut t = 1_000_000u64;
    writeln!(s, "            bash-155     [000] .....  {t}: sys_exit: NR 1 = 2").unwrap();
    writeln!(s, "       {comm}-{pid}     [001] .....  {}: sys_enter: NR 1 (5, 7f36, 10, 0, 0, 0)", t + 1).unwrap();
    writeln!(s, "       {comm}-{pid}     [001] .....  {}: sys_exit: NR 1 = 16", t + 2).unwrap();
    t += 10;
    for i in 0..n {
        writeln!(s, "       {comm}-{pid}     [001] .....  {t}: sys_enter: NR 1 (5, 7f363d483620, 20, 0, 0, 0)").unwrap();
        if i == 3 {
            // another process's doorbell in the middle (fewer of them: not the one measured)
            writeln!(s, "       other-77     [000] .....  {}: sys_enter: NR 1 (4, 7f00, 20, 0, 0, 0)", t + 1).unwrap();
            writeln!(s, "       other-77     [000] .....  {}: sys_exit: NR 1 = 32", t + 2).unwrap();
        }
        t += k(i);
        writeln!(s, "       {comm}-{pid}     [001] d....  {t}: sys_exit: NR 1 = 32").unwrap();
        t += u(i);
    }
    s
}

fn run_table(files: &[(&str, String)], results: &str) -> (String, String) {
    static CALLS: AtomicU32 = AtomicU32::new(0);
    let n = CALLS.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("rts-table-test-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // 1000 MHz: one tick is one ns
    std::fs::write(dir.join("tsc.txt"), "1000\n").unwrap();
    std::fs::write(dir.join("results.tsv"), results).unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let out = Command::new("bash").arg(script()).arg(&dir).output().expect("run bash");
    let runs = std::fs::read_to_string(Path::new(&dir).join("runs.tsv")).unwrap_or_default();
    std::fs::remove_dir_all(&dir).ok();
    assert!(out.status.success(), "table script failed: {}", String::from_utf8_lossy(&out.stderr));
    (String::from_utf8(out.stdout).unwrap(), runs)
}

fn row<'a>(t: &'a str, test: &str, imp: &str) -> Vec<&'a str> {
    t.lines()
        .map(|l| l.split('|').map(str::trim).collect::<Vec<_>>())
        .find(|c| c.len() > 3 && c[1] == test && c[2] == imp)
        .unwrap_or_else(|| panic!("no row {test} {imp} in\n{t}"))
}

#[test]
fn splits_each_doorbell_and_takes_medians() {
    // C: 1000 ns inside, 100 ns between; ours: 1100 inside (10 % more), 90 between (10 % less).
    // Run 2 of each is 20 ns slower in both parts; the per-iteration spread is 0..9 ns.
    let mut files = Vec::new();
    for run in 1..=3u64 {
        let d = if run == 2 { 20 } else { 0 };
        let c = trace("ib_atomic_lat", 300 + run as u32, 101, |i| 1000 + d + u64::from(i % 10), |i| 100 + d + u64::from(i % 10));
        let o = trace("rperftest", 400 + run as u32, 101, |i| 1100 + d + u64::from(i % 10), |i| 90 + d + u64::from(i % 10));
        files.push((format!("trace.ib_atomic_lat.c.{run}.txt"), c));
        files.push((format!("trace.ib_atomic_lat.ours.{run}.txt"), o));
    }
    let results = "ib_atomic_lat\tc\t1\t0\t8\t2000\t1.00\t9.00\t2.00\t2.1\t0.5\t3.0\t9.0\n\
                   ib_atomic_lat\tours\t1\t0\t8\t2000\t1.00\t9.00\t2.20\t2.3\t0.5\t3.0\t9.0\n";
    let refs: Vec<(&str, String)> = files.iter().map(|(n, t)| (n.as_str(), t.clone())).collect();
    let (t, runs) = run_table(&refs, results);

    // 101 doorbells each (the 16-byte write and the other process are not counted)
    assert_eq!(runs.lines().count(), 6, "{runs}");
    assert!(runs.lines().all(|l| l.split('\t').nth(3) == Some("101")), "{runs}");
    // nearest rank on the sorted values: the 101 times inside have eleven +0 and ten each of
    // +1..+9, so the median (rank 51) is +4 and the 10th percentile (rank 11) +0; the 100 times
    // between have ten of each, median (rank 50) +4, 10th percentile (rank 10) +0. Run 2 is the
    // top of each range.
    let c = row(&t, "ib_atomic_lat", "c");
    assert_eq!(c[3], "3");
    assert_eq!(&c[4..8], ["1004 [1004–1024]", "1000 [1000–1020]", "104 [104–124]", "100 [100–120]"]);
    assert_eq!(c[8], "2.00");
    let o = row(&t, "ib_atomic_lat", "ours");
    assert_eq!(&o[4..8], ["1104 [1104–1124]", "1100 [1100–1120]", "94 [94–114]", "90 [90–110]"]);
    let r = row(&t, "ib_atomic_lat", "**ours/C**");
    assert_eq!(&r[4..8], ["**1.10**", "**1.10**", "**0.90**", "**0.90**"]);
    assert_eq!(r[8], "**1.10**");
}

#[test]
fn no_doorbells_is_an_error_not_an_empty_table() {
    let t = "            bash-155     [000] .....  1000: sys_enter: NR 1 (1, 557a, 2, 0, 7, 73)\n";
    static CALLS: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!("rts-table-empty-{}-{}", std::process::id(), CALLS.fetch_add(1, Ordering::Relaxed)));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("tsc.txt"), "1000\n").unwrap();
    std::fs::write(dir.join("trace.ib_atomic_lat.c.1.txt"), t).unwrap();
    let out = Command::new("bash").arg(script()).arg(&dir).output().unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no doorbell events"));
}

#[test]
fn a_set_up_command_of_doorbell_size_is_not_a_doorbell() {
    // rperftest's set-up makes a 32-byte write() command before the loop, followed by other
    // commands: only the unbroken run of doorbells is the loop.
    let mut t = String::from(
        "       rperftest-401     [001] .....  10: sys_enter: NR 1 (3, 7f36, 20, 0, 0, 0)\n\
         \x20      rperftest-401     [001] .....  20: sys_exit: NR 1 = 32\n\
         \x20      rperftest-401     [001] .....  30: sys_enter: NR 1 (3, 7f36, 18, 0, 0, 0)\n\
         \x20      rperftest-401     [001] .....  40: sys_exit: NR 1 = 24\n",
    );
    t.push_str(&trace("rperftest", 401, 101, |_| 1000, |_| 100));
    let results = "ib_atomic_lat\tours\t1\t0\t8\t2000\t1.00\t9.00\t2.20\t2.3\t0.5\t3.0\t9.0\n";
    let (_, runs) = run_table(&[("trace.ib_atomic_lat.ours.1.txt", t)], results);
    assert_eq!(runs.trim_end(), "ib_atomic_lat\tours\t1\t101\t1000\t1000\t100\t100");
}

/// A ping-pong: client `cp` and server `sp` each ring `n` doorbells. Iteration i: the client
/// enters at t and spends 1000 inside; the server enters at t + cs(i), spends 1000 inside; the
/// client's next doorbell is sc(i) after the server's. `extra(i, t)` may add event lines.
fn ping_pong(n: u32, cs: impl Fn(u32) -> u64, sc: impl Fn(u32) -> u64, extra: impl Fn(u32, u64) -> Vec<(u64, String)>) -> String {
    let mut ev: Vec<(u64, String)> = Vec::new();
    let db = |pid: u32, cpu: u32, t: u64, ex: bool| {
        if ex {
            format!("       rperftest-{pid}     [00{cpu}] d....  {t}: sys_exit: NR 1 = 32")
        } else {
            format!("       rperftest-{pid}     [00{cpu}] .....  {t}: sys_enter: NR 1 (3, 7f363d483620, 20, 0, 0, 0)")
        }
    };
    let mut t = 1_000_000u64;
    for i in 0..n {
        ev.push((t, db(500, 1, t, false)));
        ev.push((t + 1000, db(500, 1, t + 1000, true)));
        let s = t + cs(i);
        ev.push((s, db(600, 0, s, false)));
        ev.push((s + 1000, db(600, 0, s + 1000, true)));
        ev.extend(extra(i, t));
        t = s + sc(i);
    }
    ev.sort_by_key(|e| e.0);
    ev.into_iter().map(|e| e.1 + "\n").collect()
}

fn run_tail(files: &[(&str, String)]) -> (String, String) {
    static CALLS: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!("rts-tail-test-{}-{}", std::process::id(), CALLS.fetch_add(1, Ordering::Relaxed)));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("tsc.txt"), "1000\n").unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let tail = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/round-trip-tail.sh");
    let out = Command::new("bash").arg(tail).arg(&dir).output().expect("run bash");
    let runs = std::fs::read_to_string(dir.join("tail-runs.tsv")).unwrap_or_default();
    std::fs::remove_dir_all(&dir).ok();
    assert!(out.status.success(), "tail script failed: {}", String::from_utf8_lossy(&out.stderr));
    (String::from_utf8(out.stdout).unwrap(), runs)
}

#[test]
fn ping_pong_halves_and_what_hit_the_slow_iterations() {
    // 101 round trips of 1300 ns (c→s 600, s→c 700); iteration 30 is 5000 ns slower in s→c with
    // a timer interrupt inside, iteration 60 is 3000 ns slower in c→s with a context switch.
    let pp = ping_pong(
        101,
        |i| if i == 60 { 3600 } else { 600 },
        |i| if i == 30 { 5700 } else { 700 },
        |i, t| match i {
            30 => vec![(t + 2000, format!("          <idle>-0       [001] d.h1.  {}: local_timer_entry: vector=236", t + 2000))],
            60 => vec![(t + 100, format!("          <idle>-0       [000] d..2.  {}: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=kworker/0:1 next_pid=40 next_prio=120", t + 100))],
            _ => vec![],
        },
    );
    let (t, runs) = run_tail(&[("trace.ib_write_lat.ours.1.txt", pp.clone()), ("server.ib_write_lat.ours.1", "600\n".into())]);
    // 101 client doorbells: 100 iterations. The p99 (rank 99 of 100) is the second slowest.
    let f: Vec<&str> = runs.trim_end().split('\t').collect();
    assert_eq!(&f[..11], ["ib_write_lat", "ours", "1", "1", "100", "1300", "4300", "1000", "600", "700", "2"], "{runs}");
    // slow: one with a switch, one with a timer, none quiet; excess c→s (0 + 3000) / 2, s→c
    // (5000 + 0) / 2; over all iterations one in a hundred had each event.
    assert_eq!(&f[11..20], ["0.50", "0.50", "0.00", "0.00", "0", "1500", "2500", "0.0100", "0.0100"], "{runs}");
    // one switch and one timer event in the trace; both slow iterations are over 2 × 1300; the
    // one the timer hit is one of them
    assert_eq!(&f[20..], ["1", "1", "2", "1", "1"], "{runs}");
    let r = row(&t, "ib_write_lat", "ours");
    assert_eq!(&r[3..9], ["1", "1300", "4300", "1000", "600", "700"], "{t}");

    // Without the server's pid file the two sides cannot be told apart: the script reads one of
    // them as a client-only loop rather than failing or guessing which side measured.
    let (_, runs) = run_tail(&[("trace.ib_write_lat.ours.1.txt", pp)]);
    assert_eq!(runs.split('\t').nth(3), Some("0"), "{runs}");
}

#[test]
fn client_only_loop_reports_the_time_between_doorbells() {
    let t = trace("rperftest", 401, 101, |i| if i == 10 { 9000 } else { 1000 }, |_| 100);
    let (_, runs) = run_tail(&[("trace.ib_atomic_lat.ours.1.txt", t), ("server.ib_atomic_lat.ours.1", "77\n".into())]);
    let f: Vec<&str> = runs.trim_end().split('\t').collect();
    // not a ping-pong (the server rang no doorbells); round trip 1100, the slow one 9100; c→s is
    // the time between doorbells (100), s→c is 0. The p99 (rank 99 of 100) is 1100, so all 100
    // iterations are at or above it: the excess of c_in is (8000 + 99 × 0) / 100.
    assert_eq!(&f[3..11], ["0", "100", "1100", "1100", "1000", "100", "0", "100"], "{runs}");
    assert_eq!(f[15], "80", "{runs}");
    // one iteration over 2 × 1100; no timer events
    assert_eq!(&f[22..], ["1", "0", "0"], "{runs}");
}
