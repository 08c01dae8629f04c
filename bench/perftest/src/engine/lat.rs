//! Latency loops: write ping-pong over memory polling, send ping-pong over receive completions,
//! and the client-only read/atomic loop. One QP, one message in flight.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use uverbs::wr::{RecvWr, RemoteAddr, SendFlags, SendWr, Sge, WorkCompletion, WrOpcode};

use super::bw::QpTarget;
use bench_core::clock;
use super::{check_wc, make_wr_id, wait_event, CpuProbe, CqKind, Endpoint, EngineError, WaitMode};

#[derive(Clone, Debug)]
pub struct LatConfig {
    pub iters: u64,
    pub size: u32,
    pub opcode: WrOpcode,
    pub inline: bool,
    pub wait: WaitMode,
    /// Give up when the peer does not answer for this long.
    pub stall_timeout: Duration,
    /// `-D`: run this long and report the average only.
    pub duration: Option<Duration>,
    /// `-f`: with `-D`, the warm-up before and the cool-down after the sample window (perftest's
    /// default is duration/4, applied by the parser).
    pub margin: Duration,
    /// `--latency_gap`: busy-wait this long before each post (perftest spins on its cycle
    /// counter right before stamping and posting; zero: back to back).
    pub gap: Duration,
    /// Receive length for send_lat (size, +40 for UD's GRH).
    pub recv_len: u32,
    /// send_lat: receives pre-posted per message size (`-r`, at most `iters`). A fixed-count
    /// run re-posts a consumed receive only while more messages than those still posted are
    /// due (perftest's `rcnt + size_per_qp <= iters`), so every size ends with none posted and
    /// the next size of `-a` can post its own without overflowing the receive queue.
    pub rx_depth: u32,
    pub compare_add: u64,
    pub swap: u64,
    /// `--cpu_util` with `-D`: read when the sample window opens and when it closes.
    pub cpu_probe: Option<CpuProbe>,
}

/// Which side of a ping-pong this process is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Client,
    Server,
}

/// `tposted[k]`: just before the k-th post. Duration mode: the count and the window instead.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LatSamples {
    pub tposted: Vec<u64>,
    pub iters: u64,
    pub window: Option<(u64, u64)>,
    /// `--cpu_util`: /proc/stat (user, idle) at the window's start and end.
    pub cpu: [Option<(u64, u64)>; 2],
}

const CLOCK_CHECK_EVERY: u32 = 4096;

/// Spin until `ready()` holds (true), or the run's own `deadline` (duration mode: this side's
/// end time, in ticks) passes (false). Re-checks the clock now and then: past `timeout` without
/// progress the peer is declared stalled.
///
/// Inlined, with the periodic check out of line: the spin is the end of every measured round
/// trip, and a call's return is an indirect jump (cheap on hardware, a lookup under emulation).
#[inline(always)]
fn spin_until<E: Endpoint>(
    ep: &mut E,
    stop: &AtomicBool,
    timeout: Duration,
    deadline: Option<u64>,
    what: impl Fn() -> String,
    mut ready: impl FnMut(&mut E) -> Result<bool, EngineError>,
) -> Result<bool, EngineError> {
    let mut spins = 0u32;
    // The stall clock starts at the first check, not on entry: a ping-pong usually completes
    // before that, and each clock read is time taken from the measured round trip (perftest
    // reads the clock once per iteration).
    let mut start = None;
    loop {
        if ready(ep)? {
            return Ok(true);
        }
        spins += 1;
        if spins >= CLOCK_CHECK_EVERY {
            spins = 0;
            if let Some(r) = spin_check(stop, timeout, deadline, &mut start, &what) {
                return r;
            }
        }
    }
}

/// The now-and-then part of [`spin_until`]: `Some` ends the spin with that result.
#[cold]
#[inline(never)]
fn spin_check(
    stop: &AtomicBool,
    timeout: Duration,
    deadline: Option<u64>,
    start: &mut Option<u64>,
    what: &dyn Fn() -> String,
) -> Option<Result<bool, EngineError>> {
    bench_core::signal::watch_tick();
    if stop.load(Ordering::Relaxed) {
        return Some(Err(EngineError::Interrupted));
    }
    let now = clock::now();
    if deadline.is_some_and(|d| now >= d) {
        return Some(Ok(false));
    }
    if now.saturating_sub(*start.get_or_insert(now)) > timeout.as_nanos() as u64 {
        return Some(Err(EngineError::Stalled { waiting_for: what(), seconds: timeout.as_secs() }));
    }
    None
}

