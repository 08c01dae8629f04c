//! `rperftest matrix`: every node pair of a cluster, on every rail, with perftest's tools.
//!
//! The pure parts (host lists, rounds, deadlines, judgement, records, the text matrix) are
//! kept apart from the parts that start processes, so that they can be tested without nodes.
//! Flow: options → preflight of every node at once (reachable? which rails, addresses, GIDs)
//! → per test and rail, rounds of pairs run at the same time → judgement → files and text.

pub mod args;
pub mod exec;
pub mod hostlist;
pub mod judge;
pub mod launcher;
pub mod pair;
pub mod probe;
pub mod report;
pub mod results;
pub mod schedule;

use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

use args::{Config, Devices};
use pair::{Endpoint, Job};
use probe::DevProbe;
use results::{JsonlLog, Record, Side, Status};

/// What the preflight found on a node.
enum NodeState {
    Up(Vec<DevProbe>),
    Down(String),
}

/// `rperftest matrix-probe` on every node at once (at most 64 at a time), each bounded.
fn preflight(cfg: &Config) -> Vec<NodeState> {
    let argv_of = |node: &str| cfg.launcher.argv(node, &[cfg.remote_bin.clone(), "matrix-probe".into()]);
    let mut states: Vec<Option<NodeState>> = (0..cfg.hosts.len()).map(|_| None).collect();
    for chunk in (0..cfg.hosts.len()).collect::<Vec<_>>().chunks(64) {
        std::thread::scope(|s| {
            let hs: Vec<_> = chunk
                .iter()
                .map(|&i| {
                    let node = cfg.hosts[i].clone();
                    let argv = argv_of(&node);
                    let bound = cfg.preflight;
                    s.spawn(move || -> NodeState {
                        let argv = match argv {
                            Ok(a) => a,
                            Err(e) => return NodeState::Down(e),
                        };
                        match launcher::run_bounded(&argv, bound) {
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
                    })
                })
                .collect();
            for (&i, h) in chunk.iter().zip(hs) {
                states[i] = Some(h.join().unwrap_or_else(|_| NodeState::Down("preflight thread failed".into())));
            }
        });
    }
    states.into_iter().map(|s| s.unwrap_or_else(|| NodeState::Down("not probed".into()))).collect()
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

fn endpoint(node: &str, d: &DevProbe) -> Endpoint {
    Endpoint {
        node: node.to_string(),
        dev: d.name.clone(),
        addr: d.ipv4.clone().unwrap_or_else(|| node.to_string()),
        gid_index: d.gid_index,
    }
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
    }
}

fn key_of(test: &str, rail: &str, a: &str, b: &str) -> (String, String, String, String) {
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    (test.into(), rail.into(), lo.into(), hi.into())
}

pub fn run(argv: &[String]) -> u8 {
    let cfg = match args::parse_config(argv) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
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
    let r = run_shared(cfg);
    cfg.launcher.close_shared(&cfg.hosts);
    r
}

fn run_shared(cfg: &Config) -> Result<bool, String> {
    let t_start = Instant::now();
    bench::signal::install();
    std::fs::create_dir_all(&cfg.out).map_err(|e| format!("--out {}: {e}", cfg.out.display()))?;
    let jsonl = cfg.out.join("results.jsonl");
    let mut done: Vec<Record> = Vec::new();
    if cfg.resume {
        let (old, bad) = results::read_jsonl(&jsonl).map_err(|e| format!("{}: {e}", jsonl.display()))?;
        eprintln!("resume: {} pair(s) already in {}{}", old.len(), jsonl.display(), if bad > 0 { format!(" ({bad} unreadable line(s) skipped)") } else { String::new() });
        done = old;
    } else if jsonl.exists() {
        return Err(format!("{} exists: give --resume to continue that run, or another --out", jsonl.display()));
    }
    let mut log = JsonlLog::open(&cfg.out).map_err(|e| format!("{}: {e}", jsonl.display()))?;
    let have: HashSet<_> = done.iter().map(Record::key).collect();

    let launcher_name = match cfg.launcher.kind {
        launcher::Kind::Ssh => "ssh",
        launcher::Kind::Srun => "srun",
    };
    eprintln!("preflight: {} node(s) over {launcher_name}, bound {} s", cfg.hosts.len(), cfg.preflight.as_secs());
    let t_pre = Instant::now();
    let states = preflight(cfg);
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
    let rails = rails(cfg, &states);
    if rails.is_empty() {
        notes.push("no rail: no reachable node has an active RDMA port".into());
    }
    let n = cfg.hosts.len();
    let rounds = if cfg.serial { schedule::serial_rounds(n) } else { schedule::circle_rounds(n) };
    let total = cfg.tests.len() * rails.len() * n * (n - 1) / 2;
    let mut finished = 0usize;
    let mut stopped = false;
    'phases: for t in &cfg.tests {
        let test = t.tool.name();
        let deadline = schedule::pair_deadline(&t.params, &cfg.floors);
        for rail in &rails {
            // Pairs that cannot run are recorded at once, not waited for.
            for (r, round) in rounds.iter().enumerate() {
                for p in round {
                    let (a, b) = (&cfg.hosts[p.a], &cfg.hosts[p.b]);
                    if have.contains(&key_of(test, &rail.label, a, b)) {
                        continue;
                    }
                    let why: Vec<(Status, String)> = [(a, &rail.per_node[p.a]), (b, &rail.per_node[p.b])]
                        .into_iter()
                        .filter_map(|(node, d)| d.as_ref().err().map(|e| (node, e)))
                        .map(|(node, e)| (if e.starts_with("unreachable") { Status::Unreachable } else { Status::Skipped }, format!("{node} {e}")))
                        .collect();
                    if let Some((status, _)) = why.first() {
                        let status = if why.iter().any(|(s, _)| *s == Status::Unreachable) { Status::Unreachable } else { *status };
                        let reason = why.iter().map(|(_, w)| w.as_str()).collect::<Vec<_>>().join("; ");
                        let mut rec = not_run(test, &rail.label, a, b, &t.unit);
                        (rec.status, rec.reason, rec.round, rec.options) = (status, reason, r, cfg.options.clone());
                        log.append(&rec).map_err(|e| format!("{}: {e}", jsonl.display()))?;
                        done.push(rec);
                        finished += 1;
                    }
                }
            }
            for (r, round) in rounds.iter().enumerate() {
                let jobs: Vec<Job> = round
                    .iter()
                    .filter(|p| !have.contains(&key_of(test, &rail.label, &cfg.hosts[p.a], &cfg.hosts[p.b])))
                    .filter_map(|p| match (&rail.per_node[p.a], &rail.per_node[p.b]) {
                        (Ok(da), Ok(db)) => Some((p, da, db)),
                        _ => None,
                    })
                    .enumerate()
                    .map(|(slot, (p, da, db))| Job {
                        tool: t.tool,
                        rail: rail.label.clone(),
                        round: r,
                        port: cfg.port_base + u16::try_from(slot).unwrap_or(0),
                        server: endpoint(&cfg.hosts[p.a], da),
                        client: endpoint(&cfg.hosts[p.b], db),
                        options: cfg.options.clone(),
                        deadline,
                        setup: cfg.floors.setup,
                        unit: t.unit.clone(),
                    })
                    .collect();
                if jobs.is_empty() {
                    continue;
                }
                if bench::signal::requested() {
                    stopped = true;
                    break 'phases;
                }
                let (tx, rx) = std::sync::mpsc::channel::<Record>();
                let mut io_err = None;
                std::thread::scope(|s| {
                    for job in &jobs {
                        let tx = tx.clone();
                        let (l, bin) = (&cfg.launcher, cfg.remote_bin.as_str());
                        s.spawn(move || {
                            if let Some(rec) = pair::run(l, bin, job) {
                                let _ = tx.send(rec);
                            }
                        });
                    }
                    drop(tx);
                    // Each record is written the moment its pair ends.
                    for rec in rx {
                        finished += 1;
                        eprintln!(
                            "[{test} {} round {}/{}] {} - {}: {}{} in {:.1} s ({finished}/{total} pairs, {} not OK, {:.0} s elapsed)",
                            rail.label,
                            r + 1,
                            rounds.len(),
                            rec.server.node,
                            rec.client.node,
                            rec.status.name(),
                            rec.value.map(|v| format!(" {v:.2} {}", rec.unit)).unwrap_or_else(|| format!(": {}", rec.reason)),
                            rec.wall_s,
                            done.iter().chain(std::iter::once(&rec)).filter(|x| x.status != Status::Ok).count(),
                            t_start.elapsed().as_secs_f64(),
                        );
                        if let Err(e) = log.append(&rec) {
                            io_err = Some(format!("{}: {e}", jsonl.display()));
                        }
                        done.push(rec);
                    }
                });
                if let Some(e) = io_err {
                    return Err(e);
                }
                if bench::signal::requested() {
                    stopped = true;
                    break 'phases;
                }
            }
        }
    }
    judge::judge(&mut done, &cfg.rules);
    log.rewrite(&done).map_err(|e| format!("{}: {e}", jsonl.display()))?;
    let csv = cfg.out.join("results.csv");
    std::fs::write(&csv, results::csv_text(&done)).map_err(|e| format!("{}: {e}", csv.display()))?;
    print!("{}", report::text(&cfg.hosts, &done));
    let diag = judge::diagnose(&done);
    for line in notes.iter().chain(&diag) {
        println!("{line}");
    }
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &done {
        *counts.entry(r.status.name()).or_default() += 1;
    }
    let summary: Vec<String> = counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
    println!(
        "{} pair(s) in {} round(s): {}; {:.1} s; {} and {}",
        done.len(),
        rounds.len(),
        summary.join(", "),
        t_start.elapsed().as_secs_f64(),
        jsonl.display(),
        csv.display()
    );
    if stopped {
        println!("stopped by a signal: {} of {total} pairs recorded; --resume runs the rest", done.len());
    }
    let complete = !stopped && done.len() >= total;
    // No rail or a node down is never a pass, even with no pair recorded.
    Ok(complete && total > 0 && notes.is_empty() && done.iter().all(|r| r.status == Status::Ok))
}
