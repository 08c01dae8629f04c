//! What a side prints after a run: its result lines (BW, latency, `--report-both` blocks, the
//! periodic lines of `--run_infinitely`), the `-W` counters and the JSON / `--plot` records;
//! and the report state they come from and leave behind.

use std::cell::Cell;

use uverbs::provider::Provider;

use bench_core::clock;
use crate::oob::msg::BwReport;
use crate::params::{Params, ReportFormat, TestKind, TestMethod, Tool};
use crate::report::{json, BwLine, ReportHeader};
use crate::stats::{BwInput, BwResult};
use crate::tool::adopt::option_summary;
use crate::tool::setup::{cpu_between, output_mode, read_proc_stat};
use crate::tool::{header, record, Out, JSON_STYLE};
use crate::{report, stats};

use super::conf::{report_qps, SideConf};
use super::shape::Shape;
use super::{RunResult, SideRun};

pub(super) type SharedCounters = std::rc::Rc<std::cell::RefCell<Option<crate::counters::Counters>>>;

/// The report state of a side: the header, the results of each size, the last lines printed,
/// and the `-W` counters and `--plot` / `--series` recorder every line goes to.
pub(super) struct Reporting {
    pub(super) header: Option<ReportHeader>,
    pub(super) results: Vec<(RunResult, Option<f32>)>,
    pub(super) last_bw: Option<BwResult>,
    /// BW average and message rate of the last BW line printed (for `-w`/`-y`).
    pub(super) last_line: Cell<Option<(f64, f64)>>,
    /// `-W`: the counters, reported after every result line.
    pub(super) counters: SharedCounters,
    /// `--plot` / `--series`: every result line (shared with the periodic reporter).
    pub(super) recorder: record::SharedRecorder,
    /// The result header was printed: the measurement phase began.
    pub(super) measuring: bool,
}

impl Reporting {
    pub(super) fn new(counters: SharedCounters, recorder: record::SharedRecorder) -> Self {
        Reporting { header: None, results: Vec::new(), last_bw: None, last_line: Cell::new(None), counters, recorder, measuring: false }
    }

    /// The header block (test name, settings, address family of the exchange).
    pub(super) fn print_header(&mut self, conf: &SideConf, shape: &Shape, mtu_bytes: u64) {
        let p = conf.p;
        let facts = header::HeaderFacts {
            device: conf.dev.name.clone(),
            vendor_part_id: conf.dev.attr.vendor_part_id,
            ethernet: conf.dev.ethernet,
            gid_index: conf.dev.gid_index,
            gid_index2: conf.dev.port2.and_then(|(_, ix2, _)| ix2),
            is_client: conf.is_test_client(),
            mtu_bytes: mtu_bytes as u32,
            inline_size: shape.inline,
            out_reads: shape.out_reads,
            numa_node: if p.persona.parser_notes() { header::current_numa_node() } else { None },
        };
        let h = header::report_header(p, &facts);
        conf.out.text(&report::header(&h, p.persona.style()));
        self.header = Some(h);
    }

