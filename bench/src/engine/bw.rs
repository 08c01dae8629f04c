//! Bandwidth loops: the sender (`run_iter_bw`), the receiving server of send tests, and the
//! duration (`-D`) window.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use uverbs::wr::{RecvWr, RemoteAddr, SendFlags, SendWr, Sge, UdDest, WorkCompletion, WrOpcode};

use super::addr::AddrCycle;
use super::clock::{self, TICKS_PER_SEC};
use super::rate::{Bursts, RateLimiter};
use super::{check_wc, make_wr_id, wait_event, CpuProbe, CqKind, Endpoint, EngineError, WaitMode};

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

/// Post the initial receives (rx_depth per QP) of a receiving side, before the start barrier.
/// Returns how many were posted per QP.
pub fn prepost_receives<E: Endpoint>(
    ep: &mut E,
    cfg: &BwConfig,
    targets: &[QpTarget],
    recv_len: u32,
) -> Result<Vec<u64>, EngineError> {
    let mut posted = vec![0u64; targets.len()];
    let limit = if cfg.duration.is_some() { cfg.rx_depth as u64 } else { (cfg.rx_depth as u64).min(cfg.iters) };
    for (q, t) in targets.iter().enumerate() {
        let sge = Sge { addr: t.recv_addr, length: recv_len, lkey: t.lkey };
        for i in 0..limit {
            let wr = RecvWr { wr_id: make_wr_id(q, i as u32), sgl: std::slice::from_ref(&sge) };
            ep.post_recv(q, std::slice::from_ref(&wr))?;
            posted[q] += 1;
        }
    }
    Ok(posted)
}

/// The server of send (and write-with-imm) BW tests: count receives, re-post, stamp the first
/// and the last. `posted` comes from [`prepost_receives`].
pub fn run_receiver<E: Endpoint>(
    ep: &mut E,
    cfg: &BwConfig,
    targets: &[QpTarget],
    recv_len: u32,
    mut posted: Vec<u64>,
    stop: &AtomicBool,
) -> Result<BwSamples, EngineError> {
    let nq = targets.len();
    let iters = cfg.iters;
    let total = if cfg.duration.is_some() { u64::MAX } else { iters.saturating_mul(nq as u64) };
    let mut rcnt = vec![0u64; nq];
    let mut tot = 0u64;
    let mut wcs = [WorkCompletion::default(); POLL_BATCH];
    let mut samples = BwSamples { tposted: vec![0], tcompleted: vec![0], per_qp: vec![0; nq], ..Default::default() };
    let mut first: Option<u64> = None;
    let mut last_progress = clock::now();
    let stall_ticks = DurationWindow::ticks(cfg.stall_timeout);
    let mut idle_polls = 0u32;
    let mut phases: Option<SampleClock> = None; // from the first receive
    let mut sampled = 0u64;

    while tot < total {
        if stop.load(Ordering::Relaxed) || crate::signal::requested() {
            return Err(EngineError::Interrupted);
        }
        if let (Some(d), Some(t0)) = (cfg.duration, first) {
            let ph = phases.get_or_insert_with(|| SampleClock::new(t0, d));
            let now = clock::now();
            if let Some(t) = ph.advance(now) {
                if samples.record(t, now, cfg.cpu_probe, sampled) {
                    return Ok(samples);
                }
            }
        }
        let n = ep.poll_recv(&mut wcs)?;
        if n == 0 {
            idle_polls += 1;
            if cfg.wait == WaitMode::Event {
                if !wait_event(ep, CqKind::Recv, cfg.stall_timeout, stop)? {
                    return Err(stalled("messages", tot, total, cfg.stall_timeout));
                }
                continue;
            }
            if idle_polls >= POLLS_PER_CLOCK_CHECK {
                idle_polls = 0;
                crate::signal::watch_tick();
                // Before the first message the client may still be setting up: same bound.
                if clock::now().saturating_sub(last_progress) > stall_ticks {
                    return Err(stalled("messages", tot, total, cfg.stall_timeout));
                }
            }
            continue;
        }
        idle_polls = 0;
        let now = clock::now();
        last_progress = now;
        if first.is_none() {
            first = Some(now);
            samples.tposted[0] = now;
        }
        for wc in &wcs[..n] {
            let q = check_wc(wc, "server")?;
            if q >= nq {
                return Err(EngineError::Unexpected { detail: format!("wr_id 0x{:x} names QP #{q} of {nq}", wc.wr_id) });
            }
            rcnt[q] += 1;
            tot += 1;
            if phases.is_some_and(|p| p.sampling()) {
                sampled += 1;
                if let Some(c) = samples.per_qp.get_mut(q) {
                    *c += 1;
                }
            }
            if cfg.duration.is_some() || posted[q] < iters {
                let t = &targets[q];
                let sge = Sge { addr: t.recv_addr, length: recv_len, lkey: t.lkey };
                let wr = RecvWr { wr_id: make_wr_id(q, (posted[q] & 0xffff_ffff) as u32), sgl: std::slice::from_ref(&sge) };
                ep.post_recv(q, std::slice::from_ref(&wr))?;
                posted[q] += 1;
            }
        }
        samples.tcompleted[0] = now;
    }
    samples.messages = total;
    if let Some(f) = first {
        samples.window = Some((f, samples.tcompleted[0]));
    }
    Ok(samples)
}