/// Wait for exactly one completion on `which` CQ and check it; `None` when this side's own
/// `deadline` (duration mode) passed first — in `-D` each side stops on its own clock, so a
/// message the peer never sent must not hold this side past its end.
///
/// Inlined into each loop, so that the busy poll that ends the round trip is not a call away;
/// the event-mode wait (`-e`) stays out of line.
#[inline(always)]
fn wait_one<E: Endpoint>(
    ep: &mut E,
    which: CqKind,
    cfg: &LatConfig,
    stop: &AtomicBool,
    deadline: Option<u64>,
    side: &'static str,
    what: &str,
) -> Result<Option<WorkCompletion>, EngineError> {
    if cfg.wait == WaitMode::Event {
        return wait_one_event(ep, which, cfg.stall_timeout, stop, deadline, side, what);
    }
    let mut wc = [WorkCompletion::default(); 1];
    let got = spin_until(ep, stop, cfg.stall_timeout, deadline, || what.to_string(), |ep| poll_one(ep, which, &mut wc))?;
    if !got {
        return Ok(None);
    }
    check_wc(&wc[0], side)?;
    Ok(Some(wc[0]))
}

/// Poll `which` CQ for one completion into `wc`; true when one came.
#[inline(always)]
fn poll_one<E: Endpoint>(ep: &mut E, which: CqKind, wc: &mut [WorkCompletion; 1]) -> Result<bool, EngineError> {
    let n = match which {
        CqKind::Send => ep.poll_send(wc)?,
        CqKind::Recv => ep.poll_recv(wc)?,
    };
    Ok(n == 1)
}

/// [`wait_one`] with `-e`: sleep on the completion channel between polls, at most `stall` at a
/// time.
#[inline(never)]
fn wait_one_event<E: Endpoint>(
    ep: &mut E,
    which: CqKind,
    stall: Duration,
    stop: &AtomicBool,
    deadline: Option<u64>,
    side: &'static str,
    what: &str,
) -> Result<Option<WorkCompletion>, EngineError> {
    let mut wc = [WorkCompletion::default(); 1];
    loop {
        if poll_one(ep, which, &mut wc)? {
            check_wc(&wc[0], side)?;
            return Ok(Some(wc[0]));
        }
        if stop.load(Ordering::Relaxed) {
            return Err(EngineError::Interrupted);
        }
        if deadline.is_some_and(|d| clock::now() >= d) {
            return Ok(None);
        }
        if !wait_event(ep, which, stall, stop)? {
            return Err(EngineError::Stalled { waiting_for: what.to_string(), seconds: stall.as_secs() });
        }
    }
}

struct Window {
    end: Option<u64>,
    sample: Option<(u64, u64)>,
    count: u64,
    probe: Option<CpuProbe>,
    /// 0 before the sample window, 1 inside, 2 after.
    phase: u8,
    cpu: [Option<(u64, u64)>; 2],
    /// Duration mode: (duration, margin) in ticks.
    plan: Option<(u64, u64)>,
}

/// write_lat -D has no close handshake: each side exits at its own end. A peer that hangs up
/// this close to our own end (or after our sample window) has simply finished first.
pub const PEER_END_GRACE: Duration = Duration::from_secs(1);

/// A stop signal ends the loop at the next iteration, also when no wait is long enough to
/// reach the periodic check (one relaxed load of a static).
#[inline(always)]
fn stop_on_signal() -> Result<(), EngineError> {
    if bench_core::signal::requested() {
        return Err(EngineError::Interrupted);
    }
    Ok(())
}

/// `--latency_gap`: spin until `gap` has passed (perftest busy-waits on its cycle counter).
/// Checks `stop` now and then, so a long gap still ends on Ctrl-C. Without a gap (the default)
/// this is one test in the loop, not a call.
#[inline(always)]
fn gap_wait(gap: Duration, stop: &AtomicBool) -> Result<(), EngineError> {
    if gap.is_zero() {
        return Ok(());
    }
    gap_spin(gap, stop)
}

/// The iteration bound and the stamp array of a run: unbounded and empty in `-D` (the window
/// counts the round trips), else one stamp per iteration.
fn sample_space(cfg: &LatConfig) -> (u64, Vec<u64>) {
    if cfg.duration.is_some() {
        (u64::MAX, Vec::new())
    } else {
        (cfg.iters, super::stamp_array(cfg.iters as usize))
    }
}

/// The `--latency_gap` wait, then the stamp of post `scnt` (send_lat, read_lat); true when the
/// run is over (the duration window ended).
#[inline(always)]
fn gap_then_stamp(
    cfg: &LatConfig,
    stop: &AtomicBool,
    w: &mut Window,
    raw: &clock::RawStamps,
    tposted: &mut [u64],
    scnt: u64,
) -> Result<bool, EngineError> {
    gap_wait(cfg.gap, stop)?;
    Ok(w.stamp(raw, tposted, scnt))
}

#[inline(never)]
fn gap_spin(gap: Duration, stop: &AtomicBool) -> Result<(), EngineError> {
    let end = clock::now() + gap.as_nanos() as u64;
    let mut spins = 0u32;
    while clock::now() < end {
        spins += 1;
        if spins >= CLOCK_CHECK_EVERY {
            spins = 0;
            bench_core::signal::watch_tick();
            if stop.load(Ordering::Relaxed) {
                return Err(EngineError::Interrupted);
            }
        }
        std::hint::spin_loop();
    }
    Ok(())
}

