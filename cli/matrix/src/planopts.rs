//! The options of `rperftest matrix --plan` (and `--rails-parallel`), kept apart from plan.rs
//! so that args.rs can add them without plan.rs, which reads the whole [`Config`], being
//! named by args.rs in turn.
//!
//! [`Config`]: super::args::Config

use std::path::PathBuf;
use std::time::Duration;

use clap::{value_parser, Arg, ArgAction, ArgMatches, Command};

use super::schedule::Floors;

/// The most nodes a plan is made for (its rounds are held in memory: n²/2 pairs).
pub const MAX_NODES: usize = 4096;

/// The plan's own options (and `--rails-parallel`, which the run uses too).
pub fn args(cmd: Command) -> Command {
    let f64_arg = |name: &'static str, default: &'static str, help: &'static str| {
        Arg::new(name)
            .long(name)
            .value_parser(value_parser!(f64))
            .default_value(default)
            .help(help)
    };
    cmd.arg(Arg::new("plan").long("plan").action(ArgAction::SetTrue).help("print the rounds, pairs, ports and the estimated wall time, and touch no node"))
        .arg(Arg::new("nodes").long("nodes").value_name("N").requires("plan").conflicts_with_all(["hosts", "hostfile"]).value_parser(value_parser!(u64).range(2..=MAX_NODES as u64)).help("--plan for N nodes named node1..nodeN (instead of --hosts)"))
        .arg(Arg::new("rails").long("rails").value_name("R").requires("plan").value_parser(value_parser!(u64).range(1..=64)).help("--plan for R rails (default: the --devices list, else 1)"))
        .arg(Arg::new("rails-parallel").long("rails-parallel").action(ArgAction::SetTrue).conflicts_with("serial").help("run the rails at the same time (each node in one pair per rail); rail j's pair k listens on PORT + j x (nodes/2) + k"))
        .arg(f64_arg("pair-setup", "1", "--plan: seconds a pair spends starting, connecting and ending"))
        .arg(f64_arg("plan-rate", "10000", "--plan: the link's expected rate, MB/s"))
        .arg(f64_arg("plan-lat", "5", "--plan: one latency round trip, usec"))
        .arg(Arg::new("plan-from").long("plan-from").value_name("JSONL").requires("plan").help("--plan: pair times measured by an earlier run (the median wall of each test's OK pairs)"))
}

/// Node names for `--nodes N`.
pub fn node_names(m: &ArgMatches) -> Option<Vec<String>> {
    m.get_one::<u64>("nodes")
        .map(|&n| (1..=n).map(|i| format!("node{i}")).collect())
}

/// What `--plan` was given.
pub struct PlanOpts {
    /// `--rails R` (None: from `--devices`).
    pub rails: Option<usize>,
    /// Floors with the expected rate and round trip and the pair set-up: the pair's time.
    pub expect: Floors,
    pub from: Option<PathBuf>,
}

/// The plan's options from the matches (None without `--plan`); Err says which is bad.
pub fn opts(m: &ArgMatches) -> Result<Option<PlanOpts>, String> {
    if !m.get_flag("plan") {
        return Ok(None);
    }
    let pos = |k: &str| -> Result<f64, String> {
        let v = m.get_one::<f64>(k).copied().unwrap_or(1.0);
        if v.is_finite() && v > 0.0 && v < 1e9 {
            Ok(v)
        } else {
            Err(format!("--{k} {v}: must be a positive number"))
        }
    };
    let expect = Floors {
        rate: pos("plan-rate")? * 1e6,
        iter_time: Duration::from_secs_f64(pos("plan-lat")? / 1e6),
        setup: Duration::from_secs_f64(pos("pair-setup")?),
    };
    Ok(Some(PlanOpts {
        rails: m.get_one::<u64>("rails").map(|&r| r as usize),
        expect,
        from: m.get_one::<String>("plan-from").map(PathBuf::from),
    }))
}
