//! `rperftest matrix`: every node pair of a cluster, on every rail, with perftest's tools.
//!
//! The pure parts (host lists, rounds, deadlines, judgement, records, the text matrix) are
//! kept apart from the parts that start processes, so that they can be tested without nodes.
//! Flow: options → preflight of every node at once (reachable? which rails, addresses, GIDs)
//! → per test and rail, rounds of pairs run at the same time → judgement → files and text.

// unsafe: kill(2) on the process groups of the sides it started.
pub mod agent;
#[forbid(unsafe_code)]
mod agents;
#[forbid(unsafe_code)]
pub mod args;
pub mod arp;
#[forbid(unsafe_code)]
pub mod cells;
#[forbid(unsafe_code)]
pub mod counters;
#[forbid(unsafe_code)]
pub mod dispatch;
#[forbid(unsafe_code)]
pub mod env;
pub mod exec;
#[forbid(unsafe_code)]
pub mod fanout;
#[forbid(unsafe_code)]
pub mod fuzzing;
#[forbid(unsafe_code)]
pub mod gpu;
#[forbid(unsafe_code)]
pub mod hostlist;
#[forbid(unsafe_code)]
pub mod html;
#[forbid(unsafe_code)]
pub mod judge;
pub mod launcher;
#[forbid(unsafe_code)]
mod loads;
#[forbid(unsafe_code)]
pub mod pair;
#[forbid(unsafe_code)]
pub mod pairsets;
#[forbid(unsafe_code)]
pub mod pattern;
pub mod plan;
#[forbid(unsafe_code)]
pub mod planopts;
#[forbid(unsafe_code)]
pub mod probe;
#[forbid(unsafe_code)]
pub mod push;
#[forbid(unsafe_code)]
pub mod report;
#[forbid(unsafe_code)]
pub mod rerun;
#[forbid(unsafe_code)]
pub mod results;
#[forbid(unsafe_code)]
pub mod resume;
#[forbid(unsafe_code)]
pub mod schedule;
#[forbid(unsafe_code)]
pub mod select;
#[forbid(unsafe_code)]
pub mod spill;
#[forbid(unsafe_code)]
pub mod view;
#[forbid(unsafe_code)]
pub mod wire;

use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

use args::{Config, Devices};
use cells::Cells;
use resume::Recorded;
use view::View;
use pair::{Endpoint, Job};
use probe::DevProbe;
use results::{JsonlLog, Record, Side, Status};

/// What the preflight found on a node.
enum NodeState {
    Up(Vec<DevProbe>),
    Down(String),
}

/// `rperftest matrix-probe` on every node, `--fanout` at a time, each bounded.
fn preflight(cfg: &Config, bin: &str, pushed: Option<&push::Pushed>) -> Vec<NodeState> {
    fanout::each(cfg.hosts.len(), cfg.fanout, |i| {
        if let Some(why) = pushed.and_then(|p| p.failed.get(i).cloned().flatten()) {
            return NodeState::Down(why);
        }
        match cfg.launcher.argv(&cfg.hosts[i], &[bin.to_string(), "matrix-probe".into()]) {
            Ok(argv) => probe_state(&argv, cfg.preflight),
            Err(e) => NodeState::Down(e),
        }
    })
}

/// One node's preflight: its devices from the probe's line, or why it is down.
fn probe_state(argv: &[String], bound: std::time::Duration) -> NodeState {
    match launcher::run_bounded(argv, bound) {
        Err(e) => NodeState::Down(format!("cannot start {}: {e}", argv[0])),
        Ok((None, _, err)) => NodeState::Down(format!(
            "no answer within the preflight bound of {} s{}",
            bound.as_secs(),
            err.last().map(|l| format!(": {l}")).unwrap_or_default()
        )),
        Ok((Some(code), out, err)) => match probe::find_in_output(&out) {
            Some((_, devs)) if code == 0 => NodeState::Up(devs),
            _ => NodeState::Down(format!(
                "{} exited {code}: {}",
                argv[0],
                err.iter().chain(out.iter()).rev().find(|l| !l.trim().is_empty()).map(String::as_str).unwrap_or("no probe output (is rperftest on the node? --remote-bin)")
            )),
        },
    }
}

/// A rail: its label, and per node the device on it (None: the node lacks it, with why).
struct Rail {
    label: String,
    per_node: Vec<Result<DevProbe, String>>,
}

fn rails(cfg: &Config, states: &[NodeState]) -> Vec<Rail> {
    match &cfg.devices {
        Devices::Named(names) => names
            .iter()
            .map(|name| Rail {
                label: name.clone(),
                per_node: states
                    .iter()
                    .map(|s| match s {
                        NodeState::Down(why) => Err(format!("unreachable: {why}")),
                        NodeState::Up(devs) => match devs.iter().find(|d| &d.name == name) {
                            None => Err(format!("has no device {name}")),
                            Some(d) if !d.active => Err(format!("{name} port 1 is {}", d.state)),
                            Some(d) => Ok(d.clone()),
                        },
                    })
                    .collect(),
            })
            .collect(),
        Devices::Auto => {
            let active: Vec<Option<Vec<DevProbe>>> = states
                .iter()
                .map(|s| match s {
                    NodeState::Up(d) => Some(d.iter().filter(|d| d.active).cloned().collect()),
                    NodeState::Down(_) => None,
                })
                .collect();
            let n = active.iter().flatten().map(Vec::len).max().unwrap_or(0);
            (0..n)
                .map(|k| {
                    let names: HashSet<&str> = active.iter().flatten().filter_map(|v| v.get(k)).map(|d| d.name.as_str()).collect();
                    let label = if names.len() == 1 { names.into_iter().next().unwrap_or_default().to_string() } else { format!("rail{k}") };
                    let per_node = active
                        .iter()
                        .zip(states)
                        .map(|(a, s)| match (a, s) {
                            (_, NodeState::Down(why)) => Err(format!("unreachable: {why}")),
                            (Some(v), _) => v.get(k).cloned().ok_or_else(|| format!("has {} active device(s), no rail {k}", v.len())),
                            (None, _) => Err("unreachable".into()),
                        })
                        .collect();
                    Rail { label, per_node }
                })
                .collect()
        }
    }
}