impl Window {
    /// The `-D` state machine (perftest's catch_alarm): START, SAMPLE after `margin`,
    /// STOP_SAMPLE at `duration - margin`, END at `duration`, all from `start`.
    fn new(d: Option<Duration>, margin: Duration, probe: Option<CpuProbe>) -> Self {
        let mut w = Window::deferred(d, margin, probe);
        w.start(clock::now());
        w
    }
    /// Duration mode, timer not started yet (send_lat starts it on the first receive, as
    /// perftest's `set_on_first_rx_packet`).
    fn deferred(d: Option<Duration>, margin: Duration, probe: Option<CpuProbe>) -> Self {
        let plan = d.map(|d| (d.as_nanos() as u64, margin.min(d / 2).as_nanos() as u64));
        Window { end: None, sample: None, count: 0, probe, phase: 0, cpu: [None, None], plan }
    }
    /// Start the timer at `now` (once; later calls do nothing).
    fn start(&mut self, now: u64) {
        if let (Some((t, m)), None) = (self.plan, self.end) {
            self.end = Some(now + t);
            self.sample = Some((now + m, now + t - m));
        }
    }
    /// The peer's run is over (write_lat -D: it hung up): true when that is a normal end for
    /// this side too — our sample window has closed, or our own end is at most `PEER_END_GRACE`
    /// away (the two sides' timers start a TCP message apart). The window stays as planned (as
    /// perftest, which would spin with nothing arriving until its own end); a CPU reading still
    /// owed for the window's end is taken now.
    fn peer_ended_normally(&mut self, now: u64) -> bool {
        let (Some(end), Some((_, b))) = (self.end, self.sample) else { return false };
        let ok = now >= b || end.saturating_sub(now) <= PEER_END_GRACE.as_nanos() as u64;
        if ok && self.phase < 2 {
            if self.phase == 1 {
                self.cpu[1] = self.probe.and_then(|f| f());
            }
            self.phase = 2;
        }
        ok
    }
    /// Stamp iteration `i` before its post; true when the run is over. With a fixed count
    /// the stamp is a raw clock reading into `tposted` (converted by [`finish`]: no arithmetic
    /// inside the measured round trip, as perftest's `get_cycles`); in `-D` the window's
    /// state machine needs the time in ticks, and nothing is stored.
    #[inline(always)]
    fn stamp(&mut self, raw: &clock::RawStamps, tposted: &mut [u64], i: u64) -> bool {
        if self.plan.is_none() {
            if let Some(slot) = tposted.get_mut(i as usize) {
                *slot = raw.read();
            }
            return false;
        }
        self.tick(clock::now())
    }
    /// Returns true when the run is over.
    fn tick(&mut self, stamp: u64) -> bool {
        if let Some((a, b)) = self.sample {
            if self.phase == 0 && stamp >= a {
                self.phase = 1;
                self.cpu[0] = self.probe.and_then(|f| f());
            }
            if self.phase == 1 && stamp >= b {
                self.phase = 2;
                self.cpu[1] = self.probe.and_then(|f| f());
            }
            if stamp >= a && stamp < b {
                self.count += 1;
            }
        }
        matches!(self.end, Some(e) if stamp >= e)
    }
}

fn finish(mut tposted: Vec<u64>, iters: u64, w: Window, raw: &clock::RawStamps) -> LatSamples {
    match w.sample {
        Some(s) => LatSamples { tposted: Vec::new(), iters: w.count, window: Some(s), cpu: w.cpu },
        None => {
            raw.to_ns(&mut tposted);
            LatSamples { tposted, iters, window: None, cpu: [None, None] }
        }
    }
}

