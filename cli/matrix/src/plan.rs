//! `rperftest matrix --plan`: the rounds, pairs and ports of a run and its estimated wall time,
//! without touching a node.
//!
//! A pair's time is its test's work at `--plan-rate` (and one `--plan-lat` round trip per
//! latency iteration: the deadline's arithmetic with the expected rate in place of the floor)
//! plus `--pair-setup`, or, with `--plan-from`, the median wall time of the test's OK pairs in
//! an earlier run's results.jsonl. With equal pair times the dispatcher (dispatch.rs) takes one
//! pair time per round, so a test on a rail takes rounds × pair time; rails one after another
//! add up, and `--rails-parallel` (rails are separate networks) runs them at once. Under
//! `--max-pairs M` the pairs go M at a time (across the rails run together) when that is slower.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;

use super::args::{Config, Devices};
use super::schedule::{self, Pair};

pub use super::planopts::PlanOpts;

/// One test's pair time and where it came from.
#[derive(Debug)]
pub struct TestTime {
    pub test: String,
    pub pair_s: f64,
    pub source: String,
    pub deadline_s: f64,
}

/// A run's plan.
#[derive(Debug)]
pub struct Plan {
    pub nodes: usize,
    pub rails: Vec<String>,
    pub rails_parallel: bool,
    /// `--max-pairs`: at most this many pairs at once, across the rails run together.
    pub max_pairs: Option<usize>,
    pub rounds: Vec<Vec<Pair>>,
    pub port_base: u16,
    /// Ports a rail's pairs are offset by under `--rails-parallel` (0 without).
    pub rail_stride: usize,
    pub tests: Vec<TestTime>,
}

impl Plan {
    pub fn pairs_per_rail(&self) -> usize {
        self.rounds.iter().map(Vec::len).sum()
    }

    /// The highest port any pair listens on.
    pub fn top_port(&self) -> usize {
        let widest = self.rounds.iter().map(Vec::len).max().unwrap_or(1).max(1);
        usize::from(self.port_base) + self.rail_stride * (self.rails.len() - 1) + widest - 1
    }

    /// Estimated wall: (rails one after another, rails at once).
    pub fn wall(&self) -> (f64, f64) {
        let rails = self.rails.len();
        let per_test = |t: &TestTime, at_once: usize| t.pair_s * self.waves(at_once) as f64;
        let one_after: f64 = self.tests.iter().map(|t| per_test(t, 1)).sum();
        let together: f64 = self.tests.iter().map(|t| per_test(t, rails)).sum();
        (one_after * rails as f64, together)
    }

    /// How many pair times a test takes with `rails` rails run together: one per round
    /// (the dispatcher starts a pair as soon as its nodes are free), or, under `--max-pairs`,
    /// the pairs of those rails taken that many at a time, whichever is more. With equal pair
    /// times this is what the dispatcher does; uneven ones only add to it.
    fn waves(&self, rails: usize) -> usize {
        let rounds = self.rounds.len();
        match self.max_pairs {
            Some(m) => rounds.max((self.pairs_per_rail() * rails).div_ceil(m.max(1))),
            None => rounds,
        }
    }
}

/// The rails a plan is for.
fn rail_names(cfg: &Config, o: &PlanOpts) -> Vec<String> {
    match (o.rails, &cfg.devices) {
        (Some(r), _) => (0..r).map(|k| format!("rail{k}")).collect(),
        (None, Devices::Named(v)) => v.clone(),
        (None, Devices::Auto) => vec!["rail0".into()],
    }
}

/// Per test, the median wall of its OK pairs in `from`.
fn measured(from: &std::path::Path) -> Result<BTreeMap<String, f64>, String> {
    let (recs, _) = super::results::read_jsonl(from)
        .map_err(|e| format!("--plan-from {}: {e}", from.display()))?;
    let mut by: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in recs
        .iter()
        .filter(|r| r.status == super::results::Status::Ok)
    {
        by.entry(r.test.clone()).or_default().push(r.wall_s);
    }
    if by.is_empty() {
        return Err(format!(
            "--plan-from {}: no OK pair to measure",
            from.display()
        ));
    }
    Ok(by
        .into_iter()
        .map(|(t, mut v)| {
            v.sort_by(f64::total_cmp);
            (t, v[v.len() / 2])
        })
        .collect())
}

