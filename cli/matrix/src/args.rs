//! `rperftest matrix` options (clap), checked into a [`Config`] before anything is started.

use std::path::PathBuf;
use std::time::Duration;

use perftest::params::{parse, ParseOutcome, Params, ReportFormat, Tool};
use clap::{value_parser, Arg, ArgAction, Command};

pub use super::env::Env;

use super::hostlist;
use super::launcher::{Kind, Launcher};
use super::schedule::Floors;

pub struct TestSpec {
    pub tool: Tool,
    pub params: Box<Params>,
    pub unit: String,
}

pub enum Devices {
    Auto,
    Named(Vec<String>),
}

pub struct Config {
    pub hosts: Vec<String>,
    pub tests: Vec<TestSpec>,
    pub devices: Devices,
    pub launcher: Launcher,
    pub out: PathBuf,
    pub remote_bin: String,
    pub port_base: u16,
    pub serial: bool,
    /// `--max-pairs`: at most this many pairs at once (None: every pair whose nodes are free).
    pub max_pairs: Option<usize>,
    /// Each pair also the other way round (the server on the other node).
    pub both_directions: bool,
    /// Re-run each suspect (LOW, FAIL, TIMEOUT) pair once after its test and rail's rounds.
    pub retry: bool,
    /// `--push`: copy this binary to the nodes first (ssh: scp, srun: sbcast) and remove it at the end.
    pub push: bool,
    pub resume: bool,
    pub options: Vec<String>,
    pub floors: Floors,
    pub preflight: Duration,
    /// `--fanout`: nodes the preflight, the wire check and the counters reach at once.
    pub fanout: usize,
    pub rules: super::judge::Rules,
    /// The load patterns, in order (`--pattern`; `pairs` alone by default).
    pub patterns: Vec<super::pattern::Pattern>,
    pub knobs: super::pattern::Knobs,
    /// `--preflight-only`: the nodes, their rails and the wire check, then stop.
    pub preflight_only: bool,
    /// `--gpu auto|N`: each side's perftest on a GPU's memory.
    pub gpu: Option<super::gpu::GpuMode>,
    /// `--plan`: print the plan and touch no node.
    pub plan: Option<super::planopts::PlanOpts>,
    /// `--rails-parallel`: the rails' pairs at the same time.
    pub rails_parallel: bool,
}

pub fn command() -> Command {
    super::planopts::args(base_command())
}

