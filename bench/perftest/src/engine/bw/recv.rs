//! The receiving side of the BW loops: the pre-posted receives, the server of send and
//! write-with-immediate tests, and `-b` for send tests (both sides send and receive).

use std::sync::atomic::{AtomicBool, Ordering};

use uverbs::wr::{RecvWr, RemoteAddr, SendFlags, SendWr, Sge, WorkCompletion};

use super::super::addr::AddrCycle;
use bench_core::clock;
use super::super::{check_wc, make_wr_id, wait_event, CqKind, Endpoint, EngineError, WaitMode};
use super::{stalled, BwConfig, BwSamples, DurationWindow, QpTarget, SampleClock, POLLS_PER_CLOCK_CHECK, POLL_BATCH};

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
        if stop.load(Ordering::Relaxed) || bench_core::signal::requested() {
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
                bench_core::signal::watch_tick();
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
    posted: Vec<u64>,
    server: bool,
    stop: &AtomicBool,
) -> Result<BwSamples, EngineError> {
    let nq = targets.len();
    if nq == 0 || nq != ep.num_qps() || posted.len() != nq {
        return Err(EngineError::Verbs(format!("duplex send: {} targets for {} QPs", nq, ep.num_qps())));
    }
    let duration = cfg.duration;
    let mut run = DuplexSend::new(cfg, targets, posted, server);
    let total = run.total;
    let mut wcs = [WorkCompletion::default(); POLL_BATCH];
    let mut last_progress = clock::now();
    let stall_ticks = DurationWindow::ticks(cfg.stall_timeout);
    let mut idle = 0u32;
    // Duration mode: the client's clock starts now, the server's at its first receive.
    run.phases = match duration {
        Some(d) if !server => Some(SampleClock::new(clock::now(), d)),
        _ => None,
    };
    while duration.is_some() || run.tot_c < total || run.tot_r < total {
        if stop.load(Ordering::Relaxed) || bench_core::signal::requested() {
            return Err(EngineError::Interrupted);
        }
        if let Some(ph) = run.phases.as_mut() {
            let now = clock::now();
            if let Some(t) = ph.advance(now) {
                if run.samples.record(t, now, cfg.cpu_probe, run.sampled) {
                    return Ok(run.samples);
                }
            }
        }
        let in_sample = run.phases.is_some_and(|p| p.sampling());
        if run.started {
            run.post_sends(ep, cfg, targets)?;
        }
        let sent = run.reap_sends(ep, cfg, &mut wcs, in_sample)?;
        let received = run.reap_receives(ep, cfg, targets, recv_len, &mut wcs, in_sample)?;
        let progress = sent || received;
        if progress {
            idle = 0;
            last_progress = clock::now();
        } else {
            idle += 1;
            let (tot_c, tot_r) = (run.tot_c, run.tot_r);
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
                bench_core::signal::watch_tick();
                if clock::now().saturating_sub(last_progress) > stall_ticks {
                    return Err(stalled("sends and receives", tot_c + tot_r, 2 * total, cfg.stall_timeout));
                }
            }
        }
    }
    let mut samples = run.samples;
    samples.tposted[0] = run.first_post.unwrap_or(samples.tcompleted[0]);
    samples.messages = total;
    samples.window = Some((samples.tposted[0], samples.tcompleted[0]));
    Ok(samples)
}

/// One side of a `-b` send run: what it runs to, its counters and its samples.
struct DuplexSend {
    nq: usize,
    /// Sends per QP (unbounded in duration mode).
    iters: u64,
    /// Sends, and receives, to complete on all QPs (unbounded in duration mode).
    total: u64,
    tx_depth: u64,
    cq_mod: u64,
    base_flags: SendFlags,
    server: bool,
    /// Per QP: sends posted, sends completed, receives completed, receives posted.
    scnt: Vec<u64>,
    ccnt: Vec<u64>,
    rcnt: Vec<u64>,
    posted: Vec<u64>,
    tot_c: u64,
    tot_r: u64,
    cycles: Vec<AddrCycle>,
    /// The server holds its sends until its first receive.
    started: bool,
    samples: BwSamples,
    first_post: Option<u64>,
    phases: Option<SampleClock>,
    sampled: u64,
}

