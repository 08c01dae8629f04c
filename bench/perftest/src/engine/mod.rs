//! The test engine: perftest's sender, receiver and ping-pong loops, independent of any device.
//!
//! The loops drive an [`Endpoint`] (one side's QPs and CQs). The real implementation sits over
//! `uverbs` objects and is generic over the provider, so post/poll inline into these loops; the
//! tests drive the same loops against a model of the other side. Nothing here allocates per
//! operation: work requests are built once per QP and patched in place.
//!
//! Timestamps are nanoseconds from a monotonic clock (perftest uses the TSC; its formulas only
//! need "cycles" and "cycles per second", and a 1 GHz clock keeps them exact).

pub mod addr;
pub mod bw;
pub mod crypto;
pub mod dc;
pub mod dualport;
pub mod dv;
pub mod hw_rate;
pub mod lat;
pub mod memsrc;
pub mod rate;
pub mod ud_cm;
pub mod verbs;
pub mod xrc;

use std::fmt;
use std::time::Duration;

use uverbs::wr::{RecvWr, SendWr, WcStatus, WorkCompletion, WrOpcode};

/// One side's data path as the loops see it. `qp` is the index of a QP of this test (0..num_qps).
pub trait Endpoint {
    fn num_qps(&self) -> usize;
    fn post_send(&mut self, qp: usize, wrs: &[SendWr<'_>]) -> Result<(), EngineError>;
    fn post_recv(&mut self, qp: usize, wrs: &[RecvWr<'_>]) -> Result<(), EngineError>;
    /// Poll the send CQ (shared by all QPs of the test).
    fn poll_send(&mut self, out: &mut [WorkCompletion]) -> Result<usize, EngineError>;
    /// Poll the receive CQ (tests that receive: send, write-with-imm).
    fn poll_recv(&mut self, out: &mut [WorkCompletion]) -> Result<usize, EngineError>;
    /// Event mode (`-e`): block until the CQ has a completion event or `timeout` passes.
    /// Returns false on timeout. Busy-polling endpoints return true at once.
    fn wait_cq_event(&mut self, which: CqKind, timeout: Duration) -> Result<bool, EngineError>;
    /// Read the byte at `offset` of QP `qp`'s receive area (write_lat polls the last byte of the
    /// message the peer wrote there). Implementations use a volatile read.
    fn recv_area_byte(&self, qp: usize, offset: usize) -> u8;
    /// Store into QP `qp`'s send area (write_lat stamps the iteration count into the last byte).
    fn set_send_area_byte(&mut self, qp: usize, offset: usize, value: u8);
}

/// `--cpu_util`: reads (user, idle) jiffies from /proc/stat. The duration loops call it at the
/// SAMPLE and STOP_SAMPLE transitions, so the utilisation covers the measured window only.
pub type CpuProbe = fn() -> Option<(u64, u64)>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CqKind {
    Send,
    Recv,
}

/// How a loop waits for completions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitMode {
    /// Spin on poll (perftest's default).
    Busy,
    /// Arm the CQ and sleep on its completion channel (`-e`).
    Event,
}

/// What went wrong in a loop, as one line for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineError {
    /// A completion with an error status.
    Completion { side: &'static str, status: WcStatus, vendor_err: u32, wr_id: u64, qp: usize },
    /// A completion that does not belong to anything we posted.
    Unexpected { detail: String },
    /// Nothing happened for too long.
    Stalled { waiting_for: String, seconds: u64 },
    /// A verbs call failed.
    Verbs(String),
    /// The run was interrupted (Ctrl-C).
    Interrupted,
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineError::Completion { side, status, vendor_err, wr_id, qp } => write!(
                f,
                "Completion with error at {side}: {} (status {}, vendor error 0x{vendor_err:x}, QP #{qp}, wr_id 0x{wr_id:x}): likely cause: {}",
                status.name(),
                status.raw(),
                status.likely_cause()
            ),
            EngineError::Unexpected { detail } => write!(f, "unexpected completion: {detail}"),
            EngineError::Stalled { waiting_for, seconds } => write!(
                f,
                "no progress for {seconds} s while waiting for {waiting_for}; the peer may be dead or the fabric path broken (check GID index -x, MTU and that the peer is still running)"
            ),
            EngineError::Verbs(s) => f.write_str(s),
            EngineError::Interrupted => f.write_str("interrupted"),
        }
    }
}

impl std::error::Error for EngineError {}

impl From<uverbs::Error> for EngineError {
    fn from(e: uverbs::Error) -> Self {
        EngineError::Verbs(e.to_string())
    }
}

impl From<uverbs::provider::PostError> for EngineError {
    fn from(e: uverbs::provider::PostError) -> Self {
        EngineError::Verbs(e.to_string())
    }
}

/// A zeroed time-stamp array whose pages are already touched. `vec![0; n]` becomes calloc,
/// whose fresh pages fault on first write: that would happen inside the measured loop (one
/// fault per 512 stamps, tens of µs each under emulation), landing in the latency tail.
#[allow(clippy::slow_vector_initialization)] // on purpose: vec![0; n] is the lazy calloc
pub fn stamp_array(n: usize) -> Vec<u64> {
    let mut v = Vec::with_capacity(n);
    v.resize(n, 0);
    // Keep the stores: the optimiser may not turn them into a calloc, but make sure each page
    // is really written before the loop starts.
    for i in (0..n).step_by(512) {
        v[i] = std::hint::black_box(0);
    }
    v
}

/// wr_id layout shared by all loops: QP index in the high half, a slot/sequence in the low half
/// (as perftest does), so a completion names its QP without a lookup table.
#[inline]
pub fn make_wr_id(qp: usize, slot: u32) -> u64 {
    ((qp as u64) << 32) | slot as u64
}

#[inline]
pub fn wr_id_qp(wr_id: u64) -> usize {
    (wr_id >> 32) as usize
}

/// Check one completion; errors become [`EngineError::Completion`].
#[inline]
pub(crate) fn check_wc(wc: &WorkCompletion, side: &'static str) -> Result<usize, EngineError> {
    if wc.status != WcStatus::Success {
        return Err(EngineError::Completion {
            side,
            status: wc.status,
            vendor_err: wc.vendor_err,
            wr_id: wc.wr_id,
            qp: wr_id_qp(wc.wr_id),
        });
    }
    Ok(wr_id_qp(wc.wr_id))
}

/// Event mode: wait up to `timeout` for a CQ event, in slices of at most 250 ms so a stop
/// request (Ctrl-C, a dead peer) ends the wait quickly. Same result as
/// [`Endpoint::wait_cq_event`]: false when nothing came within `timeout`.
pub(crate) fn wait_event<E: Endpoint>(
    ep: &mut E,
    which: CqKind,
    timeout: Duration,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<bool, EngineError> {
    const SLICE: Duration = Duration::from_millis(250);
    let deadline = std::time::Instant::now() + timeout;
    loop {
        bench_core::signal::watch_tick();
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(EngineError::Interrupted);
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Ok(false);
        }
        if ep.wait_cq_event(which, left.min(SLICE))? {
            return Ok(true);
        }
    }
}

/// The opcode perftest posts for a verb.
pub fn opcode_for(verb: Verb, atomic: AtomicType) -> WrOpcode {
    match verb {
        Verb::Write => WrOpcode::RdmaWrite,
        Verb::WriteImm => WrOpcode::RdmaWriteWithImm,
        Verb::Send => WrOpcode::Send,
        Verb::SendImm => WrOpcode::SendWithImm,
        Verb::Read => WrOpcode::RdmaRead,
        Verb::Atomic => match atomic {
            AtomicType::CmpAndSwap => WrOpcode::AtomicCmpAndSwp,
            AtomicType::FetchAndAdd => WrOpcode::AtomicFetchAndAdd,
        },
    }
}

/// The verb and the atomic operation are the wire's enums, as everywhere in bench.
pub use crate::oob::msg::{AtomicType, Verb};

#[cfg(test)]
pub(crate) mod model;
