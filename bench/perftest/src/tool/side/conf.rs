//! What is fixed for a side's run once it is set up: the parameters (`--adopt` replaces them
//! once, with what follows from them), where the output goes, the device's facts and the
//! timeouts; and what follows from the parameters alone (engine settings, result arithmetic).

use std::time::Duration;

use crate::engine::bw::{BwConfig, BwSamples};
use crate::engine::lat::LatSamples;
use crate::engine::verbs::UD_GRH;
use crate::engine::{self, WaitMode};
use crate::params::{self, AtomicType, Connection, Params, ReportFormat, Role, TestKind, TestType};
use crate::report::{AddrShow, BwColumns};
use crate::stats::{self, BwInput, BwResult};
use crate::tool::setup::{read_proc_stat, DevFacts};
use crate::tool::{bound, run_fail_code, Out, ToolError};
use crate::oob;
use bench_core::clock;

use super::RunResult;

pub(super) struct SideConf<'a> {
    pub(super) p: &'a Params,
    pub(super) out: Out,
    pub(super) dev: DevFacts,
    /// `--payload_file_path`'s bytes, read before connecting.
    pub(super) payload: Option<Vec<u8>>,
    /// Data-path stall timeout.
    pub(super) stall: Duration,
    /// OOB read bound of one setup message.
    pub(super) setup_timeout: Duration,
    /// Who writes first in each exchange (the TCP role).
    pub(super) oob_role: oob::Role,
    /// OOB read bound of the measurement phase ([`bound::run_wait`]).
    pub(super) run_bound: bound::Bound,
}

impl SideConf<'_> {
    pub(super) fn is_test_client(&self) -> bool {
        self.p.machine == Role::Client
    }

    pub(super) fn addr_show(&self) -> AddrShow {
        AddrShow {
            verb: self.p.verb,
            rdma_cm: self.p.conn.use_rdma_cm,
            srqn: matches!(self.p.connection, Connection::Dc | Connection::Xrc),
            gid: self.dev.gid_index.is_some(),
            mgid: false,
            dlid: self.p.dev.dlid,
        }
    }

    pub(super) fn recv_len(&self, size: u64) -> u32 {
        let extra = if self.p.connection == Connection::Ud { UD_GRH } else { 0 };
        (size + extra) as u32
    }

    pub(super) fn atomic_operands(&self) -> (u64, u64) {
        match self.p.atomic_type {
            AtomicType::FetchAndAdd => (1, 0),
            AtomicType::CmpAndSwap => (0, 0),
        }
    }

    pub(super) fn wait(&self) -> WaitMode {
        if self.p.use_event {
            WaitMode::Event
        } else {
            WaitMode::Busy
        }
    }

    /// `--cpu_util` with `-D`: /proc/stat is read when the sample window opens and closes.
    pub(super) fn cpu_probe(&self) -> Option<engine::CpuProbe> {
        (self.p.report.cpu_util && self.p.test_type == TestType::Duration).then_some(read_proc_stat as engine::CpuProbe)
    }

    pub(super) fn bw_result(&self, size: u64, s: &BwSamples, cfg: &BwConfig, receiver: bool) -> Result<BwResult, ToolError> {
        let p = self.p;
        let duration = cfg.duration.is_some();
        let (tp, tc): (Vec<u64>, Vec<u64>) = match (receiver || duration, s.window) {
            (true, Some((a, b))) => (vec![a], vec![b]),
            _ => (s.tposted.clone(), s.tcompleted.clone()),
        };
        let peak = cfg.record_peak && !receiver && !duration;
        let inp = BwInput {
            tposted: &tp,
            tcompleted: &tc,
            iters: if duration { s.messages } else { p.iters },
            num_qps: report_qps(p),
            size,
            post_list: u64::from(p.post_list),
            cq_mod: u64::from(p.cq_mod),
            ticks_per_sec: clock::TICKS_PER_SEC as f64,
            peak,
            duration,
            report_gbits: p.report.fmt == ReportFormat::Gbs,
            run_inf_bi_factor: 1,
            iters_per_port: if p.report.per_port { crate::engine::dualport::iters_per_port(&s.per_qp) } else { [0, 0] },
        };
        stats::bandwidth(&inp).map_err(|e| ToolError::new(1, format!("Can't produce a report: {e}")))
    }

    pub(super) fn lat_result(&self, s: &LatSamples) -> Result<RunResult, ToolError> {
        let p = self.p;
        let tpu = if p.report.cycles { 1.0 } else { clock::TICKS_PER_SEC as f64 / 1e6 };
        let rtt = p.verb.rtt_factor();
        match s.window {
            Some((a, b)) => {
                let iters = s.iters.max(1);
                let (t_avg, tps) = stats::latency_duration(b.saturating_sub(a), tpu, rtt, iters);
                Ok(RunResult::LatDuration { iters: s.iters, t_avg, tps })
            }
            None => {
                let rep = stats::latency(&s.tposted, tpu, rtt).map_err(|e| ToolError::new(run_fail_code(p), e.to_string()))?;
                Ok(RunResult::Lat(Box::new(rep), s.iters))
            }
        }
    }

    pub(super) fn columns(&self) -> BwColumns {
        BwColumns {
            gbits: self.p.report.fmt == ReportFormat::Gbs,
            per_port: self.p.report.per_port && self.p.kind == TestKind::Bw,
            cpu_util: self.p.report.cpu_util && self.p.test_type == TestType::Duration,
        }
    }
}

/// The QP count of the BW report: perftest's `num_of_qps`, halved for `-c XRC -b` (only the
/// sending half counts).
pub(super) fn report_qps(p: &Params) -> u64 {
    params::lane_plan(p).map_or(u64::from(p.num_qps), |x| x.lanes() as u64)
}