/// ib_write_lat: each side writes the whole message to the peer and stamps the running count in
/// its last byte; the receiver spins on the last byte of its own receive area. The server writes
/// first.
///
/// `-D`: both sides start their timers when the loop starts and stop on their own clocks; there
/// is no close handshake, so the side that ends first exits and the other sees the out-of-band
/// connection close (`stop` set, `peer_gone` true). Near this side's own end that is the peer's
/// normal end (see [`PEER_END_GRACE`]) and the loop reports what it measured; earlier it is a
/// failure of the peer.
pub fn run_write_lat<E: Endpoint>(
    ep: &mut E,
    cfg: &LatConfig,
    target: &QpTarget,
    role: Role,
    stop: &AtomicBool,
    peer_gone: &AtomicBool,
) -> Result<LatSamples, EngineError> {
    let size = cfg.size.max(1) as usize;
    let (iters, mut tposted) = sample_space(cfg);
    let raw = clock::RawStamps::get();
    let sge = Sge { addr: target.local_addr, length: cfg.size, lkey: target.lkey };
    let flags = SendFlags::SIGNALED | if cfg.inline { SendFlags::INLINE } else { SendFlags::empty() };
    let side = if role == Role::Client { "client" } else { "server" };
    let mut w = Window::new(cfg.duration, cfg.margin, cfg.cpu_probe);
    let (mut scnt, mut rcnt) = (0u64, 0u64);
    // In -D, a stop caused by the peer's hang-up near our end is the end of the run.
    let ended_by_peer = |w: &mut Window, r: &Result<bool, EngineError>| {
        matches!(r, Err(EngineError::Interrupted))
            && cfg.duration.is_some()
            && peer_gone.load(Ordering::Acquire)
            && w.peer_ended_normally(clock::now())
    };
    let post = |ep: &mut E, scnt: u64| {
        ep.set_send_area_byte(0, size - 1, scnt as u8);
        let wr = SendWr {
            flags,
            remote: target.remote,
            // -c SRD: the write is addressed as a send is.
            ud: target.ud,
            remote_srqn: target.remote_srqn,
            dci_stream: 0,
            ..SendWr::new(make_wr_id(0, scnt as u32), cfg.opcode, std::slice::from_ref(&sge))
        };
        ep.post_send(0, std::slice::from_ref(&wr))
    };
    // -D: at its end perftest posts one more write and does not wait for it (a peer spinning on
    // that count moves on); not when the end came while a write was outstanding.
    let mut last_write = false;
    while scnt < iters {
        stop_on_signal()?;
        if !(role == Role::Server && scnt == 0) {
            rcnt += 1;
            let want = rcnt as u8;
            let r = spin_until(ep, stop, cfg.stall_timeout, w.end, || format!("the peer's write #{rcnt}"), |ep| {
                Ok(ep.recv_area_byte(0, size - 1) == want)
            });
            if ended_by_peer(&mut w, &r) {
                break;
            }
            if !r? {
                last_write = true;
                break;
            }
        }
        let r = gap_wait(cfg.gap, stop).map(|()| true);
        if ended_by_peer(&mut w, &r) {
            break;
        }
        r?;
        if w.stamp(&raw, &mut tposted, scnt) {
            last_write = true;
            break;
        }
        scnt += 1;
        post(ep, scnt)?;
        let r = wait_one(ep, CqKind::Send, cfg, stop, w.end, side, "the write's completion").map(|c| c.is_some());
        if ended_by_peer(&mut w, &r) {
            break;
        }
        if !r? {
            break;
        }
    }
    if last_write {
        post(ep, scnt + 1)?;
    }
    // The server's last write is answered by the client's last write: wait for it too (as
    // perftest does, looping until it has received `iters`), or the server would tear its QP
    // down while that write is in flight and the client would retry into a QP that is gone.
    if cfg.duration.is_none() {
        while rcnt < iters {
            rcnt += 1;
            let want = rcnt as u8;
            spin_until(ep, stop, cfg.stall_timeout, None, || format!("the peer's write #{rcnt}"), |ep| {
                Ok(ep.recv_area_byte(0, size - 1) == want)
            })?;
        }
    }
    Ok(finish(tposted, iters, w, &raw))
}

/// ib_send_lat: the client sends first; each side alternates "wait for a receive, re-post it"
/// and "stamp, send, wait for the send completion". Receives must be pre-posted by the caller
/// (see [`prepost_lat_receives`]).
///
/// `-D`: as perftest, each side starts its timer on its first received message (the server on
/// the client's first send, the client on the server's first answer) and stops on its own clock;
/// the close handshake that follows lines the two sides up again.
pub fn run_send_lat<E: Endpoint>(
    ep: &mut E,
    cfg: &LatConfig,
    target: &QpTarget,
    role: Role,
    stop: &AtomicBool,
) -> Result<LatSamples, EngineError> {
    let (iters, mut tposted) = sample_space(cfg);
    let raw = clock::RawStamps::get();
    let sge = Sge { addr: target.local_addr, length: cfg.size, lkey: target.lkey };
    let rsge = Sge { addr: target.recv_addr, length: cfg.recv_len, lkey: target.lkey };
    let flags = SendFlags::SIGNALED | if cfg.inline { SendFlags::INLINE } else { SendFlags::empty() };
    let side = if role == Role::Client { "client" } else { "server" };
    let mut w = Window::deferred(cfg.duration, cfg.margin, cfg.cpu_probe);
    let (mut scnt, mut rcnt) = (0u64, 0u64);
    while scnt < iters {
        stop_on_signal()?;
        if !(role == Role::Client && scnt == 0) {
            if wait_one(ep, CqKind::Recv, cfg, stop, w.end, side, "the peer's message")?.is_none() {
                break;
            }
            if rcnt == 0 {
                w.start(clock::now());
            }
            rcnt += 1;
            if cfg.duration.is_some() || rcnt + u64::from(cfg.rx_depth.max(1)) <= iters {
                let rwr = RecvWr { wr_id: make_wr_id(0, rcnt as u32), sgl: std::slice::from_ref(&rsge) };
                ep.post_recv(0, std::slice::from_ref(&rwr))?;
            }
        }
        if gap_then_stamp(cfg, stop, &mut w, &raw, &mut tposted, scnt)? {
            break;
        }
        scnt += 1;
        let wr = SendWr {
            flags,
            ud: target.ud,
            remote_srqn: target.remote_srqn,
            dci_stream: 0,
            ..SendWr::new(make_wr_id(0, scnt as u32), cfg.opcode, std::slice::from_ref(&sge))
        };
        ep.post_send(0, std::slice::from_ref(&wr))?;
        if wait_one(ep, CqKind::Send, cfg, stop, w.end, side, "the send's completion")?.is_none() {
            break;
        }
    }
    // The server answers the client's last message before it stops; the client must consume that
    // answer too, or it would sit in the peer's send queue.
    if role == Role::Client && cfg.duration.is_none() {
        wait_one(ep, CqKind::Recv, cfg, stop, None, side, "the peer's last message")?;
    }
    Ok(finish(tposted, iters, w, &raw))
}

