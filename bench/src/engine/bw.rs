//! Bandwidth loops: the sender (`run_iter_bw`), the duration (`-D`) window, and (in `recv`)
//! the receiving server of send tests and `-b` for send tests.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use uverbs::wr::{RemoteAddr, SendFlags, SendWr, Sge, UdDest, WorkCompletion, WrOpcode};

use super::addr::AddrCycle;
use super::clock::{self, TICKS_PER_SEC};
use super::rate::{Bursts, RateLimiter};
use super::{check_wc, make_wr_id, wait_event, CpuProbe, CqKind, Endpoint, EngineError, WaitMode};

mod recv;
#[cfg(test)]
mod tests;

pub use recv::{prepost_receives, run_duplex_send, run_receiver};

/// Everything the BW loops need, already derived (perftest's rules, docs/perftest-wire.md,
/// "Derived values", applied by the caller).
#[derive(Clone, Debug)]
pub struct BwConfig {
    /// Iterations per QP (iteration mode); ignored in duration mode.
    pub iters: u64,
    pub tx_depth: u32,
    pub rx_depth: u32,
    pub cq_mod: u32,
    pub post_list: u32,
    pub size: u32,
    pub opcode: WrOpcode,
    /// Post inline (size <= inline size).
    pub inline: bool,
    pub wait: WaitMode,
    /// Record a timestamp per post and per completion (needed for BW peak).
    pub record_peak: bool,
    /// Duration mode (`-D`): total seconds and the margin at each end.
    pub duration: Option<DurationWindow>,
    /// Give up when no completion arrives for this long.
    pub stall_timeout: Duration,
    /// Cycle buffer and cache line for address cycling.
    pub cycle_buffer: u64,
    pub cache_line: u64,
    /// Atomics: compare/add and swap operands.
    pub compare_add: u64,
    pub swap: u64,
    /// `--cpu_util` (duration mode): read at SAMPLE and STOP_SAMPLE into [`BwSamples::cpu`].
    pub cpu_probe: Option<CpuProbe>,
    /// SW rate limiter (`--rate_limit`): bursts separated by a gap (sender loop only).
    pub rate_limit: Option<RateLimiter>,
}

/// `-D`: run `total` seconds, measure only between `margin` after the start and `margin` before
/// the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DurationWindow {
    pub total: Duration,
    pub margin: Duration,
}

/// A transition of the `-D` state machine (perftest drives it with SIGALRM).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transition {
    /// `margin` after the start: counting begins.
    Sample,
    /// `margin` before the end: counting stops.
    StopSample,
    /// `total` after the start: the loop ends.
    End,
}

/// START → SAMPLE → STOP_SAMPLE → END over clock ticks, one transition per call to
/// [`SampleClock::advance`], always in that order (a late call yields the missed ones on the
/// following calls, so SAMPLE is never skipped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SampleClock {
    begin: u64,
    stop: u64,
    end: u64,
    /// Transitions done so far (0..=3).
    done: u8,
}

impl SampleClock {
    pub fn new(start: u64, w: DurationWindow) -> Self {
        let m = DurationWindow::ticks(w.margin);
        let t = DurationWindow::ticks(w.total);
        SampleClock {
            begin: start.saturating_add(m),
            stop: start.saturating_add(t.saturating_sub(m)),
            end: start.saturating_add(t),
            done: 0,
        }
    }

    /// The next transition if `now` has reached it.
    pub fn advance(&mut self, now: u64) -> Option<Transition> {
        let (at, t) = match self.done {
            0 => (self.begin, Transition::Sample),
            1 => (self.stop, Transition::StopSample),
            2 => (self.end, Transition::End),
            _ => return None,
        };
        if now >= at {
            self.done += 1;
            Some(t)
        } else {
            None
        }
    }

    /// Between SAMPLE and STOP_SAMPLE.
    pub fn sampling(&self) -> bool {
        self.done == 1
    }
}