/// `-b` for send tests: both sides post sends and re-post receives in one loop (perftest's
/// run_iter_bi). The server holds its sends until its first receive arrives (perftest's deadlock
/// avoidance). `posted` comes from [`prepost_receives`]. Iteration mode: the samples describe
/// this side's sends (first post to last send completion); the peer's are added through the
/// report exchange. Duration mode (`-D`): the client starts its clock at once, the server at its
/// first receive; each side counts its receives and its completed sends (in moderation groups)
/// inside its own sample window, and ends at its own deadline (perftest exchanges no report
/// there: each side prints its own line). With `-e` the duration loop polls.
#[allow(clippy::too_many_arguments)]
pub fn run_duplex_send<E: Endpoint>(
    ep: &mut E,
    cfg: &BwConfig,
    targets: &[QpTarget],
    recv_len: u32,
    mut posted: Vec<u64>,
    server: bool,
    stop: &AtomicBool,
) -> Result<BwSamples, EngineError> {
    let nq = targets.len();
    if nq == 0 || nq != ep.num_qps() || posted.len() != nq {
        return Err(EngineError::Verbs(format!("duplex send: {} targets for {} QPs", nq, ep.num_qps())));
    }
    let duration = cfg.duration;
    let iters = if duration.is_some() { u64::MAX } else { cfg.iters };
    let total = if duration.is_some() { u64::MAX } else { iters.saturating_mul(nq as u64) };
    let tx_depth = cfg.tx_depth.max(1) as u64;
    let cq_mod = (cfg.cq_mod.max(1) as u64).min(tx_depth);
    let base_flags = if cfg.inline { SendFlags::INLINE } else { SendFlags::empty() };
    let (mut scnt, mut ccnt, mut rcnt) = (vec![0u64; nq], vec![0u64; nq], vec![0u64; nq]);
    let (mut tot_c, mut tot_r) = (0u64, 0u64);
    let mut cycles: Vec<AddrCycle> = targets
        .iter()
        .map(|t| AddrCycle::new(t.local_addr, t.remote.addr, cfg.size as u64, cfg.cycle_buffer, cfg.cache_line))
        .collect();
    let mut wcs = [WorkCompletion::default(); POLL_BATCH];
    let mut started = !server;
    let mut samples = BwSamples { tposted: vec![0], tcompleted: vec![0], ..Default::default() };
    let mut first_post: Option<u64> = None;
    let mut last_progress = clock::now();
    let stall_ticks = DurationWindow::ticks(cfg.stall_timeout);
    let mut idle = 0u32;
    // Duration mode: the client's clock starts now, the server's at its first receive.
    let mut phases = match duration {
        Some(d) if !server => Some(SampleClock::new(clock::now(), d)),
        _ => None,
    };
    let mut sampled = 0u64;
    while duration.is_some() || tot_c < total || tot_r < total {
        if stop.load(Ordering::Relaxed) || crate::signal::requested() {
            return Err(EngineError::Interrupted);
        }
        if let Some(ph) = phases.as_mut() {
            let now = clock::now();
            if let Some(t) = ph.advance(now) {
                if samples.record(t, now, cfg.cpu_probe, sampled) {
                    return Ok(samples);
                }
            }
        }
        let in_sample = phases.is_some_and(|p| p.sampling());
        if started {
            for q in 0..nq {
                while scnt[q] < iters && scnt[q] < tx_depth + ccnt[q] {
                    let (l, r) = cycles[q].current();
                    cycles[q].advance();
                    let sge = Sge { addr: l, length: cfg.size, lkey: targets[q].lkey };
                    let n = scnt[q];
                    let signaled = n % cq_mod == cq_mod - 1 || n + 1 == iters;
                    let wr = SendWr {
                        wr_id: make_wr_id(q, (n & 0xffff_ffff) as u32),
                        opcode: cfg.opcode,
                        flags: if signaled { base_flags | SendFlags::SIGNALED } else { base_flags },
                        sgl: std::slice::from_ref(&sge),
                        imm_data: 0,
                        remote: RemoteAddr { addr: r, rkey: targets[q].remote.rkey },
                        compare_add: 0,
                        swap: 0,
                        ud: targets[q].ud,
                        remote_srqn: targets[q].remote_srqn,
                        dci_stream: 0,
                    };
                    if first_post.is_none() {
                        first_post = Some(clock::now());
                    }
                    ep.post_send(q, std::slice::from_ref(&wr))?;
                    scnt[q] += 1;
                }
            }
        }
        let mut progress = false;
        let n = ep.poll_send(&mut wcs)?;
        for wc in &wcs[..n] {
            let q = check_wc(wc, if server { "server" } else { "client" })?;
            if q >= nq {
                return Err(EngineError::Unexpected { detail: format!("wr_id 0x{:x} names QP #{q} of {nq}", wc.wr_id) });
            }
            let add = if ccnt[q] + cq_mod > iters { iters - ccnt[q] } else { cq_mod };
            ccnt[q] += add;
            tot_c += add;
            if duration.is_none() {
                samples.tcompleted[0] = clock::now();
            } else if in_sample {
                sampled += add;
            }
            progress = true;
        }
        let n = ep.poll_recv(&mut wcs)?;
        for wc in &wcs[..n] {
            let q = check_wc(wc, if server { "server" } else { "client" })?;
            if q >= nq {
                return Err(EngineError::Unexpected { detail: format!("wr_id 0x{:x} names QP #{q} of {nq}", wc.wr_id) });
            }
            if !started {
                started = true;
                if let Some(d) = duration {
                    phases = Some(SampleClock::new(clock::now(), d));
                }
            }
            rcnt[q] += 1;
            tot_r += 1;
            if in_sample {
                sampled += 1;
            }
            progress = true;
            if posted[q] < iters {
                let t = &targets[q];
                let sge = Sge { addr: t.recv_addr, length: recv_len, lkey: t.lkey };
                let wr = RecvWr { wr_id: make_wr_id(q, (posted[q] & 0xffff_ffff) as u32), sgl: std::slice::from_ref(&sge) };
                ep.post_recv(q, std::slice::from_ref(&wr))?;
                posted[q] += 1;
            }
        }
        if progress {
            idle = 0;
            last_progress = clock::now();
        } else {
            idle += 1;
            if cfg.wait == WaitMode::Event && duration.is_none() {
                let which = if tot_r < total { CqKind::Recv } else { CqKind::Send };
                if tot_c < total && tot_r >= total || tot_r < total && tot_c >= total {
                    if !wait_event(ep, which, cfg.stall_timeout, stop)? {
                        return Err(stalled("completions", tot_c + tot_r, 2 * total, cfg.stall_timeout));
                    }
                    continue;
                }
            }
            if idle >= POLLS_PER_CLOCK_CHECK {
                idle = 0;
                crate::signal::watch_tick();
                if clock::now().saturating_sub(last_progress) > stall_ticks {
                    return Err(stalled("sends and receives", tot_c + tot_r, 2 * total, cfg.stall_timeout));
                }
            }
        }
    }
    samples.tposted[0] = first_post.unwrap_or(samples.tcompleted[0]);
    samples.messages = total;
    samples.window = Some((samples.tposted[0], samples.tcompleted[0]));
    Ok(samples)
}