/// The wire check ([`wire`], two rails or more): a NIC on another rail's segment is named in
/// the notes (so the run exits 1) and its pairs on its rail are skipped with why.
fn wire_check(cfg: &Config, bin: &str, rails: &mut [Rail], notes: &mut Vec<String>) {
    if rails.len() < 2 {
        return;
    }
    let t = Instant::now();
    let found: Vec<(usize, usize, String, String)> = {
        let views: Vec<wire::RailView> = rails
            .iter()
            .map(|r| wire::RailView {
                label: &r.label,
                per_node: r
                    .per_node
                    .iter()
                    .map(|d| d.as_ref().ok().filter(|d| d.ethernet))
                    .collect(),
            })
            .collect();
        let remote: Vec<Option<Vec<String>>> = wire::requests(&views, cfg.hosts.len())
            .into_iter()
            .map(|r| r.map(|specs| [vec![bin.to_string(), "matrix-wire".into()], specs].concat()))
            .collect();
        let asked = remote.iter().flatten().count();
        let answers = fanout::run_all(
            &cfg.launcher,
            &cfg.hosts,
            &remote,
            wire::PREFIX,
            cfg.preflight + wire::LISTEN,
            cfg.fanout,
        );
        let (found, warn) = wire::judge(&views, &cfg.hosts, &answers);
        eprintln!(
            "wire check: {asked} node(s), {} NIC(s) on another rail's segment, in {:.1} s",
            found.len(),
            t.elapsed().as_secs_f64()
        );
        for w in &warn {
            eprintln!("  wire check not done on {w}");
        }
        found
            .iter()
            .map(|m| (m.node, m.rail, m.line(&cfg.hosts, &views), m.reason(&views)))
            .collect()
    };
    for (node, rail, line, reason) in found {
        rails[rail].per_node[node] = Err(reason);
        notes.push(line);
    }
}

/// `--preflight-only`: each rail's NICs (or why a node has none on it), then the notes;
/// true when nothing is wrong.
fn preflight_report(cfg: &Config, rails: &[Rail], notes: &[String]) -> bool {
    for r in rails {
        let ok = r.per_node.iter().filter(|d| d.is_ok()).count();
        println!("rail {}: {ok} of {} node(s)", r.label, cfg.hosts.len());
        for (n, d) in cfg.hosts.iter().zip(&r.per_node) {
            match d {
                Ok(d) => println!(
                    "  {n} {} {} {}",
                    d.name,
                    d.ipv4.as_deref().unwrap_or("-"),
                    d.rate
                ),
                Err(e) => println!("  {n} {e}"),
            }
        }
    }
    for n in notes {
        println!("{n}");
    }
    println!(
        "preflight: {}",
        if notes.is_empty() {
            "every node up, every NIC on its rail"
        } else {
            "not OK"
        }
    );
    notes.is_empty()
}

fn endpoint(node: &str, d: &DevProbe) -> Endpoint {
    Endpoint {
        node: node.to_string(),
        dev: d.name.clone(),
        addr: d.ipv4.clone().unwrap_or_else(|| node.to_string()),
        gid_index: d.gid_index,
        rate: d.rate.clone(),
        gpu: d.gpu.clone(),
    }
}

/// Why pair `p` cannot run on `rail`, when a node lacks it: UNREACHABLE when either node is
/// down, else SKIPPED, with each such node's reason; None when both nodes have the rail.
fn not_run_why(rail: &Rail, p: &schedule::Pair, hosts: &[String]) -> Option<(Status, String)> {
    let why: Vec<(bool, String)> = [p.a, p.b]
        .into_iter()
        .filter_map(|i| rail.per_node[i].as_ref().err().map(|e| (e.starts_with("unreachable"), format!("{} {e}", hosts[i]))))
        .collect();
    if why.is_empty() {
        return None;
    }
    let status = if why.iter().any(|(down, _)| *down) { Status::Unreachable } else { Status::Skipped };
    Some((status, why.into_iter().map(|(_, w)| w).collect::<Vec<_>>().join("; ")))
}

/// A record for a pair that never ran (status, reason, round and options to be filled in).
fn not_run(test: &str, rail: &str, a: &str, b: &str, unit: &str) -> Record {
    let side = |n: &str| Side { node: n.to_string(), ..Side::default() };
    Record {
        test: test.into(),
        rail: rail.into(),
        round: 0,
        port: 0,
        options: Vec::new(),
        server: side(a),
        client: side(b),
        status: Status::Skipped,
        reason: String::new(),
        value: None,
        unit: unit.into(),
        median: None,
        started_unix: 0.0,
        wall_s: 0.0,
        deadline_s: 0.0,
        retried: None,
        pattern: results::PAIRS.into(),
    }
}

