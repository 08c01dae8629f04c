//! `--plot` and `--series`: the run's result lines, kept as they are printed (the same figures
//! the text report and `--out_json` show), drawn at the end and streamed to a series file.

use std::io::Write;
use std::time::Instant;

use serde_json::Value;

use plot::{burnin, charts, render, run};
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

#[cfg(test)]
mod tests {
    use super::*;

    fn report(size: u64, bw: f64) -> String {
        format!(
            "{{\n\"test_info\": {{\n\"test\": \"RDMA_Write_BW\",\n\"Device\": \"rxe0\"\n}},\n\"results\": {{\n\"MsgSize\": {size},\n\"n_iterations\": 5,\n\"BW_peak\": {bw},\n\"BW_average\": {bw},\n\"MsgRate\": 0.5\n}}\n}}\n"
        )
    }

    #[test]
    fn every_line_reaches_the_series_file_and_the_picture() {
        let dir = std::env::temp_dir();
        let tag = std::process::id();
        let series = dir.join(format!("rperftest-rec-{tag}.jsonl"));
        let svg = dir.join(format!("rperftest-rec-{tag}.svg"));
        let meta = run::RunMeta { bw_unit: "MB/sec".into(), hosts: "h → s".into(), ..Default::default() };
        let mut r = Recorder::new(Some(svg.to_string_lossy().into()), Some(series.to_string_lossy().into()), meta);
        let out = Out { quiet: true, only_result: false };
        for (s, bw) in [(2, 1.5), (4, 3.0), (8, 6.0)] {
            r.line(&report(s, bw), false, out);
        }
        r.finish(out).unwrap();
        let back = run::parse_run(&std::fs::read_to_string(&series).unwrap(), "s").unwrap();
        assert_eq!(back.meta.test, "RDMA_Write_BW");
        assert_eq!(back.meta.hosts, "h → s");
        assert_eq!(back.points.iter().map(|p| (p.size, p.get("BW_average").unwrap())).collect::<Vec<_>>(), vec![(2, 1.5), (4, 3.0), (8, 6.0)]);
        assert!(back.points.iter().all(|p| p.t.is_none()));
        let pic = std::fs::read_to_string(&svg).unwrap();
        render::check_xml(&pic).unwrap();
        assert!(pic.contains("\nRDMA Write BW on rxe0\n"));
        std::fs::remove_file(series).ok();
        std::fs::remove_file(svg).ok();
    }

    #[test]
    fn periodic_lines_get_times_and_nothing_is_written_when_inactive() {
        let mut r = Recorder::new(None, None, run::RunMeta::default());
        let out = Out { quiet: true, only_result: false };
        r.line(&report(2, 1.0), true, out);
        assert!(r.run.points.is_empty(), "inactive recorder keeps nothing");
        assert!(r.finish(out).is_ok());
        let mut r = Recorder::new(Some("/nonexistent-dir/x.svg".into()), None, run::RunMeta::default());
        r.start_clock();
        r.line(&report(2, 1.0), true, out);
        r.line(&report(2, 1.0), true, out);
        assert!(r.run.points.iter().all(|p| p.t.is_some()));
        assert!(r.finish(out).unwrap_err().contains("cannot write it"));
    }
}