fn base_command() -> Command {
    let f64_arg = |name: &'static str, help: &'static str| Arg::new(name).long(name).value_parser(value_parser!(f64)).help(help);
    Command::new("rperftest matrix")
        .about("perftest between every pair of nodes, on every rail, over ssh or srun")
        .after_help(
            "Pairs run in rounds in which no node is in two pairs (the circle method); each pair has a \
             deadline from its test and is killed on both nodes past it. Results: OUT/results.jsonl \
             (one record per pair, written as it ends), OUT/results.csv, and a text matrix per test \
             and rail. Exit 0 only when every pair is OK.\n\nExample:\n  rperftest matrix --hosts \
             'node[1-4]' --test write_bw,send_lat --out /tmp/m -- -s 65536 -n 2000",
        )
        .arg(Arg::new("hosts").long("hosts").value_name("LIST").help("Slurm hostlist: node[1-8],gpu3 (default: SLURM_JOB_NODELIST)"))
        .arg(Arg::new("hostfile").long("hostfile").value_name("FILE").conflicts_with("hosts").help("one host (or hostlist) per line; # comments"))
        .arg(Arg::new("test").long("test").value_name("TESTS").default_value("write_bw").help("comma-separated: write_bw, send_lat, ... (the eight tools, with or without ib_)"))
        .arg(Arg::new("devices").long("devices").value_name("DEVS").default_value("auto").help("rails: mlx5_0,mlx5_1, or auto (each node's devices with an active port 1, in name order)"))
        .arg(Arg::new("launcher").long("launcher").value_parser(["ssh", "srun"]).help("default: srun inside a Slurm allocation (SLURM_JOB_ID set), else ssh"))
        .arg(Arg::new("out").long("out").value_name("DIR").required_unless_present("plan").help("output directory (created)"))
        .arg(Arg::new("remote-bin").long("remote-bin").value_name("PATH").default_value("rperftest").help("rperftest on the nodes"))
        .arg(Arg::new("port-base").long("port-base").value_parser(value_parser!(u16).range(1024..=65000)).default_value("18600").help("pair k of a round uses PORT+k"))
        .arg(Arg::new("serial").long("serial").action(ArgAction::SetTrue).help("one pair at a time"))
        .arg(Arg::new("max-pairs").long("max-pairs").value_parser(value_parser!(u64).range(1..=65_536)).conflicts_with("serial").help("at most N pairs at once (default: every pair whose two nodes are free), for nodes that share CPUs or a fabric not to be filled; the pair deadlines assume each pair has its nodes to itself"))
        .arg(Arg::new("both-directions").long("both-directions").action(ArgAction::SetTrue).help("run each pair both ways (each node once as the server)"))
        .arg(Arg::new("no-agent").long("no-agent").action(ArgAction::SetTrue).help("a session (ssh) or job step (srun) of its own for each pair side (default: one rperftest matrix-agent per node starts them, so a pair costs no login, ssh session or Slurm step)"))
        .arg(Arg::new("no-retry").long("no-retry").action(ArgAction::SetTrue).help("report suspect pairs as they are (default: each LOW, FAIL or TIMEOUT pair runs once more, after its test and rail's rounds)"))
        .arg(Arg::new("push").long("push").action(ArgAction::SetTrue).conflicts_with("remote-bin").help("copy this binary to a private directory on every node (scp, or sbcast inside an allocation) and remove it at the end"))
        .arg(Arg::new("resume").long("resume").action(ArgAction::SetTrue).help("keep OUT/results.jsonl and run only the pairs it lacks"))
        .arg(f64_arg("min-bw", "LOW below this bandwidth (the tool's unit: MB/sec, or Gb/sec with --report_gbits)"))
        .arg(f64_arg("max-lat", "LOW above this latency (usec)"))
        .arg(f64_arg("rel", "LOW below REL x the median of the test and rail").default_value("0.9"))
        .arg(f64_arg("port-rate", "LOW below FRAC x the slower port's rate from sysfs (bandwidth tests; off by default: only large messages reach the line rate)"))
        .arg(f64_arg("rel-lat", "LOW above REL x the median latency of the test and rail").default_value("1.5"))
        .arg(f64_arg("floor-rate", "slowest working link for deadlines, MB/s").default_value("1"))
        .arg(f64_arg("floor-lat", "slowest working round trip for deadlines, ms").default_value("20"))
        .arg(Arg::new("setup-time").long("setup-time").value_parser(value_parser!(u64).range(1..=3600)).default_value("60").help("seconds a pair may spend starting, connecting and ending"))
        .arg(Arg::new("fanout").long("fanout").value_parser(value_parser!(u64).range(1..=1024)).default_value("32").help("nodes logged in to at once by the preflight, the wire check and the counters (a sliding window, like pdsh -f)"))
        .arg(Arg::new("preflight-timeout").long("preflight-timeout").value_parser(value_parser!(u64).range(1..=600)).default_value("30").help("seconds for each node's preflight"))
        .arg(Arg::new("pattern").long("pattern").value_name("LIST").default_value("pairs").help("load patterns, in order: pairs (one pair per node, one rail at a time), all-rails (a pair's rails at once), incast (k senders into one receiver, every node once), alltoall (everyone to everyone, --max-flows per node at a time), bisection (random halves, --draws times); the fabric patterns load every rail at once and read the port counters before and after each step"))
        .arg(Arg::new("concurrent-rails").long("concurrent-rails").action(ArgAction::SetTrue).conflicts_with("pattern").help("the same as --pattern pairs,all-rails: each pair on each rail alone, then on all its rails at once"))
        .arg(Arg::new("incast-senders").long("incast-senders").value_name("K").value_parser(value_parser!(u64).range(1..=1024)).default_value("8").help("incast: senders per receiver (at most nodes - 1)"))
        .arg(Arg::new("max-flows").long("max-flows").value_name("N").value_parser(value_parser!(u64).range(1..=256)).default_value("4").help("alltoall: flows per node per rail at a time"))
        .arg(Arg::new("draws").long("draws").value_parser(value_parser!(u64).range(1..=100)).default_value("3").help("bisection: random halvings"))
        .arg(Arg::new("seed").long("seed").value_parser(value_parser!(u64)).default_value("1").help("bisection: the halves' seed (the same seed, the same halves)"))
        .arg(Arg::new("preflight-only").long("preflight-only").action(ArgAction::SetTrue).help("only the preflight and the wire check (is every node up, every rail NIC on its rail's segment?); exit 0 when all is well"))
        .arg(Arg::new("gpu").long("gpu").value_name("auto|N").help("each side's perftest on GPU memory (--use_cuda/--use_rocm): auto, the GPU nearest the rail's NIC on each node by PCIe distance; or N, GPU N on every node"))
        .arg(Arg::new("ssh").long("ssh").default_value("ssh").help("the ssh client to run"))
        .arg(Arg::new("options").num_args(0..).last(true).allow_hyphen_values(true).help("perftest options for both sides, after --"))
}