    /// `--run_infinitely`: prints one result line per period from the messages completed in it
    /// (peak 0; with `--cpu_util` the CPU column covers the same period).
    pub(super) fn infinite_reporter<'a>(&self, conf: &SideConf<'a>, size: u64) -> impl FnMut(u64, u64) + 'a {
        let p: &'a Params = conf.p;
        let out = conf.out;
        let cols = conf.columns();
        let mut cpu_prev = if cols.cpu_util { read_proc_stat() } else { None };
        let counters = self.counters.clone();
        let recorder = self.recorder.clone();
        let header = self.header.clone();
        move |messages: u64, ticks: u64| {
            let cpu_now = if cols.cpu_util { read_proc_stat() } else { None };
            let cpu = cpu_between([cpu_prev, cpu_now]);
            cpu_prev = cpu_now;
            let inp = BwInput {
                tposted: &[0],
                tcompleted: &[ticks],
                iters: messages,
                num_qps: report_qps(p),
                size,
                post_list: u64::from(p.post_list),
                cq_mod: u64::from(p.cq_mod),
                ticks_per_sec: clock::TICKS_PER_SEC as f64,
                peak: false,
                duration: true,
                report_gbits: p.report.fmt == ReportFormat::Gbs,
                run_inf_bi_factor: if p.duplex { 2 } else { 1 },
                iters_per_port: [0, 0],
            };
            if let Ok(r) = stats::bandwidth(&inp) {
                let line = BwLine { size, iters: r.iters, bw_peak: 0.0, bw_avg: r.bw_avg, msg_rate: r.msg_rate, ..Default::default() };
                out.result(&report::bw_result_line(p.persona.style(), cols, &line, cpu, output_mode(p.report.output)));
                print_counters(out, &counters);
                if let Some(h) = &header {
                    let r = bw_json(&line, cols.gbits);
                    recorder.borrow_mut().line(&json::json_report(h, &r, JSON_STYLE, cpu, output_mode(p.report.output)), true, out);
                }
            }
        }
    }

    /// `--out_json` (rewritten at every line, as perftest does) and, with `record`, the line for
    /// `--plot` / `--series`.
    pub(super) fn write_json(&self, conf: &SideConf, r: &json::JsonResults, cpu: Option<f32>, record: bool) {
        let recording = record && self.recorder.borrow().active();
        if !conf.p.report.out_json && !recording {
            return;
        }
        if let Some(h) = &self.header {
            // Valid JSON (6.29's layout) under both personas: 6.06's pseudo-JSON breaks every
            // parser, and the VM suite checks our files with one (docs/compat.md).
            let content = json::json_report(h, r, JSON_STYLE, cpu, output_mode(conf.p.report.output));
            if recording {
                self.recorder.borrow_mut().line(&content, false, conf.out);
            }
            if !conf.p.report.out_json {
                return;
            }
            if let Err(e) = json::write_json_file(std::path::Path::new(&conf.p.report.out_json_file), &content) {
                conf.out.err(&format!(" Failed to write {}: {e}\n", conf.p.report.out_json_file));
            }
        }
    }

    pub(super) fn print_bw(&self, conf: &SideConf, r: &BwResult, cpu: Option<f32>) {
        self.print_bw_line(conf, r, cpu);
    }

    pub(super) fn print_bw_line(&self, conf: &SideConf, line: &BwLine, cpu: Option<f32>) {
        self.last_line.set(Some((line.bw_avg, line.msg_rate)));
        let c = conf.columns();
        conf.out.result(&report::bw_result_line(conf.p.persona.style(), c, line, cpu, output_mode(conf.p.report.output)));
        print_counters(conf.out, &self.counters);
        self.write_json(conf, &bw_json(line, c.gbits), cpu, true);
    }

    pub(super) fn print_own(&self, conf: &SideConf, sizes: &[u64], size_index: usize) {
        let p = conf.p;
        let Some((r, cpu)) = self.results.get(size_index) else { return };
        let size = sizes.get(size_index).copied().unwrap_or(p.size);
        let mode = output_mode(p.report.output);
        match r {
            RunResult::Bw(b) => self.print_bw(conf, b, *cpu),
            RunResult::Lat(rep, iters) => {
                conf.out.result(&report::lat_report(size, *iters, rep, p.report.unsorted, p.report.histogram, p.report.cycles, *cpu, mode));
                print_counters(conf.out, &self.counters);
                let st = &rep.stats;
                self.write_json(
                    conf,
                    &json::JsonResults::Lat {
                        size,
                        iters: *iters,
                        t_min: st.t_min,
                        t_max: st.t_max,
                        t_typical: st.t_typical,
                        t_avg: st.t_avg,
                        t_stdev: st.t_stdev,
                        p99: st.p99,
                        p99_9: st.p99_9,
                    },
                    *cpu,
                    true,
                );
                // -H on one size: the samples behind the histogram lines.
                if p.report.histogram && sizes.len() <= 1 {
                    self.recorder.borrow_mut().samples(&rep.sorted, conf.out);
                }
            }
            RunResult::LatDuration { iters, t_avg, tps } => {
                conf.out.result(&report::lat_duration_line(size, *iters, *t_avg, *tps, *cpu, mode));
                print_counters(conf.out, &self.counters);
                self.write_json(conf, &json::JsonResults::LatDuration { size, iters: *iters, t_avg: *t_avg, tps: *tps }, *cpu, true);
            }
            RunResult::Nothing => {}
        }
    }
}

