//! Running the fabric load patterns ([`super::pattern`]): each step's flows on every rail at
//! once, the port counters of the nodes in it read before and after, the NICs whose error
//! counters moved named. Records go to the same results.jsonl as the pairs', with the
//! pattern and step in them (so `--resume` skips what a stopped run finished).

use std::io::Write;

use serde_json::json;

use super::args::{Config, TestSpec};
use super::counters::{self, Snapshot};
use super::pair::Job;
use super::pattern::{self, Pattern, Step};
use super::results::Status;
use super::{endpoint, fanout, not_run, not_run_why, run_round, MatrixRun, Rail};

/// One test under one pattern: what its steps share.
pub(super) struct PatternOn<'a> {
    pub cfg: &'a Config,
    pub t: &'a TestSpec,
    pub test: &'a str,
    pub rails: &'a [Rail],
    /// One pair's deadline alone; a step's flows get it times the step's share.
    pub deadline: std::time::Duration,
    pub pattern: Pattern,
}

impl PatternOn<'_> {
    /// The step's jobs on every rail (ports distinct across the step), and the records of the
    /// flows that cannot run (a node lacks the rail). Flows already recorded are left out.
    fn jobs(
        &self,
        k: usize,
        step: &Step,
        run: &MatrixRun,
    ) -> Result<(Vec<Job>, Vec<super::Record>), String> {
        let (cfg, name) = (self.cfg, self.pattern.name());
        let share = u32::try_from(step.share.max(1)).unwrap_or(u32::MAX);
        let (mut jobs, mut skipped) = (Vec::new(), Vec::new());
        for rail in self.rails {
            for f in &step.flows {
                let (a, b) = (&cfg.hosts[f.a], &cfg.hosts[f.b]);
                let phase = super::cells::Phase { test: self.test, rail: &rail.label, pattern: name, step: k };
                if run.recorded(phase, a, b) {
                    continue;
                }
                match (&rail.per_node[f.a], &rail.per_node[f.b]) {
                    (Ok(da), Ok(db)) => {
                        let port = usize::from(cfg.port_base) + jobs.len();
                        let port = u16::try_from(port).map_err(|_| {
                            format!(
                                "{name} step {}: {} flows do not fit above --port-base {}",
                                k + 1,
                                jobs.len() + 1,
                                cfg.port_base
                            )
                        })?;
                        jobs.push(Job {
                            tool: self.t.tool,
                            rail: rail.label.clone(),
                            round: k,
                            port,
                            server: endpoint(a, da),
                            client: endpoint(b, db),
                            options: cfg.options.clone(),
                            deadline: self.deadline.saturating_mul(share),
                            setup: cfg.floors.setup,
                            unit: self.t.unit.clone(),
                            pattern: name.to_string(),
                        });
                    }
                    _ => {
                        let (status, reason) = not_run_why(rail, f, &cfg.hosts).unwrap_or((Status::Skipped, String::new()));
                        let mut rec = not_run(self.test, &rail.label, a, b, &self.t.unit);
                        (rec.status, rec.reason, rec.round, rec.options, rec.pattern) = (status, reason, k, cfg.options.clone(), name.to_string());
                        skipped.push(rec);
                    }
                }
            }
        }
        Ok((jobs, skipped))
    }

    /// The nodes a step's flows run on.
    fn involved(&self, step: &Step) -> Vec<bool> {
        let mut v = vec![false; self.cfg.hosts.len()];
        for f in &step.flows {
            v[f.a] = true;
            v[f.b] = true;
        }
        v
    }

    /// The counters of every rail NIC of the `involved` nodes, read on the nodes at once.
    fn snapshot(&self, bin: &str, involved: &[bool]) -> Snapshot {
        let cfg = self.cfg;
        let remote: Vec<Option<Vec<String>>> = (0..cfg.hosts.len())
            .map(|i| {
                let devs: Vec<String> = self
                    .rails
                    .iter()
                    .filter_map(|r| r.per_node[i].as_ref().ok())
                    .map(|d| {
                        d.netdev
                            .as_ref()
                            .map_or(d.name.clone(), |nd| format!("{}={nd}", d.name))
                    })
                    .collect();
                (involved[i] && !devs.is_empty())
                    .then(|| [vec![bin.to_string(), "matrix-counters".into()], devs].concat())
            })
            .collect();
        let mut snap = Snapshot::new();
        for (i, a) in fanout::run_all(
            &cfg.launcher,
            &cfg.hosts,
            &remote,
            counters::PREFIX,
            cfg.preflight,
            cfg.fanout,
        )
        .into_iter()
        .enumerate()
        {
            if let Some(Ok(line)) = a {
                counters::add_line(&mut snap, &cfg.hosts[i], &line);
            }
        }
        snap
    }
}

