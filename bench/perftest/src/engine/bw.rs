//! Bandwidth loops: the sender (`run_iter_bw`), the duration (`-D`) window, and (in `recv`)
//! the receiving server of send tests and `-b` for send tests.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use uverbs::wr::{RemoteAddr, UdDest, WrOpcode};

use bench_core::clock::TICKS_PER_SEC;
use super::rate::RateLimiter;
use super::{CpuProbe, Endpoint, EngineError, WaitMode};

mod recv;
mod send;
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

use send::sender_loop;

fn stalled(what: &str, done: u64, total: u64, timeout: Duration) -> EngineError {
    let waiting_for = if total == u64::MAX {
        what.to_string()
    } else {
        format!("{what} ({done} of {total} done)")
    };
    EngineError::Stalled { waiting_for, seconds: timeout.as_secs() }
}