fn tool_of(name: &str) -> Option<Tool> {
    let n = name.trim();
    Tool::from_name(n).or_else(|| Tool::from_name(&format!("ib_{n}")))
}

/// The tool's own parse of the options (bad options are refused here, before any node is
/// touched); the options the matrix sets itself are refused too.
fn check_options(tool: Tool, opts: &[String]) -> Result<Box<Params>, String> {
    let p = match parse(tool, opts) {
        Ok(ParseOutcome::Run(p)) => p,
        Ok(_) => return Err(format!("{}: -h/-V are not test options", tool.name())),
        Err(e) => return Err(format!("{}: {}", tool.name(), e.message)),
    };
    let mut mine = Vec::new();
    if p.server_name.is_some() {
        mine.push("a server name");
    }
    if p.dev.ib_dev.is_some() {
        mine.push("-d (use --devices)");
    }
    if p.dev.gid_index.is_some() {
        mine.push("-x (chosen per node)");
    }
    if p.report.out_json {
        mine.push("--out_json");
    }
    if opts.iter().any(|o| o == "-p" || o.starts_with("--port") || (o.starts_with("-p") && o.len() > 2 && !o.starts_with("--"))) {
        mine.push("-p (use --port-base)");
    }
    if p.dev.ib_port != 1 {
        mine.push("-i (port 1 only)");
    }
    if !mine.is_empty() {
        return Err(format!("the matrix sets these itself: {}", mine.join(", ")));
    }
    Ok(p)
}