/// Post the receives a send_lat side needs before the start barrier (`cfg.rx_depth` of them).
pub fn prepost_lat_receives<E: Endpoint>(ep: &mut E, cfg: &LatConfig, target: &QpTarget) -> Result<(), EngineError> {
    let rsge = Sge { addr: target.recv_addr, length: cfg.recv_len, lkey: target.lkey };
    for i in 0..cfg.rx_depth.max(1) {
        let rwr = RecvWr { wr_id: make_wr_id(0, u32::MAX - i), sgl: std::slice::from_ref(&rsge) };
        ep.post_recv(0, std::slice::from_ref(&rwr))?;
    }
    Ok(())
}

/// ib_read_lat / ib_atomic_lat (client only): stamp, post one READ or atomic, wait, repeat.
pub fn run_read_lat<E: Endpoint>(
    ep: &mut E,
    cfg: &LatConfig,
    target: &QpTarget,
    stop: &AtomicBool,
) -> Result<LatSamples, EngineError> {
    let (iters, mut tposted) = sample_space(cfg);
    let raw = clock::RawStamps::get();
    let sge = Sge { addr: target.local_addr, length: cfg.size, lkey: target.lkey };
    let mut w = Window::new(cfg.duration, cfg.margin, cfg.cpu_probe);
    let mut scnt = 0u64;
    while scnt < iters {
        stop_on_signal()?;
        if gap_then_stamp(cfg, stop, &mut w, &raw, &mut tposted, scnt)? {
            break;
        }
        scnt += 1;
        let wr = SendWr {
            flags: SendFlags::SIGNALED,
            remote: RemoteAddr { addr: target.remote.addr, rkey: target.remote.rkey },
            compare_add: cfg.compare_add,
            swap: cfg.swap,
            // -c SRD: a read is addressed as a send is (AH, remote QPN, QKEY).
            ud: target.ud,
            remote_srqn: target.remote_srqn,
            dci_stream: 0,
            ..SendWr::new(make_wr_id(0, scnt as u32), cfg.opcode, std::slice::from_ref(&sge))
        };
        ep.post_send(0, std::slice::from_ref(&wr))?;
        if wait_one(ep, CqKind::Send, cfg, stop, w.end, "client", "the operation's completion")?.is_none() {
            break;
        }
    }
    Ok(finish(tposted, iters, w, &raw))
}

#[cfg(test)]
mod tests {
    use super::super::model::{Model, ModelSide};
    use super::*;

    fn cfg(op: WrOpcode, iters: u64) -> LatConfig {
        LatConfig {
            iters,
            size: 2,
            opcode: op,
            inline: true,
            wait: WaitMode::Busy,
            stall_timeout: Duration::from_secs(2),
            duration: None,
            margin: Duration::ZERO,
            gap: Duration::ZERO,
            recv_len: 2,
            rx_depth: 16,
            compare_add: 0,
            swap: 0,
            cpu_probe: None,
        }
    }

    fn target(m: &Model) -> QpTarget {
        QpTarget {
            lkey: 1,
            local_addr: m.local_addr(0),
            recv_addr: m.local_addr(0) + 4096,
            remote: RemoteAddr { addr: m.remote_addr(0), rkey: 2 },
            ud: None,
            remote_srqn: 0,
        }
    }

    #[test]
    fn write_lat_client_and_server_ping_pong() {
        for role in [Role::Client, Role::Server] {
            let mut m = Model::new(ModelSide::PingPong { server_first: true, role_is_server: role == Role::Server }, 1);
            let t = target(&m);
            let (stop, gone) = (AtomicBool::new(false), AtomicBool::new(false));
            let s = run_write_lat(&mut m, &cfg(WrOpcode::RdmaWrite, 1000), &t, role, &stop, &gone).unwrap();
            assert_eq!(s.tposted.len(), 1000);
            assert!(s.tposted.windows(2).all(|w| w[1] >= w[0]));
            assert_eq!(m.posted(0), 1000);
        }
    }

    /// Ten writes with a 100 ms stall bound against a peer that stops answering: the error.
    fn stalled_write_lat(m: &mut Model, role: Role) -> EngineError {
        let t = target(m);
        let mut c = cfg(WrOpcode::RdmaWrite, 10);
        c.stall_timeout = Duration::from_millis(100);
        run_write_lat(m, &c, &t, role, &AtomicBool::new(false), &AtomicBool::new(false)).unwrap_err()
    }