impl<P: Provider> SideRun<'_, P> {
    /// `--report-both` with `-b` in a regular run: this side's and the peer's lines in blocks
    /// of their own (perftest: the JSON file is rewritten for each, so it ends with the peer's;
    /// the -w/-y limits are checked on the summed line only). send_bw -b -D exchanges no
    /// report: perftest prints its uninitialised remote record there; rperftest prints zeros.
    pub(super) fn print_report_both(&self, cpu: Option<f32>) {
        let p = self.conf.p;
        if !(p.report.both && p.duplex && p.kind == TestKind::Bw && p.test_method == TestMethod::Regular) {
            return;
        }
        let c = self.conf.columns();
        let mode = output_mode(p.report.output);
        let cpu = if c.cpu_util { Some(cpu.unwrap_or(0.0)) } else { None };
        let local = self.own_report();
        let remote = self.peer.peer_report.unwrap_or_default();
        let text = report::report_both_blocks(
            p.persona.style(),
            c,
            p.tool == Tool::AtomicBw,
            &report::bw_result_line(p.persona.style(), c, &local, cpu, mode),
            &report::bw_result_line(p.persona.style(), c, &remote, cpu, mode),
        );
        self.conf.out.result(&text);
        for l in [&local, &remote] {
            self.report.write_json(
                &self.conf,
                &json::JsonResults::Bw {
                    size: l.size,
                    iters: l.iters,
                    bw_peak: l.bw_peak,
                    bw_avg: l.bw_avg,
                    msg_rate: l.msg_rate,
                    high_precision: report::bw_high_precision(c.gbits, l.bw_avg),
                },
                cpu,
                false,
            );
        }
    }

    pub(super) fn own_report(&self) -> BwReport {
        match &self.report.last_bw {
            Some(r) => *r,
            None => BwReport { size: self.shape.sizes.last().copied().unwrap_or(self.conf.p.size), ..Default::default() },
        }
    }
}

/// The JSON results of a BW line.
fn bw_json(line: &BwLine, gbits: bool) -> json::JsonResults {
    json::JsonResults::Bw {
        size: line.size,
        iters: line.iters,
        bw_peak: line.bw_peak,
        bw_avg: line.bw_avg,
        msg_rate: line.msg_rate,
        high_precision: report::bw_high_precision(gbits, line.bw_avg),
    }
}

/// What `--plot` and `--series` say produced the run: hosts, the agreed options, the BW unit.
pub(super) fn plot_meta(p: &Params) -> plot::run::RunMeta {
    let me = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "this host".into());
    let hosts = match (p.loopback, p.server_name.as_deref()) {
        (true, _) => format!("{me} (loopback)"),
        (false, Some(peer)) => format!("{me} → {peer}"),
        (false, None) => format!("{me} (server)"),
    };
    let options: Vec<String> = option_summary(p)
        .into_iter()
        .filter(|(k, v)| *k != "tool" && v != "off" && !v.starts_with("the port"))
        .map(|(k, v)| if v == "on" { k.to_string() } else { format!("{k} {v}") })
        .collect();
    plot::run::RunMeta {
        hosts,
        options: options.join(" "),
        bw_unit: if p.report.fmt == ReportFormat::Gbs { "Gb/sec".into() } else { "MB/sec".into() },
        ..Default::default()
    }
}

/// `-W`: the counter deltas after a result line (perftest's `counters_print`).
pub(super) fn print_counters(out: Out, counters: &SharedCounters) {
    if let Some(c) = counters.borrow_mut().as_mut() {
        let (text, errs) = c.report();
        out.result(&text);
        for e in errs {
            out.err(&format!("{e}\n"));
        }
    }
}