impl DurationWindow {
    /// Clock ticks in `d`. In u128: `nanos * TICKS_PER_SEC` overflows u64 beyond 18.4 s (it
    /// used to wrap in release builds, so a 60 s stall timeout fired after 4.7 s).
    pub(crate) fn ticks(d: Duration) -> u64 {
        let t = d.as_nanos().saturating_mul(u128::from(TICKS_PER_SEC)) / 1_000_000_000;
        u64::try_from(t).unwrap_or(u64::MAX)
    }
}

/// Where one QP's messages go.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpTarget {
    pub lkey: u32,
    /// Start of this QP's send area (local).
    pub local_addr: u64,
    /// Start of this QP's receive area (local), for posted receives.
    pub recv_addr: u64,
    /// The peer's advertised VAddr and rkey for this QP.
    pub remote: RemoteAddr,
    /// UD only.
    pub ud: Option<UdDest>,
    /// `-c XRC`: the SRQ number in the peer's key this QP sends to (every send carries it);
    /// 0 otherwise.
    pub remote_srqn: u32,
}

/// What a BW loop measured: timestamps (ticks) and the message count.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BwSamples {
    /// `tposted[k]`: just before the k-th post (only the first entry without peak).
    pub tposted: Vec<u64>,
    /// `tcompleted[k]`: when completion number k+1 was seen (stamped at moderation boundaries;
    /// only the first entry without peak).
    pub tcompleted: Vec<u64>,
    /// Messages counted (iters × QPs, or completions in the sample window with `-D`).
    pub messages: u64,
    /// For duration mode and servers: start and end of the measured window.
    pub window: Option<(u64, u64)>,
    /// `--cpu_util`: /proc/stat (user, idle) at SAMPLE and at STOP_SAMPLE.
    pub cpu: [Option<(u64, u64)>; 2],
    /// Duration mode: messages counted in the sample window per QP (`--report-per-port` sums
    /// them per port).
    pub per_qp: Vec<u64>,
}

impl BwSamples {
    /// Record one `-D` transition (perftest's catch_alarm): SAMPLE opens the window (time stamp
    /// and CPU reading), STOP_SAMPLE closes it, END stores the `sampled` message count and
    /// returns true: the loop is over.
    fn record(&mut self, t: Transition, now: u64, cpu_probe: Option<CpuProbe>, sampled: u64) -> bool {
        match t {
            Transition::Sample => {
                self.tposted[0] = now;
                self.cpu[0] = cpu_probe.and_then(|f| f());
            }
            Transition::StopSample => {
                self.tcompleted[0] = now;
                self.window = Some((self.tposted[0], now));
                self.cpu[1] = cpu_probe.and_then(|f| f());
            }
            Transition::End => {
                self.messages = sampled;
                return true;
            }
        }
        false
    }

    /// Ticks between the first post and the last completion (the BW average's denominator).
    pub fn elapsed(&self) -> u64 {
        if let Some((a, b)) = self.window {
            return b.saturating_sub(a);
        }
        let first = self.tposted.first().copied().unwrap_or(0);
        let last = self.tcompleted.iter().rev().find(|&&t| t != 0).copied().unwrap_or(first);
        last.saturating_sub(first)
    }
}

const POLL_BATCH: usize = 16;
/// How many empty polls between clock reads (keeps the stall check off the hot path).
const POLLS_PER_CLOCK_CHECK: u32 = 1024;
/// Most WRs built on the stack for one post call; longer post lists ring one doorbell per chunk.
const CHAIN_MAX: usize = 32;

/// The client side of every BW test (and both sides with `-b` for write/read/atomic).
pub fn run_sender<E: Endpoint>(
    ep: &mut E,
    cfg: &BwConfig,
    targets: &[QpTarget],
    stop: &AtomicBool,
) -> Result<BwSamples, EngineError> {
    sender_loop(ep, cfg, targets, stop, None)
}

/// `--run_infinitely`: the sender loop without an end. Every `period` it calls
/// `report(messages, ticks)` with the messages completed since the previous call and the ticks
/// that took. Returns only with an error, or [`EngineError::Interrupted`] once `stop` is set.
/// `cfg.duration` and `cfg.iters` are ignored; no peak is recorded.
pub fn run_sender_infinitely<E: Endpoint>(
    ep: &mut E,
    cfg: &BwConfig,
    targets: &[QpTarget],
    stop: &AtomicBool,
    period: Duration,
    report: &mut dyn FnMut(u64, u64),
) -> Result<BwSamples, EngineError> {
    let mut cfg = cfg.clone();
    cfg.duration = None;
    cfg.record_peak = false;
    cfg.iters = u64::MAX;
    cfg.rate_limit = None;
    sender_loop(ep, &cfg, targets, stop, Some((DurationWindow::ticks(period).max(1), report)))
}