    #[test]
    fn write_lat_server_waits_for_the_clients_last_write() {
        let mut m = Model::new(ModelSide::PingPong { server_first: true, role_is_server: true }, 1);
        m.peer_stops_after(9);
        let e = stalled_write_lat(&mut m, Role::Server);
        assert!(e.to_string().contains("peer's write #10"), "{e}");
    }

    #[test]
    fn write_lat_stalls_when_peer_is_silent() {
        let mut m = Model::new(ModelSide::PingPong { server_first: true, role_is_server: false }, 1);
        m.go_silent();
        let e = stalled_write_lat(&mut m, Role::Client);
        assert!(e.to_string().contains("peer's write #1"), "{e}");
    }

    #[test]
    fn send_lat_ping_pong() {
        for role in [Role::Client, Role::Server] {
            let mut m = Model::new(ModelSide::PingPong { server_first: false, role_is_server: role == Role::Server }, 1);
            let t = target(&m);
            let c = cfg(WrOpcode::Send, 500);
            prepost_lat_receives(&mut m, &c, &t).unwrap();
            let s = run_send_lat(&mut m, &c, &t, role, &AtomicBool::new(false)).unwrap();
            assert_eq!(s.tposted.len(), 500);
            assert_eq!(m.posted(0), 500);
        }
    }

    /// `-a`: each size pre-posts `rx_depth` receives again; a size must end with every receive
    /// it posted consumed (perftest's rule), or the queue overflows a few sizes later.
    #[test]
    fn send_lat_sizes_end_with_no_receive_posted() {
        for role in [Role::Client, Role::Server] {
            for (iters, depth) in [(10u64, 10u32), (500, 16), (3, 1)] {
                let mut m = Model::new(ModelSide::PingPong { server_first: false, role_is_server: role == Role::Server }, 1);
                let t = target(&m);
                let mut c = cfg(WrOpcode::Send, iters);
                c.rx_depth = depth;
                for size in 1..=3u64 {
                    m.next_size();
                    prepost_lat_receives(&mut m, &c, &t).unwrap();
                    run_send_lat(&mut m, &c, &t, role, &AtomicBool::new(false)).unwrap();
                    assert_eq!(m.recvs_outstanding(0), 0, "{role:?} iters {iters} depth {depth} size #{size}");
                    assert_eq!(m.recvs_posted(0), size * iters, "{role:?} iters {iters} depth {depth}");
                }
            }
        }
    }

    #[test]
    fn read_lat_runs() {
        let mut m = Model::new(ModelSide::Sender, 1);
        let t = target(&m);
        let s = run_read_lat(&mut m, &cfg(WrOpcode::RdmaRead, 200), &t, &AtomicBool::new(false)).unwrap();
        assert_eq!(s.tposted.len(), 200);
        assert_eq!(m.signaled(0), 200);
    }

    #[test]
    fn duration_mode_reports_a_count() {
        let mut m = Model::new(ModelSide::Sender, 1);
        let t = target(&m);
        let mut c = cfg(WrOpcode::AtomicFetchAndAdd, 0);
        // Long enough that a loaded machine cannot deschedule the loop for the whole window.
        c.duration = Some(Duration::from_millis(1200));
        let s = run_read_lat(&mut m, &c, &t, &AtomicBool::new(false)).unwrap();
        assert!(s.iters > 0 && s.window.is_some() && s.tposted.is_empty());
        assert_eq!(s.cpu, [None, None]);
    }

    #[test]
    fn duration_mode_ends_on_its_own_clock_when_the_peer_stops() {
        // -D: each side stops at its own deadline; a peer that stopped earlier (or never
        // answers the last message) must not hold this side until the stall timeout.
        for (opcode, server_first) in [(WrOpcode::Send, false), (WrOpcode::RdmaWrite, true)] {
            let mut m = Model::new(ModelSide::PingPong { server_first, role_is_server: true }, 1);
            m.peer_stops_after(50);
            let t = target(&m);
            let mut c = cfg(opcode, 0);
            c.duration = Some(Duration::from_millis(300));
            c.stall_timeout = Duration::from_secs(30);
            if opcode == WrOpcode::Send {
                c.rx_depth = 64;
                prepost_lat_receives(&mut m, &c, &t).unwrap();
            }
            let t0 = std::time::Instant::now();
            let (stop, gone) = (AtomicBool::new(false), AtomicBool::new(false));
            let s = if opcode == WrOpcode::Send {
                run_send_lat(&mut m, &c, &t, Role::Server, &stop)
            } else {
                run_write_lat(&mut m, &c, &t, Role::Server, &stop, &gone)
            }
            .unwrap();
            assert!(t0.elapsed() < Duration::from_secs(10), "{opcode:?}: held past its own end");
            assert!(s.window.is_some());
        }
    }