/// The plan of `cfg`'s run (no node touched).
pub fn make(cfg: &Config, o: &PlanOpts) -> Result<Plan, String> {
    let n = cfg.hosts.len();
    let rails = rail_names(cfg, o);
    let measured = o
        .from
        .as_deref()
        .map(measured)
        .transpose()?
        .unwrap_or_default();
    let tests = cfg
        .tests
        .iter()
        .map(|t| {
            let name = t.tool.name().to_string();
            let deadline_s = schedule::pair_deadline(&t.params, &cfg.floors).as_secs_f64();
            match measured.get(&name) {
                Some(&s) => TestTime {
                    test: name,
                    pair_s: s,
                    source: "measured".into(),
                    deadline_s,
                },
                None => {
                    let s = schedule::pair_deadline(&t.params, &o.expect).as_secs_f64();
                    let work = s - o.expect.setup.as_secs_f64();
                    TestTime {
                        test: name,
                        pair_s: s,
                        source: format!(
                            "work {} at {:.0} MB/s + set-up {}",
                            secs(work),
                            o.expect.rate / 1e6,
                            secs(o.expect.setup.as_secs_f64())
                        ),
                        deadline_s,
                    }
                }
            }
        })
        .collect();
    let rounds = schedule::rounds(n, cfg.serial, cfg.both_directions);
    let widest = rounds.iter().map(Vec::len).max().unwrap_or(0);
    let plan = Plan {
        nodes: n,
        rails,
        rails_parallel: cfg.rails_parallel,
        max_pairs: cfg.max_pairs.filter(|_| !cfg.serial),
        rounds,
        port_base: cfg.port_base,
        rail_stride: if cfg.rails_parallel { widest } else { 0 },
        tests,
    };
    if plan.top_port() > usize::from(u16::MAX) {
        return Err(format!(
            "--port-base {}: ports up to {} do not fit below 65536",
            cfg.port_base,
            plan.top_port()
        ));
    }
    Ok(plan)
}

/// Seconds as a person reads them: 0.3 s, 42 s, 3 min 20 s, 2 h 5 min, 3 d 4 h.
pub fn secs(s: f64) -> String {
    let whole = s.round() as u64;
    match whole {
        _ if s < 10.0 => format!("{s:.1} s"),
        0..=119 => format!("{whole} s"),
        120..=7199 => format!("{} min {} s", whole / 60, whole % 60),
        7200..=172_799 => format!("{} h {} min", whole / 3600, whole % 3600 / 60),
        _ => format!("{} d {} h", whole / 86_400, whole % 86_400 / 3600),
    }
}

/// The plan as text: the summary, then one line per round with its pairs (server-client).
pub fn text(cfg: &Config, p: &Plan) -> String {
    let mut s = String::new();
    let per_rail = p.pairs_per_rail();
    let widest = p.rounds.iter().map(Vec::len).max().unwrap_or(0);
    let _ = writeln!(s, "plan: {} nodes, {} rail(s) ({}), {} test(s): {} round(s) of up to {widest} pair(s), {per_rail} pairs per test and rail, {} in all", p.nodes, p.rails.len(), p.rails.join(","), p.tests.len(), p.rounds.len(), per_rail * p.rails.len() * p.tests.len());
    for t in &p.tests {
        let _ = writeln!(
            s,
            "{}: a pair takes about {} ({}); its deadline is {}",
            t.test,
            secs(t.pair_s),
            t.source,
            secs(t.deadline_s)
        );
    }
    let (one_after, at_once) = p.wall();
    let _ = writeln!(
        s,
        "ports: {}-{} (pair k of a round listens on {} + k{})",
        p.port_base,
        p.top_port(),
        p.port_base,
        if p.rail_stride > 0 {
            format!(", rail j's on + {} x j", p.rail_stride)
        } else {
            String::new()
        }
    );
    let cap = p
        .max_pairs
        .map(|m| format!(", at most {m} pair(s) at once"))
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "wall: about {} with the rails one after another{cap}",
        secs(one_after)
    );
    if p.rails.len() > 1 {
        let saved = one_after - at_once;
        let _ = writeln!(
            s,
            "wall: about {} with --rails-parallel{}{cap}, {} ({:.0}%) less",
            secs(at_once),
            if p.rails_parallel { " (given)" } else { "" },
            secs(saved),
            100.0 * saved / one_after.max(1e-9)
        );
    }
    let _ = writeln!(s, "rounds (the same on every rail; server-client):");
    for (r, round) in p.rounds.iter().enumerate() {
        let _ = write!(s, "round {}: {} pair(s):", r + 1, round.len());
        for (k, pr) in round.iter().enumerate() {
            let _ = write!(
                s,
                " {}-{}:{}",
                cfg.hosts[pr.a],
                cfg.hosts[pr.b],
                usize::from(p.port_base) + k
            );
        }
        s.push('\n');
    }
    s
}