impl DuplexSend {
    fn new(cfg: &BwConfig, targets: &[QpTarget], posted: Vec<u64>, server: bool) -> Self {
        let nq = targets.len();
        let duration = cfg.duration;
        let iters = if duration.is_some() { u64::MAX } else { cfg.iters };
        let total = if duration.is_some() { u64::MAX } else { iters.saturating_mul(nq as u64) };
        let tx_depth = cfg.tx_depth.max(1) as u64;
        let cq_mod = (cfg.cq_mod.max(1) as u64).min(tx_depth);
        let base_flags = if cfg.inline { SendFlags::INLINE } else { SendFlags::empty() };
        let (scnt, ccnt, rcnt) = (vec![0u64; nq], vec![0u64; nq], vec![0u64; nq]);
        let (tot_c, tot_r) = (0u64, 0u64);
        let cycles: Vec<AddrCycle> = targets
            .iter()
            .map(|t| AddrCycle::new(t.local_addr, t.remote.addr, cfg.size as u64, cfg.cycle_buffer, cfg.cache_line))
            .collect();
        let started = !server;
        let samples = BwSamples { tposted: vec![0], tcompleted: vec![0], ..Default::default() };
        DuplexSend {
            nq,
            iters,
            total,
            tx_depth,
            cq_mod,
            base_flags,
            server,
            scnt,
            ccnt,
            rcnt,
            posted,
            tot_c,
            tot_r,
            cycles,
            started,
            samples,
            first_post: None,
            phases: None,
            sampled: 0,
        }
    }

    /// Fill each QP's send queue up to tx_depth sends beyond the completed ones.
    fn post_sends<E: Endpoint>(&mut self, ep: &mut E, cfg: &BwConfig, targets: &[QpTarget]) -> Result<(), EngineError> {
        let (iters, tx_depth, cq_mod, base_flags) = (self.iters, self.tx_depth, self.cq_mod, self.base_flags);
        let (scnt, ccnt, cycles) = (&mut self.scnt, &self.ccnt, &mut self.cycles);
        for q in 0..self.nq {
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
                if self.first_post.is_none() {
                    self.first_post = Some(clock::now());
                }
                ep.post_send(q, std::slice::from_ref(&wr))?;
                scnt[q] += 1;
            }
        }
        Ok(())
    }

    /// Count the send completions (each stands for a moderation group). Returns whether any came.
    fn reap_sends<E: Endpoint>(
        &mut self,
        ep: &mut E,
        cfg: &BwConfig,
        wcs: &mut [WorkCompletion],
        in_sample: bool,
    ) -> Result<bool, EngineError> {
        let (nq, iters, cq_mod, server, duration) = (self.nq, self.iters, self.cq_mod, self.server, cfg.duration);
        let mut progress = false;
        let n = ep.poll_send(wcs)?;
        for wc in &wcs[..n] {
            let q = check_wc(wc, if server { "server" } else { "client" })?;
            if q >= nq {
                return Err(EngineError::Unexpected { detail: format!("wr_id 0x{:x} names QP #{q} of {nq}", wc.wr_id) });
            }
            let add = if self.ccnt[q] + cq_mod > iters { iters - self.ccnt[q] } else { cq_mod };
            self.ccnt[q] += add;
            self.tot_c += add;
            if duration.is_none() {
                self.samples.tcompleted[0] = clock::now();
            } else if in_sample {
                self.sampled += add;
            }
            progress = true;
        }
        Ok(progress)
    }

    /// Count the receives and re-post them; the server's first one starts its sends (and its
    /// clock in duration mode). Returns whether any came.
    fn reap_receives<E: Endpoint>(
        &mut self,
        ep: &mut E,
        cfg: &BwConfig,
        targets: &[QpTarget],
        recv_len: u32,
        wcs: &mut [WorkCompletion],
        in_sample: bool,
    ) -> Result<bool, EngineError> {
        let (nq, iters, server, duration) = (self.nq, self.iters, self.server, cfg.duration);
        let mut progress = false;
        let n = ep.poll_recv(wcs)?;
        for wc in &wcs[..n] {
            let q = check_wc(wc, if server { "server" } else { "client" })?;
            if q >= nq {
                return Err(EngineError::Unexpected { detail: format!("wr_id 0x{:x} names QP #{q} of {nq}", wc.wr_id) });
            }
            if !self.started {
                self.started = true;
                if let Some(d) = duration {
                    self.phases = Some(SampleClock::new(clock::now(), d));
                }
            }
            self.rcnt[q] += 1;
            self.tot_r += 1;
            if in_sample {
                self.sampled += 1;
            }
            progress = true;
            let posted = &mut self.posted;
            if posted[q] < iters {
                let t = &targets[q];
                let sge = Sge { addr: t.recv_addr, length: recv_len, lkey: t.lkey };
                let wr = RecvWr { wr_id: make_wr_id(q, (posted[q] & 0xffff_ffff) as u32), sgl: std::slice::from_ref(&sge) };
                ep.post_recv(q, std::slice::from_ref(&wr))?;
                posted[q] += 1;
            }
        }
        Ok(progress)
    }
}