fn key_of(test: &str, rail: &str, a: &str, b: &str) -> (String, String, String, String) {
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    (test.into(), rail.into(), lo.into(), hi.into())
}

/// A pair's identity for `--resume` and re-runs: the two nodes in either order, or with
/// `--both-directions` in order (server, client).
fn pair_key(cfg: &Config, test: &str, rail: &str, server: &str, client: &str) -> (String, String, String, String) {
    if cfg.both_directions {
        (test.into(), rail.into(), server.into(), client.into())
    } else {
        key_of(test, rail, server, client)
    }
}

fn rec_key(cfg: &Config, r: &Record) -> (String, String, String, String) {
    pair_key(
        cfg,
        &r.test,
        &rail_key(&r.rail, &r.pattern, r.round),
        &r.server.node,
        &r.client.node,
    )
}

/// The rail part of a record's key: a fabric pattern's flow is one of its step, so the
/// pattern and the step are part of it (a bisection may draw a pair twice).
fn rail_key(rail: &str, pattern: &str, step: usize) -> String {
    if pattern == results::PAIRS {
        rail.to_string()
    } else {
        format!("{rail}|{pattern}|{step}")
    }
}

/// The rounds of one test and rail (schedule::rounds).
fn all_rounds(cfg: &Config) -> schedule::Rounds {
    schedule::Rounds::new(cfg.hosts.len(), cfg.serial, cfg.both_directions)
}

/// Re-run rounds for suspect pairs: each pair in the first round where neither node is busy
/// (or one per round with `--serial`).
fn pack(cfg: &Config, pairs: Vec<schedule::Pair>) -> Vec<Vec<schedule::Pair>> {
    let mut rounds: Vec<Vec<schedule::Pair>> = Vec::new();
    for p in pairs {
        let free = |r: &Vec<schedule::Pair>| !cfg.serial && r.iter().all(|q| ![q.a, q.b].contains(&p.a) && ![q.a, q.b].contains(&p.b));
        match rounds.iter_mut().find(|r| free(r)) {
            Some(r) => r.push(p),
            None => rounds.push(vec![p]),
        }
    }
    rounds
}

/// What a person watching the run sees: a line per finished pair, and on a terminal a status
/// line under them, redrawn each second (round, pairs done, not OK, elapsed, ETA).
struct Progress {
    tty: bool,
    t0: Instant,
    total: usize,
    /// Pairs recorded before this invocation (`--resume`): not part of the rate.
    resumed: usize,
    finished: usize,
    not_ok: usize,
    /// `ib_write_bw rxe0 round 2/3`.
    phase: String,
    drawn: bool,
}

impl Progress {
    fn clear(&mut self) {
        if self.tty && self.drawn {
            eprint!("\r\x1b[K");
            self.drawn = false;
        }
    }

    fn pair(&mut self, rec: &Record) {
        self.clear();
        self.finished += 1;
        if rec.status != Status::Ok {
            self.not_ok += 1;
        }
        eprintln!(
            "[{}] {} - {}: {}{} in {:.1} s ({}/{} pairs, {} not OK, {:.0} s elapsed)",
            self.phase,
            rec.server.node,
            rec.client.node,
            rec.status.name(),
            rec.value.map(|v| format!(" {v:.2} {}", rec.unit)).unwrap_or_else(|| format!(": {}", rec.reason)),
            rec.wall_s,
            self.finished,
            self.total,
            self.not_ok,
            self.t0.elapsed().as_secs_f64(),
        );
        self.draw();
    }

    fn draw(&mut self) {
        if !self.tty {
            return;
        }
        let secs = self.t0.elapsed().as_secs_f64();
        let ran = self.finished.saturating_sub(self.resumed);
        let eta = if ran > 0 && self.total > self.finished {
            format!(", ETA {:.0} s", secs / ran as f64 * (self.total - self.finished) as f64)
        } else {
            String::new()
        };
        eprint!("\r\x1b[K{}: {}/{} pairs done, {} not OK, {secs:.0} s{eta}", self.phase, self.finished, self.total, self.not_ok);
        self.drawn = true;
    }
}

