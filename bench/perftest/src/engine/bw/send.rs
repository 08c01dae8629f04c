//! The sender of every BW test (and of both sides with `-b` for write/read/atomic): post as
//! far as the send queue and the rate limiter allow, reap completions, and drive the `-D`
//! window or the `--run_infinitely` reports.

use std::sync::atomic::{AtomicBool, Ordering};

use uverbs::wr::{RemoteAddr, SendFlags, SendWr, Sge, WorkCompletion};

use super::super::addr::AddrCycle;
use bench_core::clock;
use super::super::rate::Bursts;
use super::super::{check_wc, make_wr_id, wait_event, CqKind, Endpoint, EngineError, WaitMode};
use super::{stalled, BwConfig, BwSamples, DurationWindow, QpTarget, SampleClock, Transition, POLLS_PER_CLOCK_CHECK, POLL_BATCH};

/// Most WRs built on the stack for one post call; longer post lists ring one doorbell per chunk.
const CHAIN_MAX: usize = 32;

/// `--run_infinitely`: the report period in ticks and the callback that prints a line.
type PeriodicReport<'a> = (u64, &'a mut dyn FnMut(u64, u64));

/// One sender's shape (derived once from the configuration) and its running counts.
struct Sender<'a> {
    cfg: &'a BwConfig,
    targets: &'a [QpTarget],
    tx_depth: u64,
    /// Completions one signaled WR stands for.
    cq_mod: u64,
    post_list: u64,
    /// Per QP (`u64::MAX` with `-D`).
    iters: u64,
    /// All QPs (`u64::MAX` with `-D`).
    total: u64,
    /// Stamp every post and completion (BW peak).
    peak: bool,
    base_flags: SendFlags,
    /// Posted and completed per QP, and in all.
    scnt: Vec<u64>,
    ccnt: Vec<u64>,
    tot_scnt: u64,
    tot_ccnt: u64,
    cycles: Vec<AddrCycle>,
    sges: [Sge; CHAIN_MAX],
    /// `-D`: inside the sample window, and the messages counted there.
    in_sample: bool,
    sampled: u64,
    /// `--run_infinitely`: messages since the last report.
    since: u64,
}

impl<'a> Sender<'a> {
    fn new(cfg: &'a BwConfig, targets: &'a [QpTarget]) -> Self {
        let nq = targets.len();
        let tx_depth = cfg.tx_depth.max(1) as u64;
        let duration = cfg.duration.is_some();
        Sender {
            cfg,
            targets,
            tx_depth,
            // A moderation group or post list larger than the send queue would never be
            // signaled: perftest clamps these while parsing; the engine refuses to deadlock
            // regardless.
            cq_mod: (cfg.cq_mod.max(1) as u64).min(tx_depth),
            post_list: (cfg.post_list.max(1) as u64).min(tx_depth),
            iters: if duration { u64::MAX } else { cfg.iters },
            total: if duration { u64::MAX } else { cfg.iters.saturating_mul(nq as u64) },
            peak: cfg.record_peak && !duration,
            base_flags: if cfg.inline { SendFlags::INLINE } else { SendFlags::empty() },
            scnt: vec![0; nq],
            ccnt: vec![0; nq],
            tot_scnt: 0,
            tot_ccnt: 0,
            cycles: targets
                .iter()
                .map(|t| AddrCycle::new(t.local_addr, t.remote.addr, cfg.size as u64, cfg.cycle_buffer, cfg.cache_line))
                .collect(),
            sges: [Sge::default(); CHAIN_MAX],
            in_sample: false,
            sampled: 0,
            since: 0,
        }
    }

    /// Empty samples: a stamp per message with peak, else one for the first post and one for
    /// the last completion.
    fn samples(&self) -> BwSamples {
        let stamps = if self.peak { self.total as usize } else { 1 };
        BwSamples {
            tposted: if self.peak { super::super::stamp_array(stamps) } else { vec![0; 1] },
            tcompleted: if self.peak { super::super::stamp_array(stamps) } else { vec![0; 1] },
            per_qp: vec![0; self.targets.len()],
            ..BwSamples::default()
        }
    }

