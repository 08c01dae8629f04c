//! `--plot` and `--series`: the run's result lines, kept as they are printed (the same figures
//! the text report and `--out_json` show), drawn at the end and streamed to a series file.

use std::io::Write;
use std::time::Instant;

use serde_json::Value;

use crate::plot::{burnin, charts, render, run};
use super::Out;

/// Burn-in drop threshold of `--plot` and the run's summary line (`rperftest plot --drop` sets
/// another when re-drawing).
pub(super) const DEFAULT_DROP: f64 = 0.10;

pub(super) type SharedRecorder = std::rc::Rc<std::cell::RefCell<Recorder>>;

pub(super) struct Recorder {
    plot: Option<String>,
    series: Option<String>,
    /// The series file once its header is written; None after a write failure (reported once).
    file: Option<std::fs::File>,
    series_failed: bool,
    run: run::RunData,
    periodic: bool,
    start: Instant,
}

impl Recorder {
    pub(super) fn new(plot: Option<String>, series: Option<String>, meta: run::RunMeta) -> Self {
        Recorder {
            plot,
            series,
            file: None,
            series_failed: false,
            run: run::RunData { meta, ..Default::default() },
            periodic: false,
            start: Instant::now(),
        }
    }

    pub(super) fn active(&self) -> bool {
        self.plot.is_some() || self.series.is_some()
    }

    /// The clock of periodic lines starts with the measurement, not with the setup.
    pub(super) fn start_clock(&mut self) {
        if !self.periodic {
            self.start = Instant::now();
        }
    }

    /// One result line, as the 6.29 `--out_json` text the tool writes for it; `periodic` for
    /// the lines of a `--run_infinitely` run (they get a time).
    pub(super) fn line(&mut self, json_report: &str, periodic: bool, out: Out) {
        if !self.active() {
            return;
        }
        let Ok(v) = serde_json::from_str::<Value>(json_report) else { return };
        let (Some(ti), Some(res)) = (v.get("test_info"), v.get("results").and_then(Value::as_object)) else { return };
        if self.run.meta.test.is_empty() {
            self.run.meta.test = ti.get("test").and_then(Value::as_str).unwrap_or("").to_string();
            self.run.meta.device = ti.get("Device").and_then(Value::as_str).unwrap_or("").to_string();
        }
        self.periodic |= periodic;
        let t = periodic.then(|| self.start.elapsed().as_secs_f64());
        self.run.points.push(run::point_from_results(res, t));
        let text = run::series_line(t, &Value::Object(res.clone()));
        self.append(ti, &text, out);
    }

    /// The sorted latency samples of a single-size `-H` run.
    pub(super) fn samples(&mut self, sorted: &[f64], out: Out) {
        if !self.active() {
            return;
        }
        self.run.samples = sorted.to_vec();
        let text = run::samples_line(sorted);
        self.append(&Value::Null, &text, out);
    }

    fn append(&mut self, test_info: &Value, line: &str, out: Out) {
        let Some(path) = self.series.clone() else { return };
        if self.series_failed {
            return;
        }
        let r = (|| -> std::io::Result<()> {
            if self.file.is_none() {
                let mut f = std::fs::File::create(&path)?;
                writeln!(f, "{}", run::series_header(&self.run.meta, test_info))?;
                self.file = Some(f);
            }
            // One write per line, flushed: a burn-in killed hard keeps every line before it.
            if let Some(f) = self.file.as_mut() {
                f.write_all(format!("{line}\n").as_bytes())?;
            }
            Ok(())
        })();
        if let Err(e) = r {
            self.series_failed = true;
            out.err(&format!(" Failed to write the series file {path}: {e}\n"));
        }
    }

    /// At the end of the run (also when a signal stopped a `--run_infinitely` run): the drop
    /// summary of a periodic run, then the picture. Err: the picture could not be written.
    pub(super) fn finish(&mut self, out: Out) -> Result<(), String> {
        if !self.active() {
            return Ok(());
        }
        let label = self.run.meta.test.clone();
        let runs = [(label, self.run.clone())];
        let (fig, marked) = charts::figure_for(&runs, DEFAULT_DROP);
        if self.periodic {
            let n = marked.as_ref().map(|m| m.iter().map(|r| r.1.len()).sum()).unwrap_or(0);
            out.result(&burnin::drop_summary(n, self.run.points.len(), DEFAULT_DROP));
        }
        let Some(path) = &self.plot else { return Ok(()) };
        if self.run.points.is_empty() {
            return Err(format!("--plot {path}: the run printed no result line, nothing to draw"));
        }
        let svg = render::to_svg(&fig).map_err(|e| format!("--plot {path}: {e}"))?;
        std::fs::write(path, svg).map_err(|e| format!("--plot {path}: cannot write it: {e}"))
    }
}