#[cfg(test)]
mod tests {
    use super::super::model::{Model, ModelSide};
    use super::*;

    fn cfg(opcode: WrOpcode, iters: u64, tx: u32, cq_mod: u32, post_list: u32) -> BwConfig {
        BwConfig {
            iters,
            tx_depth: tx,
            rx_depth: 512,
            cq_mod,
            post_list,
            size: 64,
            opcode,
            inline: false,
            wait: WaitMode::Busy,
            record_peak: true,
            duration: None,
            stall_timeout: Duration::from_secs(2),
            cycle_buffer: 4096,
            cache_line: 64,
            compare_add: 0,
            swap: 0,
            cpu_probe: None,
            rate_limit: None,
        }
    }

    fn targets(model: &Model, nq: usize) -> Vec<QpTarget> {
        (0..nq)
            .map(|q| QpTarget {
                lkey: 1,
                local_addr: model.local_addr(q),
                recv_addr: model.local_addr(q) + 8192,
                remote: RemoteAddr { addr: model.remote_addr(q), rkey: 2 },
                ud: None,
                remote_srqn: 0,
            })
            .collect()
    }

    #[test]
    fn write_bw_completes_all_iterations_with_moderation() {
        let mut m = Model::new(ModelSide::Sender, 1);
        let t = targets(&m, 1);
        let c = cfg(WrOpcode::RdmaWrite, 1000, 128, 100, 1);
        let s = run_sender(&mut m, &c, &t, &AtomicBool::new(false)).unwrap();
        assert_eq!(s.messages, 1000);
        assert_eq!(m.posted(0), 1000);
        // signaled: every 100th, plus the last
        assert_eq!(m.signaled(0), 10);
        assert!(m.max_outstanding(0) <= 128);
        assert!(s.tposted.iter().all(|&t| t != 0));
        assert!(s.tcompleted[99] != 0 && s.tcompleted[999] != 0);
        assert!(s.elapsed() > 0);
    }