impl MatrixRun<'_> {
    /// Every step of one pattern for one test; a signal, checked around each step, stops it.
    pub(super) fn load_pattern(&mut self, on: &PatternOn) -> Result<(), String> {
        let (cfg, name) = (self.cfg, on.pattern.name());
        let steps = pattern::steps(on.pattern, cfg.hosts.len(), &cfg.knobs);
        let mut moved = Vec::new();
        let r = self.pattern_steps(on, &steps, &mut moved);
        self.loads
            .extend(counters::summary(&format!("{name} {}", on.test), &moved));
        r
    }

    fn pattern_steps(
        &mut self,
        on: &PatternOn,
        steps: &[Step],
        moved: &mut Vec<Vec<counters::Moved>>,
    ) -> Result<(), String> {
        let (cfg, name) = (self.cfg, on.pattern.name());
        let mut last: Option<(Vec<bool>, Snapshot)> = None;
        for (k, step) in steps.iter().enumerate() {
            let (jobs, skipped) = on.jobs(k, step, self)?;
            for rec in skipped {
                self.log_not_run(rec)?;
            }
            if jobs.is_empty() {
                continue;
            }
            if bench_core::signal::requested() {
                self.stopped = true;
                return Ok(());
            }
            self.prog.phase = format!(
                "{} {name} step {}/{} ({})",
                on.test,
                k + 1,
                steps.len(),
                step.what
            );
            // The last step's "after" is this one's "before" when the nodes are the same: no
            // flow ran in between, and it saves a round of logins per step.
            let involved = on.involved(step);
            let before = match last.take() {
                Some((nodes, snap)) if nodes == involved => snap,
                _ => on.snapshot(self.bin, &involved),
            };
            run_round(
                cfg,
                self.bin,
                &jobs,
                &mut self.prog,
                &mut self.log,
                &mut |r| self.done.push(&r),
            )
            .map_err(|e| format!("{}: {e}", cfg.out.display()))?;
            let after = on.snapshot(self.bin, &involved);
            moved.push(self.counters_moved(on, k, step, &before, &after)?);
            last = Some((involved, after));
            if bench_core::signal::requested() {
                self.stopped = true;
                return Ok(());
            }
        }
        Ok(())
    }

    /// The step's moved error counters, also written to OUT/counters.jsonl.
    fn counters_moved(
        &mut self,
        on: &PatternOn,
        k: usize,
        step: &Step,
        before: &Snapshot,
        after: &Snapshot,
    ) -> Result<Vec<counters::Moved>, String> {
        let name = on.pattern.name();
        let moved = counters::moved(before, after);
        let line = json!({
            "pattern": name, "test": on.test, "step": k, "what": step.what,
            "nodes_read": after.len(),
            "moved": moved.iter().map(|m| json!({"node": m.node, "dev": m.dev, "deltas": m.deltas.iter().cloned().collect::<std::collections::BTreeMap<_, _>>()})).collect::<Vec<_>>(),
        });
        let path = self.cfg.out.join("counters.jsonl");
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        writeln!(f, "{line}").map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(moved)
    }
}