/// `--plan`: the plan on stdout; 0, or 2 with one line on stderr.
pub fn print(cfg: &Config, o: &PlanOpts) -> u8 {
    match make(cfg, o) {
        Ok(p) => {
            let mut out = std::io::stdout().lock();
            match out
                .write_all(text(cfg, &p).as_bytes())
                .and_then(|()| out.flush())
            {
                Ok(()) => 0,
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => 0,
                Err(e) => {
                    eprintln!("rperftest matrix --plan: stdout: {e}");
                    2
                }
            }
        }
        Err(e) => {
            eprintln!("rperftest matrix --plan: {e}");
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(a: &[&str]) -> Config {
        let v: Vec<String> = a.iter().map(|s| s.to_string()).collect();
        super::super::args::parse_config(&v, &super::super::args::Env::default())
            .unwrap_or_else(|e| panic!("{a:?}: {e}"))
    }

    #[test]
    fn a_thousand_nodes_on_eight_rails() {
        let c = cfg(&[
            "--plan",
            "--nodes",
            "1024",
            "--rails",
            "8",
            "--rails-parallel",
            "--test",
            "write_bw,send_lat",
            "--",
            "-s",
            "65536",
            "-n",
            "1000",
        ]);
        let o = c.plan.as_ref().expect("--plan");
        let p = make(&c, o).expect("plan");
        // The scheduler's rounds: the plan is the run's, not its own arithmetic.
        assert_eq!(p.rounds.len(), schedule::circle_rounds(1024).len());
        assert_eq!(p.rounds.len(), 1023);
        assert_eq!(p.pairs_per_rail(), 1024 * 1023 / 2);
        assert_eq!(p.rails.len(), 8);
        // 512 pairs a round, 8 rails side by side: 18600..18600+8*512-1.
        assert_eq!(p.top_port(), 18600 + 8 * 512 - 1);
        // write_bw: 64 KiB x 1000 at 10 GB/s + 1 s; send_lat: 1000 x (5 us + 2 x 64 KiB / 10 GB/s) + 1 s.
        let w = 65536.0 * 1000.0 / 1e10 + 1.0;
        let l = 1000.0 * 2.0 * 65536.0 / 1e10 + 1000.0 * 5e-6 + 1.0;
        assert!(
            (p.tests[0].pair_s - w).abs() < 1e-6 && (p.tests[1].pair_s - l).abs() < 1e-6,
            "{:?}",
            p.tests
        );
        let (one_after, at_once) = p.wall();
        assert!((at_once - 1023.0 * (w + l)).abs() < 1e-6);
        assert!((one_after - 8.0 * at_once).abs() < 1e-6);
        let t = text(&c, &p);
        assert!(t.starts_with("plan: 1024 nodes, 8 rail(s) (rail0,rail1,rail2,rail3,rail4,rail5,rail6,rail7), 2 test(s): 1023 round(s) of up to 512 pair(s), 523776 pairs per test and rail, 8380416 in all\n"), "{}", &t[..300]);
        assert!(t.contains("(88%) less"), "{}", &t[..800]);
        assert!(t.contains("\nround 1023: 512 pair(s): "));
        assert_eq!(t.lines().count(), 7 + 1023);
    }

    #[test]
    fn small_plans_by_hand() {
        let c = cfg(&[
            "--plan",
            "--hosts",
            "n[1-4]",
            "--devices",
            "mlx5_0,mlx5_1",
            "--pair-setup",
            "2",
            "--",
            "-n",
            "100",
            "-s",
            "4096",
        ]);
        let p = make(&c, c.plan.as_ref().expect("plan")).expect("plan");
        assert_eq!(p.rails, ["mlx5_0", "mlx5_1"]);
        assert_eq!(
            (p.rounds.len(), p.pairs_per_rail(), p.top_port()),
            (3, 6, 18601)
        );
        let t = text(&c, &p);
        assert!(
            t.contains("ports: 18600-18601 (pair k of a round listens on 18600 + k)\n"),
            "{t}"
        );
        assert!(
            t.contains("round 1: 2 pair(s): n1-n4:18600 n3-n2:18601\n"),
            "{t}"
        );
        assert!(t.contains("ib_write_bw: a pair takes about 2.0 s (work 0.0 s at 10000 MB/s + set-up 2.0 s); its deadline is 60 s\n"), "{t}");
        // Odd n and --serial.
        let c = cfg(&["--plan", "--nodes", "5", "--serial"]);
        let p = make(&c, c.plan.as_ref().expect("plan")).expect("plan");
        assert_eq!((p.rounds.len(), p.top_port()), (10, 18600));
        assert!(
            !text(&c, &p).contains("--rails-parallel"),
            "one rail: no saving to show"
        );
    }

    #[test]
    fn max_pairs_takes_the_pairs_that_many_at_a_time() {
        // 32 nodes: 31 rounds of 16 pairs, 496 pairs a rail; 2 s a pair.
        let plan = |extra: &[&str]| {
            let mut a = vec![
                "--plan",
                "--nodes",
                "32",
                "--rails",
                "2",
                "--pair-setup",
                "2",
            ];
            a.extend_from_slice(extra);
            a.extend_from_slice(&["--", "-n", "5", "-s", "2"]);
            let c = cfg(&a);
            let p = make(&c, c.plan.as_ref().expect("plan")).expect("plan");
            (p.wall(), text(&c, &p))
        };
        let near = |a: f64, b: f64| (a - b).abs() < 1e-3;
        let ((after, together), _) = plan(&[]);
        assert!(
            near(together, 31.0 * 2.0) && near(after, 2.0 * together),
            "{after} {together}"
        );
        // At most 3 at once: 496 pairs take 166 pair times a rail; both rails together share
        // the 3 (992 pairs, 331 pair times): no saving from running the rails together.
        let ((after, together), t) = plan(&["--max-pairs", "3"]);
        assert!(
            near(after, 2.0 * 166.0 * 2.0) && near(together, 331.0 * 2.0),
            "{after} {together}"
        );
        assert!(
            t.contains("with the rails one after another, at most 3 pair(s) at once\n"),
            "{t}"
        );
        // A cap above a round's width changes nothing for one rail; with two rails at once
        // (32 pairs wanting to run) a cap of 20 is the bound: 992 / 20 = 50 pair times.
        let ((after, together), _) = plan(&["--max-pairs", "20"]);
        assert!(
            near(after, 2.0 * 31.0 * 2.0) && near(together, 50.0 * 2.0),
            "{after} {together}"
        );
    }

    #[test]
    fn measured_times_and_bad_input() {
        let dir = std::env::temp_dir().join(format!("rperftest-plan-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let f = dir.join("results.jsonl");
        let rec = |wall: f64, status: &str| {
            format!("{{\"test\":\"ib_write_bw\",\"rail\":\"rxe0\",\"round\":0,\"port\":18600,\"options\":[],\"server\":{{\"node\":\"a\"}},\"client\":{{\"node\":\"b\"}},\"status\":\"{status}\",\"reason\":\"\",\"unit\":\"MB/sec\",\"started_unix\":0,\"wall_s\":{wall},\"deadline_s\":60}}\n")
        };
        std::fs::write(
            &f,
            [
                rec(2.0, "OK"),
                rec(3.0, "OK"),
                rec(9.0, "OK"),
                rec(50.0, "FAIL"),
            ]
            .concat(),
        )
        .expect("write");
        let c = cfg(&[
            "--plan",
            "--nodes",
            "8",
            "--plan-from",
            f.to_str().expect("utf-8"),
        ]);
        let p = make(&c, c.plan.as_ref().expect("plan")).expect("plan");
        assert_eq!(
            (p.tests[0].pair_s, p.tests[0].source.as_str()),
            (3.0, "measured")
        );
        std::fs::write(&f, rec(1.0, "FAIL")).expect("write");
        assert!(make(&c, c.plan.as_ref().expect("plan"))
            .expect_err("no OK")
            .contains("no OK pair"));
        let _ = std::fs::remove_dir_all(&dir);
        let bad = |a: &[&str]| {
            super::super::args::parse_config(
                &a.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                &Default::default(),
            )
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
        };
        assert!(
            bad(&["--nodes", "8"]).contains("--plan"),
            "--nodes needs --plan"
        );
        assert!(bad(&["--plan", "--nodes", "5000"]).contains("5000"));
        assert!(bad(&["--plan", "--nodes", "8", "--plan-rate", "0"]).contains("positive"));
        let c = cfg(&[
            "--plan",
            "--nodes",
            "4096",
            "--rails",
            "64",
            "--rails-parallel",
            "--port-base",
            "60000",
        ]);
        assert!(make(&c, c.plan.as_ref().expect("plan"))
            .expect_err("ports")
            .contains("65536"));
    }
}