    /// Post as much as each send queue allows (and, with the rate limiter, as the current
    /// burst allows; between bursts nothing is posted until the gap has passed).
    fn post_ready<E: Endpoint>(
        &mut self,
        ep: &mut E,
        samples: &mut BwSamples,
        mut bursts: Option<&mut Bursts>,
    ) -> Result<(), EngineError> {
        for q in 0..self.targets.len() {
            if let Some(b) = bursts.as_deref_mut() {
                if !b.may_post(clock::now) {
                    continue;
                }
            }
            while self.scnt[q] < self.iters
                && self.scnt[q] + self.post_list <= self.tx_depth + self.ccnt[q]
                && bursts.as_deref().is_none_or(|b| b.sending())
            {
                let chain = self.post_chain(ep, q, samples)?;
                if let Some(b) = bursts.as_deref_mut() {
                    b.posted(chain);
                }
            }
        }
        Ok(())
    }

    /// Post one chain of up to `post_list` WRs on QP `q` (one doorbell); returns its length.
    fn post_chain<E: Endpoint>(&mut self, ep: &mut E, q: usize, samples: &mut BwSamples) -> Result<u64, EngineError> {
        let chain = self.post_list.min(CHAIN_MAX as u64) as usize;
        let targets = self.targets;
        let t = &targets[q];
        // SGEs first (they move with the address cycle), then the WRs that borrow them.
        let mut remotes = [0u64; CHAIN_MAX];
        for (sge, remote) in self.sges.iter_mut().zip(remotes.iter_mut()).take(chain) {
            let (l, r) = self.cycles[q].current();
            *sge = Sge { addr: l, length: self.cfg.size, lkey: t.lkey };
            *remote = r;
            self.cycles[q].advance();
        }
        let (cfg, sges, first, cq_mod, post_list, iters) =
            (self.cfg, &self.sges, self.scnt[q], self.cq_mod, self.post_list, self.iters);
        let flags = self.base_flags;
        let make = |j: usize| {
            let n = first + j as u64;
            let signaled = if post_list > 1 {
                (j as u64 + 1).is_multiple_of(cq_mod) || j + 1 == chain
            } else {
                n % cq_mod == cq_mod - 1 || n + 1 == iters
            };
            SendWr {
                wr_id: make_wr_id(q, (n & 0xffff_ffff) as u32),
                opcode: cfg.opcode,
                flags: if signaled { flags | SendFlags::SIGNALED } else { flags },
                sgl: std::slice::from_ref(&sges[j]),
                imm_data: 0,
                remote: RemoteAddr { addr: remotes[j], rkey: t.remote.rkey },
                compare_add: cfg.compare_add,
                swap: cfg.swap,
                ud: t.ud,
                remote_srqn: t.remote_srqn,
                dci_stream: 0,
            }
        };
        if self.peak {
            let now = clock::now();
            for k in 0..chain as u64 {
                if let Some(slot) = samples.tposted.get_mut((self.tot_scnt + k) as usize) {
                    *slot = now;
                }
            }
        }
        if chain == 1 {
            ep.post_send(q, &[make(0)])?;
        } else {
            let mut wrs = [make(0); CHAIN_MAX];
            for (j, wr) in wrs.iter_mut().enumerate().take(chain).skip(1) {
                *wr = make(j);
            }
            ep.post_send(q, &wrs[..chain])?;
        }
        self.scnt[q] += chain as u64;
        self.tot_scnt += chain as u64;
        Ok(chain as u64)
    }