    #[test]
    fn margin_sets_the_sample_window() {
        // -D 8 -f 3: SAMPLE 3 s after the start, STOP_SAMPLE 5 s after it, END at 8 s.
        let w = Window::new(Some(Duration::from_secs(8)), Duration::from_secs(3), None);
        let end = w.end.unwrap();
        let (a, b) = w.sample.unwrap();
        let start = end - 8_000_000_000;
        assert_eq!((a - start, b - start), (3_000_000_000, 5_000_000_000));
        // margin 0: the whole run is sampled.
        let w = Window::new(Some(Duration::from_secs(2)), Duration::ZERO, None);
        let (a, b) = w.sample.unwrap();
        assert_eq!((a + 2_000_000_000, b), (w.end.unwrap(), w.end.unwrap()));
        // send_lat: nothing until the timer starts, then it starts once.
        let mut w = Window::deferred(Some(Duration::from_secs(4)), Duration::from_secs(1), None);
        assert!(!w.tick(clock::now()) && w.end.is_none() && w.count == 0);
        w.start(100);
        w.start(5_000_000_000);
        assert_eq!((w.sample, w.end), (Some((1_000_000_100, 3_000_000_100)), Some(4_000_000_100)));
    }

    #[test]
    fn duration_mode_counts_only_inside_the_margins() {
        let mut m = Model::new(ModelSide::Sender, 1);
        let t = target(&m);
        let mut c = cfg(WrOpcode::RdmaRead, 0);
        // A wide middle window: on a loaded host the loop may be off the CPU for a few hundred
        // ms, and the check is that some (not all) operations count, not how many.
        c.duration = Some(Duration::from_millis(1500));
        c.margin = Duration::from_millis(300);
        let s = run_read_lat(&mut m, &c, &t, &AtomicBool::new(false)).unwrap();
        let (a, b) = s.window.unwrap();
        assert_eq!(b - a, 900_000_000);
        // Operations ran for the whole 1.5 s; only those inside the middle 900 ms count.
        assert!(s.iters > 0 && s.iters < m.posted(0), "{} of {}", s.iters, m.posted(0));
    }

    #[test]
    fn latency_gap_spaces_the_posts() {
        // Each post comes at least the gap after the previous one (a lower bound only).
        let spaced = |t: &[u64]| t.windows(2).all(|w| w[1] - w[0] >= 2_000_000);
        let mut m = Model::new(ModelSide::Sender, 1);
        let t = target(&m);
        let mut c = cfg(WrOpcode::RdmaRead, 20);
        c.gap = Duration::from_millis(2);
        let s = run_read_lat(&mut m, &c, &t, &AtomicBool::new(false)).unwrap();
        assert!(s.tposted.len() == 20 && spaced(&s.tposted), "{:?}", s.tposted);
        for role in [Role::Client, Role::Server] {
            let mut m = Model::new(ModelSide::PingPong { server_first: false, role_is_server: role == Role::Server }, 1);
            let mut c = cfg(WrOpcode::Send, 10);
            c.gap = Duration::from_millis(2);
            prepost_lat_receives(&mut m, &c, &t).unwrap();
            let s = run_send_lat(&mut m, &c, &t, role, &AtomicBool::new(false)).unwrap();
            assert!(s.tposted.len() == 10 && spaced(&s.tposted), "{:?}", s.tposted);
        }
        let mut m = Model::new(ModelSide::PingPong { server_first: true, role_is_server: true }, 1);
        let mut c = cfg(WrOpcode::RdmaWrite, 10);
        c.gap = Duration::from_millis(2);
        let s = run_write_lat(&mut m, &c, &t, Role::Server, &AtomicBool::new(false), &AtomicBool::new(false)).unwrap();
        assert!(s.tposted.len() == 10 && spaced(&s.tposted), "{:?}", s.tposted);
    }

    #[test]
    fn latency_gap_ends_on_a_stop_request() {
        let mut m = Model::new(ModelSide::Sender, 1);
        let t = target(&m);
        let mut c = cfg(WrOpcode::RdmaRead, 5);
        c.gap = Duration::from_secs(3600);
        let e = run_read_lat(&mut m, &c, &t, &AtomicBool::new(true)).unwrap_err();
        assert_eq!(e, EngineError::Interrupted);
    }

    /// write_lat -D: the peer stops writing after 50 messages and hangs up (the watch tick sets
    /// `peer_gone` and `stop`) `after` the start.
    fn write_lat_peer_hangs_up(duration: Duration, margin: Duration, after: Duration) -> Result<LatSamples, EngineError> {
        let mut m = Model::new(ModelSide::PingPong { server_first: true, role_is_server: false }, 1);
        m.peer_stops_after(50);
        let t = target(&m);
        let mut c = cfg(WrOpcode::RdmaWrite, 0);
        c.duration = Some(duration);
        c.margin = margin;
        c.stall_timeout = Duration::from_secs(30);
        let (stop, gone) = (AtomicBool::new(false), AtomicBool::new(false));
        std::thread::scope(|sc| {
            sc.spawn(|| {
                std::thread::sleep(after);
                gone.store(true, Ordering::Release);
                stop.store(true, Ordering::Release);
            });
            run_write_lat(&mut m, &c, &t, Role::Client, &stop, &gone)
        })
    }