    #[test]
    fn partial_last_group_is_signaled_and_counted() {
        let mut m = Model::new(ModelSide::Sender, 2);
        let t = targets(&m, 2);
        let c = cfg(WrOpcode::RdmaWrite, 250, 64, 100, 1);
        let s = run_sender(&mut m, &c, &t, &AtomicBool::new(false)).unwrap();
        assert_eq!(s.messages, 500);
        for q in 0..2 {
            assert_eq!(m.posted(q), 250);
            assert_eq!(m.signaled(q), 4); // cq_mod clamped to 64: #63, #127, #191 and the last (#249)
            assert!(m.max_outstanding(q) <= 64);
        }
    }

    #[test]
    fn post_list_posts_chains() {
        let mut m = Model::new(ModelSide::Sender, 1);
        let t = targets(&m, 1);
        let c = cfg(WrOpcode::Send, 640, 128, 8, 8);
        let s = run_sender(&mut m, &c, &t, &AtomicBool::new(false)).unwrap();
        assert_eq!(s.messages, 640);
        assert_eq!(m.post_calls(0), 80);
        assert_eq!(m.signaled(0), 80);
    }

    #[test]
    fn remote_addresses_stay_in_the_cycle_buffer() {
        let mut m = Model::new(ModelSide::Sender, 1);
        let t = targets(&m, 1);
        let c = cfg(WrOpcode::RdmaWrite, 300, 16, 1, 1);
        run_sender(&mut m, &c, &t, &AtomicBool::new(false)).unwrap();
        let base = m.remote_addr(0);
        assert!(m.remote_addrs(0).iter().all(|&a| a >= base && a + 64 <= base + 4096));
        assert_eq!(m.remote_addrs(0)[1] - m.remote_addrs(0)[0], 64);
    }

    #[test]
    fn completion_error_is_named_with_cause() {
        let mut m = Model::new(ModelSide::Sender, 1);
        m.fail_after(5, uverbs::wr::WcStatus::RetryExcErr);
        let t = targets(&m, 1);
        let c = cfg(WrOpcode::RdmaWrite, 100, 16, 1, 1);
        let e = run_sender(&mut m, &c, &t, &AtomicBool::new(false)).unwrap_err();
        let s = e.to_string();
        assert!(s.contains("RETRY_EXC_ERR") && s.contains("GID"), "{s}");
    }