/// Run one round's jobs at once; each record is logged the moment its pair ends, then handed
/// to `keep`. `Err` on a write error of results.jsonl.
fn run_round(cfg: &Config, bin: &str, jobs: &[Job], prog: &mut Progress, log: &mut JsonlLog, keep: &mut dyn FnMut(Record)) -> Result<(), String> {
    let (tx, rx) = std::sync::mpsc::channel::<Record>();
    let mut io_err = None;
    std::thread::scope(|s| {
        for job in jobs {
            let tx = tx.clone();
            let l = &cfg.launcher;
            s.spawn(move || {
                if let Some(rec) = pair::run(l, bin, job) {
                    let _ = tx.send(rec);
                }
            });
        }
        drop(tx);
        loop {
            match rx.recv_timeout(std::time::Duration::from_secs(1)) {
                Ok(rec) => {
                    prog.pair(&rec);
                    if let Err(e) = log.append(&rec) {
                        io_err = Some(format!("results.jsonl: {e}"));
                    }
                    keep(rec);
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => prog.draw(),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
    });
    io_err.map_or(Ok(()), Err)
}

/// `rperftest matrix`; `env` is what the binary read from the process environment.
pub fn run(argv: &[String], env: &args::Env) -> u8 {
    let cfg = match args::parse_config(argv, env) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    if let Some(p) = &cfg.plan {
        return plan::print(&cfg, p);
    }
    match run_config(&cfg) {
        Ok(all_ok) => u8::from(!all_ok),
        Err(e) => {
            eprintln!("rperftest matrix: {e}");
            2
        }
    }
}

fn run_config(cfg: &Config) -> Result<bool, String> {
    cfg.launcher.open_shared().map_err(|e| format!("cannot make a private directory for ssh connection sharing: {e}"))?;
    let pushed = if cfg.push {
        let t = Instant::now();
        match push::push(&cfg.launcher, &cfg.hosts, cfg.preflight) {
            Ok(p) => {
                let n = p.failed.iter().filter(|f| f.is_none()).count();
                eprintln!("push: this binary to {} in {n} of {} node(s) in {:.1} s", p.bin, cfg.hosts.len(), t.elapsed().as_secs_f64());
                Some(p)
            }
            Err(e) => {
                cfg.launcher.close_shared(&cfg.hosts);
                return Err(e);
            }
        }
    } else {
        None
    };
    let bin = pushed.as_ref().map_or(cfg.remote_bin.clone(), |p| p.bin.clone());
    let r = run_shared(cfg, &bin, pushed.as_ref());
    if let Some(p) = &pushed {
        let left = push::remove(&cfg.launcher, &cfg.hosts, p);
        for l in &left {
            eprintln!("push: {l}");
        }
        if left.is_empty() {
            eprintln!("push: {} removed from every node", p.dir);
        }
    }
    cfg.launcher.close_shared(&cfg.hosts);
    r
}

/// A pair's identity: test, rail and the two nodes (see [`pair_key`]).
type PairKey = (String, String, String, String);

/// `--resume`: the records already in results.jsonl, the last one of each pair (in the order
/// their pairs first appear), and their identities. Without it, an existing results.jsonl is
/// an error (another run's records are not mixed in).
fn resumed(cfg: &Config, jsonl: &std::path::Path) -> Result<(Cells, Recorded), String> {
    let mut done = Cells::spilling(&cfg.out, cells::SPILL_AFTER);
    if !cfg.resume {
        if jsonl.exists() {
            return Err(format!("{} exists: give --resume to continue that run, or another --out", jsonl.display()));
        }
        return Ok((done, Recorded::none(&cfg.hosts, cfg.both_directions)));
    }
    // A pair re-run before the stop is in the file twice: the later record is the one.
    let (have, bad) = Recorded::read(jsonl, &cfg.hosts, cfg.both_directions, &mut done).map_err(|e| format!("{}: {e}", jsonl.display()))?;
    eprintln!("resume: {} pair(s) already in {}{}", done.len(), jsonl.display(), if bad > 0 { format!(" ({bad} unreadable line(s) skipped)") } else { String::new() });
    Ok((done, have))
}

/// [`preflight`] with its lines on stderr: the node states, and a note per unreachable node.
fn preflight_noted(cfg: &Config, bin: &str, pushed: Option<&push::Pushed>) -> (Vec<NodeState>, Vec<String>) {
    let launcher_name = match cfg.launcher.kind {
        launcher::Kind::Ssh => "ssh",
        launcher::Kind::Srun => "srun",
    };
    eprintln!("preflight: {} node(s) over {launcher_name}, {} at a time, bound {} s each", cfg.hosts.len(), cfg.fanout.min(cfg.hosts.len()), cfg.preflight.as_secs());
    let t_pre = Instant::now();
    let states = preflight(cfg, bin, pushed);
    let mut notes = Vec::new();
    for (n, s) in cfg.hosts.iter().zip(&states) {
        if let NodeState::Down(why) = s {
            notes.push(format!("{n} unreachable: {why}"));
        }
    }
    eprintln!("preflight: {} of {} node(s) up in {:.1} s", states.iter().filter(|s| matches!(s, NodeState::Up(_))).count(), cfg.hosts.len(), t_pre.elapsed().as_secs_f64());
    for n in &notes {
        eprintln!("  {n}");
    }
    (states, notes)
}

/// One test on one rail: what the jobs of its rounds and re-runs share.
struct TestOnRail<'a> {
    cfg: &'a Config,
    t: &'a args::TestSpec,
    /// `t`'s tool name.
    test: &'a str,
    rail: &'a Rail,
    deadline: std::time::Duration,
    /// Added to the port slot: rail j's pairs use their own ports under `--rails-parallel`.
    port_offset: usize,
}

impl TestOnRail<'_> {
    /// Do both nodes of pair `p` have the rail (so that it has a job)?
    fn runs(&self, p: &schedule::Pair) -> bool {
        self.rail.per_node[p.a].is_ok() && self.rail.per_node[p.b].is_ok()
    }

    /// The job of pair `p` in round `r`, on port slot `slot`; None when a node lacks the rail.
    fn job(&self, p: &schedule::Pair, r: usize, slot: usize) -> Option<Job> {
        let (cfg, t, rail, deadline) = (self.cfg, self.t, self.rail, self.deadline);
        match (&rail.per_node[p.a], &rail.per_node[p.b]) {
            (Ok(da), Ok(db)) => Some(Job {
                tool: t.tool,
                rail: rail.label.clone(),
                round: r,
                port: cfg.port_base + u16::try_from(self.port_offset + slot).unwrap_or(0),
                server: endpoint(&cfg.hosts[p.a], da),
                client: endpoint(&cfg.hosts[p.b], db),
                options: cfg.options.clone(),
                deadline,
                setup: cfg.floors.setup,
                unit: t.unit.clone(),
                pattern: results::PAIRS.into(),
            }),
            _ => None,
        }
    }
}

/// A matrix run's state after the preflight: the records so far, the log they go to, the
/// progress shown, and the notes and re-run lines for the report.
struct MatrixRun<'a> {
    cfg: &'a Config,
    bin: &'a str,
    t_start: Instant,
    jsonl: std::path::PathBuf,
    log: JsonlLog,
    /// Every record so far, resumed ones first, a compact cell each.
    done: Cells,
    /// The pairs recorded before this invocation (`--resume`): not run again.
    have: Recorded,
    notes: Vec<String>,
    /// Worked out when asked: at 1,024 nodes a table would be half a million pairs.
    rounds: schedule::Rounds,
    total: usize,
    prog: Progress,
    /// Each re-run pair (its index in `done`) and the start of its line, which the final
    /// judgement finishes.
    retried: Vec<(usize, String)>,
    stopped: bool,
    /// The fabric patterns' lines: counters that moved, per step.
    loads: Vec<String>,
}