    /// Count the send completions `wcs` seen at `now`: each signaled WR stands for `cq_mod`
    /// messages (fewer for the last group of an iteration run).
    fn count(&mut self, wcs: &[WorkCompletion], samples: &mut BwSamples, now: u64) -> Result<(), EngineError> {
        let nq = self.targets.len();
        for wc in wcs {
            let q = check_wc(wc, "client")?;
            if q >= nq {
                return Err(EngineError::Unexpected { detail: format!("wr_id 0x{:x} names QP #{q} of {nq}", wc.wr_id) });
            }
            let add = if self.cfg.duration.is_none() && self.ccnt[q] + self.cq_mod > self.iters {
                self.iters - self.ccnt[q]
            } else {
                self.cq_mod
            };
            self.ccnt[q] += add;
            self.tot_ccnt += add;
            if self.in_sample {
                self.sampled += add;
                samples.per_qp[q] += add;
            }
            self.since += add;
            if self.peak && self.tot_ccnt > 0 {
                if let Some(slot) = samples.tcompleted.get_mut((self.tot_ccnt - 1) as usize) {
                    *slot = now;
                }
            }
        }
        Ok(())
    }
}

pub(super) fn sender_loop<E: Endpoint>(
    ep: &mut E,
    cfg: &BwConfig,
    targets: &[QpTarget],
    stop: &AtomicBool,
    mut periodic: Option<PeriodicReport<'_>>,
) -> Result<BwSamples, EngineError> {
    let nq = targets.len();
    if nq == 0 || nq != ep.num_qps() {
        return Err(EngineError::Verbs(format!("BW sender: {} targets for {} QPs", nq, ep.num_qps())));
    }
    let mut s = Sender::new(cfg, targets);
    let mut samples = s.samples();
    let total = s.total;
    let mut wcs = [WorkCompletion::default(); POLL_BATCH];

    let start = clock::now();
    let mut phases = cfg.duration.map(|d| SampleClock::new(start, d));
    let mut last_report = start;
    if cfg.duration.is_none() && !s.peak {
        samples.tposted[0] = start;
    }
    let mut idle_polls = 0u32;
    let mut last_progress = start;
    let stall_ticks = DurationWindow::ticks(cfg.stall_timeout);
    let mut bursts = cfg.rate_limit.map(Bursts::new);

    loop {
        if stop.load(Ordering::Relaxed) || bench_core::signal::requested() {
            return Err(EngineError::Interrupted);
        }
        // Duration mode: drive the START → SAMPLE → STOP_SAMPLE → END states from the clock.
        if let Some(ph) = phases.as_mut() {
            let now = clock::now();
            if let Some(t) = ph.advance(now) {
                s.in_sample = t == Transition::Sample;
                if samples.record(t, now, cfg.cpu_probe, s.sampled) {
                    return Ok(samples);
                }
            }
        } else if let Some((period, report)) = periodic.as_mut() {
            let now = clock::now();
            if now.saturating_sub(last_report) >= *period {
                report(s.since, now - last_report);
                s.since = 0;
                last_report = now;
            }
        } else if s.tot_scnt >= total && s.tot_ccnt >= total {
            break;
        }

        s.post_ready(ep, &mut samples, bursts.as_mut())?;

        let n = ep.poll_send(&mut wcs)?;
        if n == 0 {
            idle_polls += 1;
            // Between bursts with nothing outstanding no completion can come: keep polling the
            // clock instead of sleeping on the CQ (perftest would wait for an event for ever).
            let gap_only = bursts.as_ref().is_some_and(|b| b.in_gap()) && s.tot_ccnt >= s.tot_scnt;
            if cfg.wait == WaitMode::Event && s.tot_ccnt < total && !gap_only {
                if !wait_event(ep, CqKind::Send, cfg.stall_timeout, stop)? {
                    return Err(stalled("send completions", s.tot_ccnt, total, cfg.stall_timeout));
                }
                continue;
            }
            if idle_polls >= POLLS_PER_CLOCK_CHECK {
                idle_polls = 0;
                bench_core::signal::watch_tick();
                let now = clock::now();
                if gap_only {
                    // Waiting for the rate limiter is not a stall.
                    last_progress = now;
                } else if now.saturating_sub(last_progress) > stall_ticks {
                    return Err(stalled("send completions", s.tot_ccnt, total, cfg.stall_timeout));
                }
            }
            continue;
        }
        idle_polls = 0;
        let now = clock::now();
        last_progress = now;
        s.count(&wcs[..n], &mut samples, now)?;
    }
    if !s.peak {
        samples.tcompleted[0] = last_progress;
    }
    samples.messages = total;
    Ok(samples)
}