pub fn parse_config(args: &[String], env: &Env) -> Result<Config, clap::Error> {
    let m = command().try_get_matches_from(std::iter::once("rperftest matrix".to_string()).chain(args.iter().cloned()))?;
    let bad = |msg: String| command().error(clap::error::ErrorKind::ValueValidation, msg);
    let hosts = if let Some(nodes) = super::planopts::node_names(&m) {
        nodes
    } else if let Some(f) = m.get_one::<String>("hostfile") {
        let text = std::fs::read_to_string(f).map_err(|e| bad(format!("--hostfile {f}: {e}")))?;
        hostlist::parse_hostfile(&text).map_err(|e| bad(format!("--hostfile {f}: {e}")))?
    } else if let Some(h) = m.get_one::<String>("hosts") {
        hostlist::expand(h).map_err(|e| bad(format!("--hosts: {e}")))?
    } else if let Some(h) = &env.slurm_nodelist {
        hostlist::expand(h).map_err(|e| bad(format!("SLURM_JOB_NODELIST: {e}")))?
    } else {
        return Err(bad("no hosts: give --hosts or --hostfile (or --nodes N with --plan), or run inside a Slurm allocation".into()));
    };
    if hosts.len() < 2 {
        return Err(bad(format!("{} host(s): a matrix needs at least two", hosts.len())));
    }
    let options: Vec<String> = m.get_many::<String>("options").map(|v| v.cloned().collect()).unwrap_or_default();
    let gpu = m.get_one::<String>("gpu").map(|g| super::gpu::parse_mode(g)).transpose().map_err(bad)?;
    if let Some(o) = options.iter().find(|o| gpu.is_some() && super::gpu::own_option(o)) {
        return Err(bad(format!("{o}: with --gpu the matrix chooses each side's GPU itself")));
    }
    let mut tests = Vec::new();
    for name in m.get_one::<String>("test").map(String::as_str).unwrap_or("write_bw").split(',') {
        let tool = tool_of(name).ok_or_else(|| bad(format!("--test: unknown test {name:?} (write_bw, read_bw, send_bw, atomic_bw and their _lat)")))?;
        if tests.iter().any(|t: &TestSpec| t.tool == tool) {
            return Err(bad(format!("--test: {name} given twice")));
        }
        let params = check_options(tool, &options).map_err(bad)?;
        let unit = if super::judge::is_lat(tool.name()) {
            "usec"
        } else if params.report.fmt == ReportFormat::Gbs {
            "Gb/sec"
        } else {
            "MB/sec"
        };
        tests.push(TestSpec { tool, params, unit: unit.into() });
    }
    let devices = match m.get_one::<String>("devices").map(String::as_str).unwrap_or("auto") {
        "auto" => Devices::Auto,
        list => {
            let v: Vec<String> = list.split(',').map(|s| s.trim().to_string()).collect();
            if v.iter().any(|d| d.is_empty() || d.starts_with('-') || !d.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')) {
                return Err(bad(format!("--devices {list:?}: device names are letters, digits, '_' and '.'")));
            }
            Devices::Named(v)
        }
    };
    let in_allocation = env.in_allocation;
    let kind = match m.get_one::<String>("launcher").map(String::as_str) {
        Some("srun") => Kind::Srun,
        Some(_) => Kind::Ssh,
        None if in_allocation => Kind::Srun,
        None => Kind::Ssh,
    };
    let preflight = Duration::from_secs(*m.get_one::<u64>("preflight-timeout").unwrap_or(&30));
    let launcher = Launcher {
        kind,
        program: if kind == Kind::Ssh { m.get_one::<String>("ssh").cloned().unwrap_or_else(|| "ssh".into()) } else { "srun".into() },
        connect_timeout: preflight.as_secs().clamp(1, 30),
        in_allocation,
        // The coordinator's TMPDIR as the binary read it (a library reads no environment).
        control_dir: (kind == Kind::Ssh).then(|| env.tmpdir.clone().unwrap_or_else(|| "/tmp".into()).join(format!("rperftest-matrix-{}", std::process::id()))),
        agents: (!m.get_flag("no-agent")).then(|| std::sync::Arc::new(super::agents::Agents::default()) as _),
    };
    let f = |k: &str| m.get_one::<f64>(k).copied();
    let positive = |k: &str, v: Option<f64>| -> Result<Option<f64>, clap::Error> {
        match v {
            Some(x) if !(x.is_finite() && x > 0.0) => Err(bad(format!("--{k} {x}: must be a positive number"))),
            v => Ok(v),
        }
    };
    let floors = Floors {
        rate: positive("floor-rate", f("floor-rate"))?.unwrap_or(1.0) * 1e6,
        iter_time: Duration::from_secs_f64(positive("floor-lat", f("floor-lat"))?.unwrap_or(20.0).min(10_000.0) / 1e3),
        setup: Duration::from_secs(*m.get_one::<u64>("setup-time").unwrap_or(&60)),
    };
    let rules = super::judge::Rules {
        min_bw: positive("min-bw", f("min-bw"))?,
        max_lat: positive("max-lat", f("max-lat"))?,
        rel: positive("rel", f("rel"))?.unwrap_or(0.9),
        rel_lat: positive("rel-lat", f("rel-lat"))?.unwrap_or(1.5),
        port_rate: match positive("port-rate", f("port-rate"))? {
            Some(x) if x > 1.0 => return Err(bad(format!("--port-rate {x}: a fraction of the port's rate, at most 1"))),
            v => v,
        },
    };
    let push = m.get_flag("push");
    if push && kind == Kind::Srun && !in_allocation {
        return Err(bad("--push over srun needs an allocation (sbcast copies to the allocation's nodes): run it inside salloc, or use --launcher ssh".into()));
    }
    let port_base = *m.get_one::<u16>("port-base").unwrap_or(&18600);
    // Pair k of a round listens on port_base + k; a round has at most hosts/2 pairs.
    if usize::from(port_base) + hosts.len() / 2 > usize::from(u16::MAX) {
        return Err(bad(format!("--port-base {port_base}: {} pairs per round do not fit below 65536", hosts.len() / 2)));
    }
    let patterns = if m.get_flag("concurrent-rails") {
        vec![
            super::pattern::Pattern::Pairs,
            super::pattern::Pattern::AllRails,
        ]
    } else {
        let mut v = Vec::new();
        for name in m
            .get_one::<String>("pattern")
            .map(String::as_str)
            .unwrap_or("pairs")
            .split(',')
        {
            let p = super::pattern::Pattern::parse(name.trim()).ok_or_else(|| bad(format!("--pattern: unknown pattern {name:?} (pairs, all-rails, incast, alltoall, bisection)")))?;
            if v.contains(&p) {
                return Err(bad(format!("--pattern: {name} given twice")));
            }
            v.push(p);
        }
        v
    };
    let num = |k: &str| {
        m.get_one::<u64>(k)
            .copied()
            .and_then(|x| usize::try_from(x).ok())
            .unwrap_or(1)
    };
    let knobs = super::pattern::Knobs {
        incast_senders: num("incast-senders"),
        max_flows: num("max-flows"),
        draws: num("draws"),
        seed: m.get_one::<u64>("seed").copied().unwrap_or(1),
    };
    Ok(Config {
        preflight_only: m.get_flag("preflight-only"),
        patterns,
        knobs,
        hosts,
        tests,
        devices,
        launcher,
        out: PathBuf::from(m.get_one::<String>("out").cloned().unwrap_or_default()),
        remote_bin: m.get_one::<String>("remote-bin").cloned().unwrap_or_else(|| "rperftest".into()),
        port_base,
        serial: m.get_flag("serial"),
        max_pairs: m.get_one::<u64>("max-pairs").and_then(|&n| usize::try_from(n).ok()),
        both_directions: m.get_flag("both-directions"),
        retry: !m.get_flag("no-retry"),
        push,
        resume: m.get_flag("resume"),
        options,
        floors,
        preflight,
        fanout: usize::try_from(*m.get_one::<u64>("fanout").unwrap_or(&32)).unwrap_or(32),
        rules,
        gpu,
        plan: super::planopts::opts(&m).map_err(bad)?,
        rails_parallel: m.get_flag("rails-parallel"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(a: &[&str]) -> Result<Config, String> {
        let v: Vec<String> = a.iter().map(|s| s.to_string()).collect();
        parse_config(&v, &Env::default()).map_err(|e| e.to_string())
    }

    #[test]
    fn patterns_and_their_knobs() {
        use crate::pattern::Pattern;
        let base = ["--hosts", "n[1-4]", "--out", "o", "--launcher", "ssh"];
        let with = |extra: &[&str]| cfg(&[&base[..], extra].concat());
        assert_eq!(with(&[]).expect("parse").patterns, [Pattern::Pairs]);
        assert_eq!(with(&["--concurrent-rails"]).expect("parse").patterns, [Pattern::Pairs, Pattern::AllRails]);
        let c = with(&["--pattern", "incast,alltoall,bisection", "--incast-senders", "2", "--max-flows", "3", "--draws", "5", "--seed", "9"]).expect("parse");
        assert_eq!(c.patterns, [Pattern::Incast, Pattern::Alltoall, Pattern::Bisection]);
        assert_eq!((c.knobs.incast_senders, c.knobs.max_flows, c.knobs.draws, c.knobs.seed), (2, 3, 5, 9));
        assert!(with(&["--pattern", "incast,incast"]).err().is_some_and(|e| e.contains("given twice")));
        assert!(with(&["--pattern", "ring"]).err().is_some_and(|e| e.contains("unknown pattern")));
        assert!(with(&["--pattern", "pairs", "--concurrent-rails"]).is_err(), "--concurrent-rails is a --pattern");
        assert!(with(&["--preflight-only"]).expect("parse").preflight_only);
    }

    #[test]
    fn slurm_and_tmpdir_come_in_as_values() {
        let t = [("SLURM_JOB_NODELIST", "n[1-3]"), ("SLURM_JOB_ID", "7"), ("TMPDIR", "/scratch")];
        let env = Env::from_vars(|k| t.iter().find(|(n, _)| *n == k).map(|(_, v)| v.into()));
        assert_eq!(env.slurm_nodelist.as_deref(), Some("n[1-3]"));
        assert!(env.in_allocation);
        assert_eq!(env.tmpdir.as_deref(), Some(std::path::Path::new("/scratch")));
        let c = parse_config(&["--out".to_string(), "/tmp/x".to_string()], &env).expect("hosts from Slurm");
        assert_eq!(c.hosts, ["n1", "n2", "n3"]);
        assert_eq!(Env::from_vars(|_| None), Env::default());
        assert!(parse_config(&[], &Env::default()).is_err(), "no hosts and no allocation");
        // The ssh control sockets go under the coordinator's TMPDIR, as handed in.
        let ssh = |env: &Env| parse_config(&["--hosts", "a,b", "--out", "/tmp/x", "--launcher", "ssh"].map(String::from), env).expect("ssh").launcher.control_dir;
        let pid = std::process::id();
        assert_eq!(ssh(&env), Some(std::path::PathBuf::from(format!("/scratch/rperftest-matrix-{pid}"))));
        assert_eq!(ssh(&Env::default()), Some(std::path::PathBuf::from(format!("/tmp/rperftest-matrix-{pid}"))));
    }

    #[test]
    fn srun_runs_get_node_agents_too_unless_asked() {
        let srun = |extra: &[&str]| {
            let mut a = vec!["--hosts", "n[1-3]", "--out", "/tmp/x", "--launcher", "srun"];
            a.extend(extra);
            cfg(&a).expect("parse").launcher
        };
        let l = srun(&[]);
        assert_eq!((l.kind, l.program.as_str()), (Kind::Srun, "srun"));
        assert!(l.agents.is_some() && l.control_dir.is_none());
        assert!(srun(&["--no-agent"]).agents.is_none());
    }

    #[test]
    fn a_full_command_line() {
        let c = cfg(&["--hosts", "node[1-4]", "--test", "write_bw,ib_send_lat", "--out", "/tmp/x", "--launcher", "ssh", "--devices", "rxe0", "--min-bw", "2", "--", "-s", "4096", "-n", "200"]).expect("parse");
        assert_eq!(c.hosts.len(), 4);
        assert_eq!(c.tests.iter().map(|t| t.tool).collect::<Vec<_>>(), [Tool::WriteBw, Tool::SendLat]);
        assert_eq!(c.tests[0].unit, "MB/sec");
        assert_eq!(c.tests[1].unit, "usec");
        assert_eq!(c.options, ["-s", "4096", "-n", "200"]);
        assert_eq!(c.launcher.kind, Kind::Ssh);
        assert!(matches!(c.devices, Devices::Named(ref d) if d == &["rxe0"]));
        assert_eq!(c.rules.min_bw, Some(2.0));
        assert_eq!(c.port_base, 18600);
        assert!(c.retry && !c.both_directions && !c.push && c.rules.port_rate.is_none());
        let c = cfg(&["--hosts", "n[1-2]", "--out", "o", "--launcher", "ssh", "--both-directions", "--no-retry", "--push", "--port-rate", "0.8"]).expect("parse");
        assert!(!c.retry && c.both_directions && c.push);
        assert_eq!(c.rules.port_rate, Some(0.8));
        assert!(c.gpu.is_none());
        let c = cfg(&["--hosts", "n[1-2]", "--out", "o", "--launcher", "ssh", "--gpu", "auto"]).expect("parse");
        assert_eq!(c.gpu, Some(crate::gpu::GpuMode::Auto));
        assert_eq!(cfg(&["--hosts", "n[1-2]", "--out", "o", "--gpu", "1"]).expect("parse").gpu, Some(crate::gpu::GpuMode::Index(1)));
    }

    #[test]
    fn bad_input_is_refused_with_a_reason() {
        for (a, want) in [
            (&["--hosts", "n1", "--out", "o"][..], "at least two"),
            (&["--hosts", "n[1-2", "--out", "o"], "never closed"),
            (&["--hosts", "n[1-2]", "--out", "o", "--test", "write_bww"], "unknown test"),
            (&["--hosts", "n[1-2]", "--out", "o", "--", "-d", "mlx5_0"], "-d (use --devices)"),
            (&["--hosts", "n[1-2]", "--out", "o", "--", "-p", "9000"], "-p (use --port-base)"),
            (&["--hosts", "n[1-2]", "--out", "o", "--", "-x", "3"], "-x"),
            (&["--hosts", "n[1-2]", "--out", "o", "--", "server1"], "a server name"),
            (&["--hosts", "n[1-2]", "--out", "o", "--", "-s", "banana"], "write_bw"),
            (&["--hosts", "n[1-2]", "--out", "o", "--rel", "-1"], ""),
            (&["--hosts", "n[1-2]", "--out", "o", "--floor-rate", "0"], "positive"),
            (&["--hosts", "n[1-2]", "--out", "o", "--devices", "mlx5_0;x"], "device names"),
            (&["--hosts", "n[1-2]"], "--out"),
            (&["--hosts", "n[1-2]", "--out", "o", "--port-base", "80"], "80"),
            (&["--hosts", "n[1-2]", "--out", "o", "--port-rate", "1.5"], "at most 1"),
            (&["--hosts", "n[1-2]", "--out", "o", "--push", "--remote-bin", "/x"], "--remote-bin"),
            (&["--hosts", "n[1-2]", "--out", "o", "--gpu", "first"], "auto, or a GPU index"),
            (&["--hosts", "n[1-2]", "--out", "o", "--gpu", "0", "--", "--use_cuda=1"], "with --gpu the matrix chooses"),
        ] {
            let e = cfg(a).err().unwrap_or_else(|| panic!("{a:?} should be refused"));
            assert!(e.contains(want), "{a:?}: {e}");
        }
    }
}