fn run_shared(cfg: &Config, bin: &str, pushed: Option<&push::Pushed>) -> Result<bool, String> {
    let t_start = Instant::now();
    bench_core::signal::install();
    std::fs::create_dir_all(&cfg.out).map_err(|e| format!("--out {}: {e}", cfg.out.display()))?;
    let jsonl = cfg.out.join("results.jsonl");
    let (done, have) = resumed(cfg, &jsonl)?;
    let log = JsonlLog::open(&cfg.out).map_err(|e| format!("{}: {e}", jsonl.display()))?;

    let (states, mut notes) = preflight_noted(cfg, bin, pushed);
    let mut rails = rails(cfg, &states);
    wire_check(cfg, bin, &mut rails, &mut notes);
    if let Some(mode) = cfg.gpu {
        // Each node's GPU for each rail; a node without one sits the rail out, named.
        for slot in rails.iter_mut().flat_map(|r| r.per_node.iter_mut()) {
            if let Ok(d) = slot {
                match gpu::choose(mode, &d.name, &d.gpus) {
                    Ok(p) => d.gpu = Some(p),
                    Err(e) => *slot = Err(e),
                }
            }
        }
    }
    if rails.is_empty() {
        notes.push("no rail: no reachable node has an active RDMA port".into());
    }
    if cfg.preflight_only {
        return Ok(preflight_report(cfg, &rails, &notes));
    }
    let rounds = all_rounds(cfg);
    let per_rail: usize = rounds.pairs();
    let per_test: usize = cfg
        .patterns
        .iter()
        .map(|&p| match p {
            pattern::Pattern::Pairs => per_rail,
            p => pattern::steps(p, cfg.hosts.len(), &cfg.knobs)
                .iter()
                .map(|s| s.flows.len())
                .sum(),
        })
        .sum();
    let total = cfg.tests.len() * rails.len() * per_test;
    let prog = Progress {
        tty: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        t0: t_start,
        total,
        resumed: done.len(),
        finished: done.len(),
        not_ok: done.iter().filter(|r| r.status() != Status::Ok).count(),
        phase: String::new(),
        drawn: false,
    };
    let mut run = MatrixRun { cfg, bin, t_start, jsonl, log, done, have, notes, rounds, total, prog, retried: Vec::new(), stopped: false, loads: Vec::new() };
    let widest = run.rounds.width(0);
    if cfg.rails_parallel && usize::from(cfg.port_base) + rails.len() * widest > usize::from(u16::MAX) {
        return Err(format!("--port-base {}: {} rails of {widest} pairs at once do not fit below 65536", cfg.port_base, rails.len()));
    }
    'phases: for t in &cfg.tests {
        let test = t.tool.name();
        let deadline = schedule::pair_deadline(&t.params, &cfg.floors);
        for &p in &cfg.patterns {
            if p != pattern::Pattern::Pairs {
                run.load_pattern(&loads::PatternOn { cfg, t, test, rails: &rails, deadline, pattern: p })?;
                if run.stopped {
                    break 'phases;
                }
                continue;
            }
            let ons: Vec<TestOnRail> = rails.iter().enumerate().map(|(j, rail)| TestOnRail { cfg, t, test, rail, deadline, port_offset: if cfg.rails_parallel { j * widest } else { 0 } }).collect();
            // --rails-parallel: every rail's pairs in one dispatch; else one rail after another.
            let groups: Vec<&[TestOnRail]> = if cfg.rails_parallel { vec![&ons[..]] } else { ons.chunks(1).collect() };
            for g in groups {
                run.test_on_rails(g)?;
                if run.stopped {
                    break 'phases;
                }
            }
        }
    }
    let retried = run.final_judgement();
    run.report(&retried)
}