    #[test]
    fn dead_peer_stalls_with_a_bounded_wait() {
        let mut m = Model::new(ModelSide::Sender, 1);
        m.go_silent();
        let t = targets(&m, 1);
        let mut c = cfg(WrOpcode::RdmaWrite, 100, 16, 1, 1);
        c.stall_timeout = Duration::from_millis(200);
        let t0 = std::time::Instant::now();
        let e = run_sender(&mut m, &c, &t, &AtomicBool::new(false)).unwrap_err();
        assert!(matches!(e, EngineError::Stalled { .. }), "{e}");
        assert!(t0.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn duration_mode_counts_only_the_sample_window() {
        let mut m = Model::new(ModelSide::Sender, 1);
        let t = targets(&m, 1);
        let mut c = cfg(WrOpcode::RdmaWrite, 0, 32, 1, 1);
        c.record_peak = false;
        // A sample window long enough that a loaded machine cannot deschedule the loop for all of it.
        c.duration = Some(DurationWindow { total: Duration::from_millis(1200), margin: Duration::from_millis(100) });
        let s = run_sender(&mut m, &c, &t, &AtomicBool::new(false)).unwrap();
        let (a, b) = s.window.unwrap();
        assert!(b > a);
        assert!(s.messages > 0 && s.messages < m.posted(0));
    }

    #[test]
    fn sample_clock_walks_the_states_in_order() {
        let w = DurationWindow { total: Duration::from_secs(4), margin: Duration::from_secs(1) };
        let s = TICKS_PER_SEC;
        let mut c = SampleClock::new(100, w);
        assert_eq!(c.advance(100), None);
        assert!(!c.sampling());
        assert_eq!(c.advance(100 + s), Some(Transition::Sample));
        assert!(c.sampling());
        assert_eq!(c.advance(100 + 2 * s), None);
        assert_eq!(c.advance(100 + 3 * s), Some(Transition::StopSample));
        assert!(!c.sampling());
        assert_eq!(c.advance(100 + 4 * s - 1), None);
        assert_eq!(c.advance(100 + 4 * s), Some(Transition::End));
        assert_eq!(c.advance(u64::MAX), None);
        // A late caller still sees every transition, one per call, in order.
        let mut c = SampleClock::new(0, w);
        assert_eq!(c.advance(10 * s), Some(Transition::Sample));
        assert_eq!(c.advance(10 * s), Some(Transition::StopSample));
        assert_eq!(c.advance(10 * s), Some(Transition::End));
        // Margin 0: SAMPLE at the start; no overflow near the end of the clock.
        let mut c = SampleClock::new(u64::MAX - 5, DurationWindow { total: Duration::from_secs(1), margin: Duration::ZERO });
        assert_eq!(c.advance(u64::MAX - 5), Some(Transition::Sample));
    }

    static PROBES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    fn counting_probe() -> Option<(u64, u64)> {
        let n = PROBES.fetch_add(1, Ordering::SeqCst);
        Some((n, 1000 + n))
    }

    #[test]
    fn cpu_is_read_at_sample_and_stop_sample_only() {
        let mut m = Model::new(ModelSide::Sender, 1);
        let t = targets(&m, 1);
        let mut c = cfg(WrOpcode::RdmaWrite, 0, 32, 1, 1);
        c.record_peak = false;
        c.cpu_probe = Some(counting_probe);
        c.duration = Some(DurationWindow { total: Duration::from_millis(300), margin: Duration::from_millis(100) });
        let s = run_sender(&mut m, &c, &t, &AtomicBool::new(false)).unwrap();
        assert_eq!(PROBES.load(Ordering::SeqCst), 2);
        assert_eq!(s.cpu, [Some((0, 1000)), Some((1, 1001))]);
        // Without --cpu_util nothing is read.
        c.cpu_probe = None;
        let s = run_sender(&mut m, &c, &t, &AtomicBool::new(false)).unwrap();
        assert_eq!(s.cpu, [None, None]);
    }

    #[test]
    fn run_infinitely_reports_every_period_until_stopped() {
        let mut m = Model::new(ModelSide::Sender, 1);
        let t = targets(&m, 1);
        let c = cfg(WrOpcode::RdmaWrite, 5, 32, 4, 1);
        let stop = AtomicBool::new(false);
        let mut reports: Vec<(u64, u64)> = Vec::new();
        let mut report = |n: u64, ticks: u64| {
            reports.push((n, ticks));
            if reports.len() == 3 {
                stop.store(true, Ordering::Relaxed);
            }
        };
        let e = run_sender_infinitely(&mut m, &c, &t, &stop, Duration::from_millis(50), &mut report).unwrap_err();
        assert_eq!(e, EngineError::Interrupted);
        assert_eq!(reports.len(), 3);
        // Far more than -n 5: the loop ignores iterations; each report covers about one period.
        assert!(reports.iter().all(|&(n, ticks)| n > 5 && ticks >= TICKS_PER_SEC / 20), "{reports:?}");
        assert!(m.max_outstanding(0) <= 32);
    }

    #[test]
    fn receiver_counts_and_reposts() {
        let mut m = Model::new(ModelSide::Receiver { incoming: 300 }, 1);
        let t = targets(&m, 1);
        let mut c = cfg(WrOpcode::Send, 300, 128, 1, 1);
        c.rx_depth = 64;
        let posted = prepost_receives(&mut m, &c, &t, 64).unwrap();
        assert_eq!(posted, vec![64]);
        let s = run_receiver(&mut m, &c, &t, 64, posted, &AtomicBool::new(false)).unwrap();
        assert_eq!(s.messages, 300);
        assert_eq!(m.recvs_posted(0), 300);
        assert!(s.window.is_some());
    }

    #[test]
    fn duplex_send_sends_and_receives_on_both_roles() {
        for server in [false, true] {
            let mut m = Model::new(ModelSide::Receiver { incoming: 300 }, 1);
            let t = targets(&m, 1);
            let mut c = cfg(WrOpcode::Send, 300, 64, 16, 1);
            c.rx_depth = 64;
            c.record_peak = false;
            let posted = prepost_receives(&mut m, &c, &t, 64).unwrap();
            let s = run_duplex_send(&mut m, &c, &t, 64, posted, server, &AtomicBool::new(false)).unwrap();
            assert_eq!(s.messages, 300);
            assert_eq!(m.posted(0), 300);
            assert_eq!(m.recvs_posted(0), 300);
            assert!(m.max_outstanding(0) <= 64);
            let (a, b) = s.window.unwrap();
            assert!(b >= a);
        }
    }

    #[test]
    fn duplex_send_stalls_with_a_bounded_wait() {
        let mut m = Model::new(ModelSide::Receiver { incoming: 0 }, 1);
        let t = targets(&m, 1);
        let mut c = cfg(WrOpcode::Send, 100, 16, 1, 1);
        c.rx_depth = 16;
        c.stall_timeout = Duration::from_millis(200);
        let posted = prepost_receives(&mut m, &c, &t, 64).unwrap();
        let e = run_duplex_send(&mut m, &c, &t, 64, posted, true, &AtomicBool::new(false)).unwrap_err();
        assert!(matches!(e, EngineError::Stalled { .. }), "{e}");
    }

    #[test]
    fn rate_limiter_posts_bursts_separated_by_the_gap() {
        let mut m = Model::new(ModelSide::Sender, 2);
        let t = targets(&m, 2);
        let mut c = cfg(WrOpcode::RdmaWrite, 20, 64, 1, 1);
        let gap = 20 * TICKS_PER_SEC / 1000;
        c.rate_limit = Some(RateLimiter { burst: 10, gap_ticks: gap });
        let s = run_sender(&mut m, &c, &t, &AtomicBool::new(false)).unwrap();
        assert_eq!(s.messages, 40);
        assert_eq!((m.posted(0), m.posted(1)), (20, 20));
        // One burst is 10 posts (across the QPs); each starts one gap after the previous one's
        // start (the post is stamped a little after the limiter read the clock: 1 ms slack).
        let slack = TICKS_PER_SEC / 1000;
        for k in 1..4 {
            let d = s.tposted[10 * k] - s.tposted[10 * (k - 1)];
            assert!(d + slack >= gap, "burst {k} began {d} ticks after the previous one");
        }
        assert!(s.tposted[30] - s.tposted[0] + slack >= 3 * gap);
        // Within a burst the posts are back to back (no gap between them).
        assert!(s.tposted[9] - s.tposted[0] < gap);
    }

    #[test]
    fn rate_limiter_in_event_mode_does_not_sleep_through_the_gap() {
        let mut m = Model::new(ModelSide::Sender, 1);
        let t = targets(&m, 1);
        let mut c = cfg(WrOpcode::RdmaWrite, 30, 64, 1, 1);
        c.wait = WaitMode::Event;
        c.stall_timeout = Duration::from_millis(500);
        c.rate_limit = Some(RateLimiter { burst: 10, gap_ticks: TICKS_PER_SEC / 50 });
        let s = run_sender(&mut m, &c, &t, &AtomicBool::new(false)).unwrap();
        assert_eq!(s.messages, 30);
    }

    #[test]
    fn duplex_send_duration_counts_both_directions_in_the_window() {
        for server in [false, true] {
            let mut m = Model::new(ModelSide::Receiver { incoming: u64::MAX / 2 }, 1);
            let t = targets(&m, 1);
            let mut c = cfg(WrOpcode::Send, 0, 64, 16, 1);
            c.rx_depth = 64;
            c.record_peak = false;
            c.duration = Some(DurationWindow { total: Duration::from_millis(1200), margin: Duration::from_millis(100) });
            let posted = prepost_receives(&mut m, &c, &t, 64).unwrap();
            let s = run_duplex_send(&mut m, &c, &t, 64, posted, server, &AtomicBool::new(false)).unwrap();
            let (a, b) = s.window.unwrap();
            assert!(b > a);
            // Receives and send completions of the window, fewer than all that happened.
            assert!(s.messages > 0, "server={server}");
            assert!(s.messages < m.posted(0) + m.recvs_posted(0), "server={server}");
            assert!(m.max_outstanding(0) <= 64);
        }
    }

    #[test]
    fn long_windows_do_not_overflow() {
        assert_eq!(DurationWindow::ticks(Duration::from_secs(60)), 60 * TICKS_PER_SEC);
        assert_eq!(DurationWindow::ticks(Duration::from_secs(24 * 3600)), 24 * 3600 * TICKS_PER_SEC);
        assert_eq!(DurationWindow::ticks(Duration::from_millis(1)), TICKS_PER_SEC / 1000);
        assert_eq!(DurationWindow::ticks(Duration::MAX), u64::MAX);
    }

    #[test]
    fn interrupted_run_stops() {
        let mut m = Model::new(ModelSide::Sender, 1);
        let t = targets(&m, 1);
        let c = cfg(WrOpcode::RdmaWrite, 100, 16, 1, 1);
        let e = run_sender(&mut m, &c, &t, &AtomicBool::new(true)).unwrap_err();
        assert_eq!(e, EngineError::Interrupted);
    }

    #[test]
    fn xrc_every_send_names_its_targets_srqn() {
        // -c XRC: each QP's sends carry the SRQ number of the peer key it targets, in single
        // posts, post lists and the duplex loop alike.
        for post_list in [1, 8] {
            let mut m = Model::new(ModelSide::Sender, 2);
            let mut t = targets(&m, 2);
            t[0].remote_srqn = 0x00ab_cdef;
            t[1].remote_srqn = 0x0000_0042;
            let c = cfg(WrOpcode::Send, 64, 16, 8, post_list);
            run_sender(&mut m, &c, &t, &AtomicBool::new(false)).unwrap();
            assert_eq!(m.remote_srqns(0).len(), 64);
            assert!(m.remote_srqns(0).iter().all(|&n| n == 0x00ab_cdef));
            assert!(m.remote_srqns(1).iter().all(|&n| n == 0x42) && m.remote_srqns(1).len() == 64);
        }
        let mut m = Model::new(ModelSide::Receiver { incoming: 50 }, 1);
        let mut t = targets(&m, 1);
        t[0].remote_srqn = 7;
        let mut c = cfg(WrOpcode::Send, 50, 16, 4, 1);
        c.rx_depth = 16;
        c.record_peak = false;
        let posted = prepost_receives(&mut m, &c, &t, 64).unwrap();
        run_duplex_send(&mut m, &c, &t, 64, posted, false, &AtomicBool::new(false)).unwrap();
        assert_eq!(m.remote_srqns(0), vec![7u32; 50].as_slice());
    }
}