/// `--run_infinitely`: the report period in ticks and the callback that prints a line.
type PeriodicReport<'a> = (u64, &'a mut dyn FnMut(u64, u64));

fn sender_loop<E: Endpoint>(
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
    let tx_depth = cfg.tx_depth.max(1) as u64;
    // A moderation group or post list larger than the send queue would never be signaled:
    // perftest clamps these while parsing; the engine refuses to deadlock regardless.
    let cq_mod = (cfg.cq_mod.max(1) as u64).min(tx_depth);
    let post_list = (cfg.post_list.max(1) as u64).min(tx_depth);
    let duration = cfg.duration;
    let iters = if duration.is_some() { u64::MAX } else { cfg.iters };
    let total = if duration.is_some() { u64::MAX } else { cfg.iters.saturating_mul(nq as u64) };
    let peak = cfg.record_peak && duration.is_none();

    let mut samples = BwSamples::default();
    if peak {
        samples.tposted = super::stamp_array(total as usize);
        samples.tcompleted = super::stamp_array(total as usize);
    } else {
        samples.tposted = vec![0; 1];
        samples.tcompleted = vec![0; 1];
    }

    let mut scnt = vec![0u64; nq];
    let mut ccnt = vec![0u64; nq];
    let mut cycles: Vec<AddrCycle> = targets
        .iter()
        .map(|t| AddrCycle::new(t.local_addr, t.remote.addr, cfg.size as u64, cfg.cycle_buffer, cfg.cache_line))
        .collect();
    let mut tot_scnt = 0u64;
    let mut tot_ccnt = 0u64;
    let mut wcs = [WorkCompletion::default(); POLL_BATCH];
    let mut sges = [Sge::default(); CHAIN_MAX];
    let base_flags = if cfg.inline { SendFlags::INLINE } else { SendFlags::empty() };

    let start = clock::now();
    let mut phases = duration.map(|d| SampleClock::new(start, d));
    let mut in_sample = false;
    let mut sampled = 0u64;
    samples.per_qp = vec![0; nq];
    // --run_infinitely: messages since the last report, and when that was.
    let mut since = 0u64;
    let mut last_report = start;
    if duration.is_none() && !peak {
        samples.tposted[0] = start;
    }

    let mut idle_polls = 0u32;
    let mut last_progress = start;
    let stall_ticks = DurationWindow::ticks(cfg.stall_timeout);
    let mut bursts = cfg.rate_limit.map(Bursts::new);

    loop {
        if stop.load(Ordering::Relaxed) || crate::signal::requested() {
            return Err(EngineError::Interrupted);
        }
        // Duration mode: drive the START → SAMPLE → STOP_SAMPLE → END states from the clock.
        if let Some(ph) = phases.as_mut() {
            let now = clock::now();
            if let Some(t) = ph.advance(now) {
                in_sample = t == Transition::Sample;
                if samples.record(t, now, cfg.cpu_probe, sampled) {
                    return Ok(samples);
                }
            }
        } else if let Some((period, report)) = periodic.as_mut() {
            let now = clock::now();
            if now.saturating_sub(last_report) >= *period {
                report(since, now - last_report);
                since = 0;
                last_report = now;
            }
        } else if tot_scnt >= total && tot_ccnt >= total {
            break;
        }

        // Post as much as the send queue allows, per QP (and, with the rate limiter, as the
        // current burst allows; between bursts nothing is posted until the gap has passed).
        for q in 0..nq {
            if let Some(b) = bursts.as_mut() {
                if !b.may_post(clock::now) {
                    continue;
                }
            }
            while scnt[q] < iters
                && scnt[q] + post_list <= tx_depth + ccnt[q]
                && bursts.as_ref().is_none_or(|b| b.sending())
            {
                let chain = post_list.min(CHAIN_MAX as u64) as usize;
                // SGEs first (they move with the address cycle), then the WRs that borrow them.
                let mut remotes = [0u64; CHAIN_MAX];
                for j in 0..chain {
                    let (l, r) = cycles[q].current();
                    sges[j] = Sge { addr: l, length: cfg.size, lkey: targets[q].lkey };
                    remotes[j] = r;
                    cycles[q].advance();
                }
                let make = |j: usize| {
                    let n = scnt[q] + j as u64;
                    let signaled = if post_list > 1 {
                        (j as u64 + 1).is_multiple_of(cq_mod) || j + 1 == chain
                    } else {
                        n % cq_mod == cq_mod - 1 || n + 1 == iters
                    };
                    SendWr {
                        wr_id: make_wr_id(q, (n & 0xffff_ffff) as u32),
                        opcode: cfg.opcode,
                        flags: if signaled { base_flags | SendFlags::SIGNALED } else { base_flags },
                        sgl: std::slice::from_ref(&sges[j]),
                        imm_data: 0,
                        remote: RemoteAddr { addr: remotes[j], rkey: targets[q].remote.rkey },
                        compare_add: cfg.compare_add,
                        swap: cfg.swap,
                        ud: targets[q].ud,
                        remote_srqn: targets[q].remote_srqn,
                        dci_stream: 0,
                    }
                };
                if peak {
                    let now = clock::now();
                    for k in 0..chain as u64 {
                        if let Some(slot) = samples.tposted.get_mut((tot_scnt + k) as usize) {
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
                scnt[q] += chain as u64;
                tot_scnt += chain as u64;
                if let Some(b) = bursts.as_mut() {
                    b.posted(chain as u64);
                }
            }
        }

        // Reap completions.
        let n = ep.poll_send(&mut wcs)?;
        if n == 0 {
            idle_polls += 1;
            // Between bursts with nothing outstanding no completion can come: keep polling the
            // clock instead of sleeping on the CQ (perftest would wait for an event for ever).
            let gap_only = bursts.as_ref().is_some_and(|b| b.in_gap()) && tot_ccnt >= tot_scnt;
            if cfg.wait == WaitMode::Event && tot_ccnt < total && !gap_only {
                if !wait_event(ep, CqKind::Send, cfg.stall_timeout, stop)? {
                    return Err(stalled("send completions", tot_ccnt, total, cfg.stall_timeout));
                }
                continue;
            }
            if idle_polls >= POLLS_PER_CLOCK_CHECK {
                idle_polls = 0;
                crate::signal::watch_tick();
                let now = clock::now();
                if gap_only {
                    // Waiting for the rate limiter is not a stall.
                    last_progress = now;
                } else if now.saturating_sub(last_progress) > stall_ticks {
                    return Err(stalled("send completions", tot_ccnt, total, cfg.stall_timeout));
                }
            }
            continue;
        }
        idle_polls = 0;
        let now = clock::now();
        last_progress = now;
        for wc in &wcs[..n] {
            let q = check_wc(wc, "client")?;
            if q >= nq {
                return Err(EngineError::Unexpected { detail: format!("wr_id 0x{:x} names QP #{q} of {nq}", wc.wr_id) });
            }
            let add = if duration.is_none() && ccnt[q] + cq_mod > iters { iters - ccnt[q] } else { cq_mod };
            ccnt[q] += add;
            tot_ccnt += add;
            if in_sample {
                sampled += add;
                samples.per_qp[q] += add;
            }
            since += add;
            if peak && tot_ccnt > 0 {
                if let Some(slot) = samples.tcompleted.get_mut((tot_ccnt - 1) as usize) {
                    *slot = now;
                }
            }
        }
    }
    if !peak {
        samples.tcompleted[0] = last_progress;
    }
    samples.messages = total;
    Ok(samples)
}

fn stalled(what: &str, done: u64, total: u64, timeout: Duration) -> EngineError {
    let waiting_for = if total == u64::MAX {
        what.to_string()
    } else {
        format!("{what} ({done} of {total} done)")
    };
    EngineError::Stalled { waiting_for, seconds: timeout.as_secs() }
}