impl MatrixRun<'_> {
    /// Was the pair (a pattern's flow: with its step) recorded before this invocation?
    fn recorded(&self, phase: cells::Phase, a: &str, b: &str) -> bool {
        self.have.contains(&self.done, phase, a, b)
    }

    /// Every pair of one test on some rails (one, or all with `--rails-parallel`): the
    /// rounds, then the re-runs of suspects, rail by rail. Sets `stopped` when a signal ends
    /// the run.
    fn test_on_rails(&mut self, ons: &[TestOnRail]) -> Result<(), String> {
        for on in ons {
            self.record_not_run(on)?;
        }
        self.run_rounds(ons)?;
        for on in ons {
            if self.stopped || !self.cfg.retry {
                return Ok(());
            }
            self.rerun_suspects(on)?;
        }
        Ok(())
    }

    /// A pair that cannot run, recorded at once (results.jsonl, the records, the progress).
    fn log_not_run(&mut self, rec: Record) -> Result<(), String> {
        self.log.append(&rec).map_err(|e| format!("{}: {e}", self.jsonl.display()))?;
        self.done.push(&rec);
        self.prog.finished += 1;
        self.prog.not_ok += 1;
        Ok(())
    }

    /// Pairs that cannot run are recorded at once, not waited for.
    fn record_not_run(&mut self, on: &TestOnRail) -> Result<(), String> {
        let (cfg, test, rail, t) = (self.cfg, on.test, on.rail, on.t);
        let mut recs = Vec::new();
        for r in 0..self.rounds.len() {
            for p in self.rounds.round(r) {
                let (a, b) = (&cfg.hosts[p.a], &cfg.hosts[p.b]);
                if self.recorded(cells::Phase { test, rail: &rail.label, pattern: results::PAIRS, step: 0 }, a, b) {
                    continue;
                }
                if let Some((status, reason)) = not_run_why(rail, &p, &cfg.hosts) {
                    let mut rec = not_run(test, &rail.label, a, b, &t.unit);
                    (rec.status, rec.reason, rec.round, rec.options) = (status, reason, r, cfg.options.clone());
                    recs.push(rec);
                }
            }
        }
        recs.into_iter().try_for_each(|rec| self.log_not_run(rec))
    }

    /// Every pair of the rounds on the rails `ons` that can run and is not recorded yet, each
    /// started as soon as both of its nodes are free on its rail (no barrier between rounds:
    /// dispatch.rs); pair k of round r keeps port `--port-base` + k (+ the rail's offset). A
    /// signal starts nothing new and sets `stopped`.
    fn run_rounds(&mut self, ons: &[TestOnRail]) -> Result<(), String> {
        let (cfg, n) = (self.cfg, self.cfg.hosts.len());
        let at_once = if cfg.serial { 1 } else { cfg.max_pairs.unwrap_or(usize::MAX) };
        // The pairs to run are the rounds' pairs on each rail (rail j's resources are its
        // nodes + n x j), less those recorded or lacking the rail: the dispatcher keeps them
        // as bits and hands out (rail, round, slot); a pair's job is made when it starts.
        let wanted = |at: dispatch::At, p: schedule::Pair| {
            let on = &ons[at.place];
            !self.recorded(cells::Phase { test: on.test, rail: &on.rail.label, pattern: results::PAIRS, step: 0 }, &cfg.hosts[p.a], &cfg.hosts[p.b]) && on.runs(&p)
        };
        let rounds = self.rounds;
        let d = dispatch::Dispatcher::worked(rounds, n, ons.len(), at_once, wanted)?;
        if d.done() {
            return Ok(());
        }
        self.prog.phase = format!("{} {}", ons[0].test, ons.iter().map(|o| o.rail.label.as_str()).collect::<Vec<_>>().join("+"));
        let (bin, l, log, done) = (self.bin, &cfg.launcher, &mut self.log, &mut self.done);
        let prog = std::cell::RefCell::new(&mut self.prog);
        let hooks = dispatch::Hooks {
            launch: |at: dispatch::At| {
                let p = rounds.pair(at.round, at.slot);
                pair::run(l, bin, &ons[at.place].job(&p, at.round, at.slot)?)
            },
            each: |_, rec: Record| {
                prog.borrow_mut().pair(&rec);
                log.append(&rec).map_err(|e| format!("{}: results.jsonl: {e}", cfg.out.display()))?;
                done.push(&rec);
                Ok(())
            },
            stop: bench_core::signal::requested,
            tick: || prog.borrow_mut().draw(),
        };
        self.stopped |= dispatch::run(d, hooks)?;
        Ok(())
    }

    /// Suspects (judged as the end will judge them) run once more, in later rounds, and
    /// the judgement is made again while re-runs bring new ones (rerun::settle).
    fn rerun_suspects(&mut self, on: &TestOnRail) -> Result<(), String> {
        let (cfg, bin, test, rail) = (self.cfg, self.bin, on.test, on.rail);
        let index_of = |node: &str| cfg.hosts.iter().position(|h| h == node);
        self.done.error().map_err(|e| cells_failed(cfg, &e))?;
        let mut group = self.done.group(test, &rail.label);
        let (prog, log, stopped) = (&mut self.prog, &mut self.log, &mut self.stopped);
        let rounds = &self.rounds;
        let mut extra = 0;
        let mut pass = 0;
        let settled = rerun::settle(&mut group, &cfg.rules, rerun::MAX_PASSES, |r| rec_key(cfg, r), |suspects| -> Result<Vec<Record>, String> {
            let pairs: Vec<schedule::Pair> = suspects
                .iter()
                .filter_map(|r| Some(schedule::Pair { a: index_of(&r.server.node)?, b: index_of(&r.client.node)? }))
                .collect();
            let again = pack(cfg, pairs);
            pass += 1;
            let mut fresh = Vec::new();
            for (k, round) in again.iter().enumerate() {
                if *stopped || bench_core::signal::requested() {
                    *stopped = true;
                    break;
                }
                let jobs: Vec<Job> = round.iter().enumerate().filter_map(|(slot, p)| on.job(p, rounds.len() + extra, slot)).collect();
                extra += 1;
                prog.phase = format!("{test} {} re-run pass {pass}, {}/{}", rail.label, k + 1, again.len());
                prog.total += jobs.len();
                run_round(cfg, bin, &jobs, prog, log, &mut |r: Record| fresh.push(r.slim())).map_err(|e| format!("{}: {e}", cfg.out.display()))?;
                // The pair counts once in the totals.
                prog.total -= jobs.len();
                prog.finished -= jobs.len().min(prog.finished);
            }
            Ok(fresh)
        })?;
        for &g in &settled.rerun {
            let rec = group.record(g);
            let was = rec.retried.as_deref().unwrap_or_default();
            // Its verdict comes from the final judgement (a re-run is LOW only against
            // the median of its test and rail), so the line is finished after it.
            self.retried.push((g, format!("re-run {} - {} ({test}, {}): first {was}; then", rec.server.node, rec.client.node, rail.label)));
        }
        prog.not_ok = self.done.iter().filter(|r| r.status() != Status::Ok).count();
        Ok(())
    }

    /// The verdicts reported (rerun::final_verdict), with its notes; returns the re-run
    /// lines, finished with each pair's final status.
    fn final_judgement(&mut self) -> Vec<String> {
        let cfg = self.cfg;
        self.prog.clear();
        // No pair is LOW without its re-run: pairs the passes or a stop left are named instead.
        self.notes.extend(rerun::final_verdict(self.done.verdicts(), &cfg.rules, cfg.retry));
        let done = &self.done;
        std::mem::take(&mut self.retried)
            .into_iter()
            .map(|(i, line)| format!("{line} {}", done.view(i).status().name()))
            .collect()
    }

    /// results.jsonl rewritten with the verdicts, results.csv, the text matrix and its lines
    /// on stdout, report.html. Ok(true) when the run is complete and every pair is OK.
    fn report(mut self, retried: &[String]) -> Result<bool, String> {
        let (cfg, done, notes, jsonl, total, stopped) = (self.cfg, &self.done, &self.notes, &self.jsonl, self.total, self.stopped);
        // A failure of the cells' file (the disk full) leaves cells unread: no verdict from them.
        let cells_ok = || done.error().map_err(|e| cells_failed(cfg, &e));
        cells_ok()?;
        self.log.rewrite_by(done.len(), |k, full| done.line_cell(k, full), |i| done.record(i)).map_err(|e| format!("{}: {e}", jsonl.display()))?;
        let csv = cfg.out.join("results.csv");
        let file = std::fs::File::create(&csv).map_err(|e| format!("{}: {e}", csv.display()))?;
        results::write_csv(file, (0..done.len()).map(|i| done.record(i))).map_err(|e| format!("{}: {e}", csv.display()))?;
        let pairs = || done.iter().filter(|r| r.pattern() == results::PAIRS);
        print!("{}", report::text(&cfg.hosts, pairs()));
        print!("{}", report::grid(&cfg.hosts, pairs()));
        let sides = done.iter().flat_map(|r| [r.server(), r.client()]);
        for line in gpu::pairing_lines(sides.filter_map(|s| Some((s.node.as_str(), s.dev.as_str(), s.gpu.as_ref()?)))) {
            println!("{line}");
        }
        // The node diagnosis is the pairs' (one pair per node at a time); a pattern's flows
        // share ports by design, and its counters name the NIC.
        let mut diag = judge::diagnose(pairs());
        let fabric = fabric_records(done);
        diag.extend(pattern::step_lines(&fabric));
        diag.extend(pattern::all_rails_lines(&fabric));
        diag.extend(self.loads.iter().cloned());
        for line in notes.iter().chain(retried).chain(&diag) {
            println!("{line}");
        }
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for r in done.iter() {
            *counts.entry(r.status().name()).or_default() += 1;
        }
        let summary: Vec<String> = counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
        let line = format!("{} pair(s) in {} round(s): {}; {:.1} s", done.len(), self.rounds.len(), summary.join(", "), self.t_start.elapsed().as_secs_f64());
        let html_path = cfg.out.join("report.html");
        let notes_all: Vec<String> = notes.iter().chain(retried).cloned().collect();
        let page = html::page(&cfg.hosts, pairs(), &notes_all, &diag, &line)?;
        std::fs::write(&html_path, page).map_err(|e| format!("{}: {e}", html_path.display()))?;
        println!("{line}; {}, {} and {}", jsonl.display(), csv.display(), html_path.display());
        if stopped {
            println!("stopped by a signal: {} of {total} pairs recorded; --resume runs the rest", done.len());
        }
        cells_ok()?;
        let complete = !stopped && done.len() >= total;
        // No rail or a node down is never a pass, even with no pair recorded.
        Ok(complete && total > 0 && notes.is_empty() && done.iter().all(|r| r.status() == Status::Ok))
    }
}