    #[test]
    fn write_lat_duration_peer_hang_up_near_the_end_is_its_normal_end() {
        // After the sample window closed (in the last margin): the run is complete. (The model's
        // peer stopped writing before the window opened, so nothing was counted.)
        let ms = Duration::from_millis;
        let s = write_lat_peer_hangs_up(ms(4000), ms(1500), ms(2800)).unwrap();
        assert!(s.window.is_some());
        // Margin 0 (-D 2): within the grace before our own end.
        let s = write_lat_peer_hangs_up(ms(1500), Duration::ZERO, ms(900)).unwrap();
        assert!(s.iters > 0 && s.window.is_some());
    }

    #[test]
    fn write_lat_duration_peer_hang_up_mid_run_is_an_error() {
        let t0 = std::time::Instant::now();
        let ms = Duration::from_millis;
        let e = write_lat_peer_hangs_up(ms(10_000), ms(2000), ms(300)).unwrap_err();
        assert_eq!(e, EngineError::Interrupted);
        assert!(t0.elapsed() < Duration::from_secs(8), "not ended by the hang-up");
        // Before the sample window even opened.
        let e = write_lat_peer_hangs_up(ms(10_000), ms(4000), ms(300)).unwrap_err();
        assert_eq!(e, EngineError::Interrupted);
    }

    fn fixed_probe() -> Option<(u64, u64)> {
        Some((7, 9))
    }

    #[test]
    fn duration_mode_reads_cpu_at_the_window_edges() {
        let mut m = Model::new(ModelSide::Sender, 1);
        let t = target(&m);
        let mut c = cfg(WrOpcode::RdmaRead, 0);
        c.duration = Some(Duration::from_millis(200));
        c.cpu_probe = Some(fixed_probe);
        let s = run_read_lat(&mut m, &c, &t, &AtomicBool::new(false)).unwrap();
        assert_eq!(s.cpu, [Some((7, 9)), Some((7, 9))]);
    }

    #[test]
    fn xrc_latency_sends_name_the_targets_srqn() {
        let srqn = 0x0012_3456;
        let mut m = Model::new(ModelSide::PingPong { server_first: true, role_is_server: false }, 1);
        let t = QpTarget { remote_srqn: srqn, ..target(&m) };
        run_write_lat(&mut m, &cfg(WrOpcode::RdmaWrite, 20), &t, Role::Client, &AtomicBool::new(false), &AtomicBool::new(false)).unwrap();
        assert_eq!(m.remote_srqns(0), vec![srqn; 20].as_slice());
        let mut m = Model::new(ModelSide::PingPong { server_first: false, role_is_server: false }, 1);
        let c = cfg(WrOpcode::Send, 20);
        prepost_lat_receives(&mut m, &c, &t).unwrap();
        run_send_lat(&mut m, &c, &t, Role::Client, &AtomicBool::new(false)).unwrap();
        assert_eq!(m.remote_srqns(0), vec![srqn; 20].as_slice());
        let mut m = Model::new(ModelSide::Sender, 1);
        run_read_lat(&mut m, &cfg(WrOpcode::RdmaRead, 20), &t, &AtomicBool::new(false)).unwrap();
        assert_eq!(m.remote_srqns(0), vec![srqn; 20].as_slice());
    }

    #[test]
    fn srd_reads_name_the_peers_address_and_buffer() {
        // -c SRD: each read carries the AH, the peer's QPN and perftest's QKEY besides its rkey
        // and address (perftest 6.29: `ibv_wr_rdma_read` then `ibv_wr_set_ud_addr`).
        let ud = uverbs::wr::UdDest { ah: 3, remote_qpn: 0x42, remote_qkey: 0x1111_1111 };
        let mut m = Model::new(ModelSide::Sender, 1);
        let t = QpTarget { ud: Some(ud), ..target(&m) };
        run_read_lat(&mut m, &cfg(WrOpcode::RdmaRead, 20), &t, &AtomicBool::new(false)).unwrap();
        assert_eq!(m.ud_dests(0), vec![Some(ud); 20].as_slice());
        assert_eq!(m.remote_addrs(0), vec![t.remote.addr; 20].as_slice());
    }

    #[test]
    fn srd_writes_name_the_peers_address_and_buffer() {
        let ud = uverbs::wr::UdDest { ah: 4, remote_qpn: 0x43, remote_qkey: 0x1111_1111 };
        let mut m = Model::new(ModelSide::PingPong { server_first: true, role_is_server: false }, 1);
        let t = QpTarget { ud: Some(ud), ..target(&m) };
        run_write_lat(&mut m, &cfg(WrOpcode::RdmaWrite, 20), &t, Role::Client, &AtomicBool::new(false), &AtomicBool::new(false)).unwrap();
        assert_eq!(m.ud_dests(0), vec![Some(ud); 20].as_slice());
        assert_eq!(m.remote_addrs(0), vec![t.remote.addr; 20].as_slice());
    }
}