/// The line for a failure of the cells' file ([`Cells::error`]): the run's verdicts are not
/// to be trusted, and what to do about it.
fn cells_failed(cfg: &Config, e: &str) -> String {
    format!("{}: {e} (past {} pairs the run keeps its cells in a file there: free some space or give another --out, then --resume)", cfg.out.display(), cells::SPILL_AFTER)
}

/// The records the fabric patterns' lines read ([`pattern::step_lines`],
/// [`pattern::all_rails_lines`]), in the run's order: every flow of a pattern, and each pair
/// that a flow not OK under all-rail load is compared with alone.
fn fabric_records(done: &Cells) -> Vec<Record> {
    let all_rails = pattern::Pattern::AllRails.name();
    let compared: HashSet<PairKey> = done.iter().filter(|r| r.pattern() == all_rails && r.status() != Status::Ok).map(|r| r.key()).collect();
    (0..done.len())
        .filter(|&i| {
            let r = done.view(i);
            r.pattern() != results::PAIRS || (!compared.is_empty() && compared.contains(&r.key()))
        })
        .map(|i| done.record(i))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(extra: &[&str]) -> Config {
        let mut a: Vec<String> = ["--hosts", "n[1-5]", "--out", "/tmp/x", "--launcher", "ssh"].iter().map(|s| s.to_string()).collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        args::parse_config(&a, &args::Env::default()).expect("parse")
    }

    #[test]
    fn both_directions_runs_every_ordered_pair_once() {
        let c = cfg(&["--both-directions"]);
        let worked = all_rounds(&c);
        let rounds: Vec<Vec<schedule::Pair>> = (0..worked.len()).map(|r| worked.round(r).collect()).collect();
        assert_eq!(rounds.len(), 10, "5 rounds each way for 5 nodes");
        let mut seen: Vec<(usize, usize)> = rounds.iter().flatten().map(|p| (p.a, p.b)).collect();
        seen.sort_unstable();
        let want: Vec<(usize, usize)> = (0..5).flat_map(|a| (0..5).filter(move |&b| b != a).map(move |b| (a, b))).collect();
        assert_eq!(seen, want);
        for r in &rounds {
            let mut nodes: Vec<usize> = r.iter().flat_map(|p| [p.a, p.b]).collect();
            nodes.sort_unstable();
            nodes.dedup();
            assert_eq!(nodes.len(), 2 * r.len(), "a node twice in a round");
        }
        // Keys: ordered with --both-directions, unordered without.
        assert_ne!(pair_key(&c, "t", "r", "n1", "n2"), pair_key(&c, "t", "r", "n2", "n1"));
        let c1 = cfg(&[]);
        assert_eq!(pair_key(&c1, "t", "r", "n1", "n2"), pair_key(&c1, "t", "r", "n2", "n1"));
        assert_eq!(all_rounds(&c1).pairs(), 10);
    }

    #[test]
    fn a_node_short_of_a_rail_sits_that_rail_out_with_why() {
        let c = cfg(&[]);
        let dev = |name: &str| DevProbe {
            name: name.into(),
            active: true,
            state: "ACTIVE".into(),
            rate: String::new(),
            ethernet: true,
            ipv4: None,
            gid_index: None,
            netdev: None,
            mac: None,
            prefix: None,
            gpus: Vec::new(),
            gpu: None,
        };
        let two = || NodeState::Up(vec![dev("rxe0"), dev("rxe1")]);
        let states = vec![two(), two(), two(), NodeState::Up(vec![dev("rxe0")]), NodeState::Down("ssh: timed out".into())];
        let r = rails(&c, &states);
        assert_eq!(r.iter().map(|r| r.label.as_str()).collect::<Vec<_>>(), ["rxe0", "rxe1"]);
        assert!(r[0].per_node[3].is_ok());
        assert_eq!(r[1].per_node[3].as_ref().err().map(String::as_str), Some("has 1 active device(s), no rail 1"));
        assert_eq!(r[1].per_node[4].as_ref().err().map(String::as_str), Some("unreachable: ssh: timed out"));
    }

    #[test]
    fn re_runs_are_packed_so_that_no_node_is_in_two_pairs() {
        let c = cfg(&[]);
        let p = |a, b| schedule::Pair { a, b };
        let r = pack(&c, vec![p(0, 1), p(1, 2), p(3, 4), p(0, 2), p(2, 3)]);
        assert_eq!(r, vec![vec![p(0, 1), p(3, 4)], vec![p(1, 2)], vec![p(0, 2)], vec![p(2, 3)]]);
        let serial = cfg(&["--serial"]);
        assert_eq!(pack(&serial, vec![p(0, 1), p(3, 4)]).len(), 2);
    }

    #[test]
    fn ssh_runs_get_agents_unless_asked_and_max_pairs_is_a_bound() {
        assert!(cfg(&[]).launcher.agents.is_some());
        assert!(cfg(&["--no-agent"]).launcher.agents.is_none());
        assert_eq!((cfg(&[]).max_pairs, cfg(&["--max-pairs", "3"]).max_pairs), (None, Some(3)));
        let a = |extra: &[&str]| {
            let mut a: Vec<String> = ["--hosts", "n[1-5]", "--out", "/tmp/x"].iter().map(|s| s.to_string()).collect();
            a.extend(extra.iter().map(|s| s.to_string()));
            args::parse_config(&a, &args::Env::default()).is_ok()
        };
        assert!(!a(&["--max-pairs", "0"]) && !a(&["--max-pairs", "2", "--serial"]));
        assert!(!a(&["--launcher", "srun", "--max-pairs", "x"]));
        assert!(args::parse_config(&["--hosts", "n[1-5]", "--out", "/tmp/x", "--launcher", "srun"].map(String::from), &args::Env::default()).expect("srun").launcher.agents.is_some(), "srun runs get agents too");
    }
}
