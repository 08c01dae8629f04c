//! What the two hot-path examples (`mlx5_hotpath`, `rxe_hotpath_cmp`) share: the work request,
//! the two measured loops (`hot_loop_bw`, `hot_loop_lat`: the functions callgrind collects, the
//! twins of those in the oracles' hotpath.c), the command line and the memfd standing in for the
//! uverbs fd. Each example supplies its provider and the other side (the device or the kernel)
//! through [`Peer`], inlined into the loops.
#![allow(dead_code)]

use std::hint::black_box;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use uverbs::provider::{PostError, Provider, SharedFd};
use uverbs::wr::{RemoteAddr, SendFlags, SendWr, Sge, WcStatus, WorkCompletion, WrOpcode};

pub const TX_DEPTH: u64 = 128;
pub const CQ_MOD: u64 = 100;
pub const POLL_BATCH: usize = 16;
pub const MSG_SIZE: u32 = 64;
pub const REMOTE_VA: u64 = 0x0000_7f00_1234_0000;
pub const RKEY: u32 = 0xabcd;

/// The provider under the loops, its CQ and QP, and the peer playing the other side.
pub struct Bench<P: Provider, S> {
    pub ctx: P,
    pub cq: P::Cq,
    pub qp: P::Qp,
    pub peer: S,
    /// The registered buffer the SGE points into (`lkey`).
    pub data: Vec<u8>,
    pub lkey: u32,
    /// What the loops count, checked against the C side's run.
    pub completions: u64,
    pub last_wr_id: u64,
}

impl<P: Provider, S> Bench<P, S> {
    pub fn new(ctx: P, cq: P::Cq, qp: P::Qp, peer: S, lkey: u32) -> Self {
        Bench { ctx, cq, qp, peer, data: vec![0x5a; 8192], lkey, completions: 0, last_wr_id: 0 }
    }
}

/// What differs between the examples: how a WR is posted and who completes it.
pub trait Peer<P: Provider> {
    /// Post `wr` on `qp`. It hands the result back for the loop to `expect`: with the
    /// `expect` in here the compiler lays the bw loop out differently (about 5 Ir per post
    /// fewer, not the provider's doing), and the figures would no longer compare with
    /// earlier ones.
    ///
    /// # Safety
    /// `wr`'s SGE is readable for its length (`Provider::post_send`'s contract).
    unsafe fn post(ctx: &P, qp: &mut P::Qp, wr: &SendWr<'_>) -> Result<(), PostError>;
    /// Complete the signaled WR `n` (its WQE index and wr_id: every WQE is one slot, one WQEBB
    /// on mlx5).
    fn complete(&mut self, n: u64);
}

pub fn rdma_write<'a>(sge: &'a [Sge]) -> SendWr<'a> {
    let mut wr = SendWr::new(0, WrOpcode::RdmaWrite, sge);
    wr.remote = RemoteAddr { addr: REMOTE_VA, rkey: RKEY };
    wr
}

/// perftest's BW loop (run_iter_bw): post while fewer than TX_DEPTH outstanding, one WR
/// in CQ_MOD signaled, poll a batch of POLL_BATCH; each completion retires CQ_MOD WRs.
#[inline(never)]
pub fn hot_loop_bw<P: Provider, S: Peer<P>>(b: &mut Bench<P, S>, iters: u64) {
    let sge = [Sge { addr: b.data.as_ptr() as u64, length: MSG_SIZE, lkey: b.lkey }];
    let mut wr = rdma_write(&sge);
    let mut wc = [WorkCompletion::default(); POLL_BATCH];
    let (mut scnt, mut ccnt) = (0u64, 0u64);
    while scnt < iters || ccnt < iters {
        while scnt < iters && scnt - ccnt < TX_DEPTH {
            let sig = scnt % CQ_MOD == CQ_MOD - 1;
            wr.wr_id = scnt;
            wr.flags = if sig { SendFlags::SIGNALED } else { SendFlags::empty() };
            // SAFETY: the SGE lies in `b.data`, alive and unmoved for the whole loop.
            unsafe { S::post(&b.ctx, &mut b.qp, &wr) }.expect("post_send");
            if sig {
                b.peer.complete(scnt);
            }
            scnt += 1;
        }
        if ccnt < iters {
            let ne = b.ctx.poll_cq(&mut b.cq, &mut wc).expect("poll_cq");
            for w in &wc[..ne] {
                assert!(w.status == WcStatus::Success, "completion status");
                b.last_wr_id = w.wr_id;
            }
            b.completions += ne as u64;
            ccnt += ne as u64 * CQ_MOD;
        }
    }
}

/// A latency loop: every WR signaled, the other side completes it, a 1-entry poll until
/// it is seen.
#[inline(never)]
pub fn hot_loop_lat<P: Provider, S: Peer<P>>(b: &mut Bench<P, S>, iters: u64) {
    let sge = [Sge { addr: b.data.as_ptr() as u64, length: MSG_SIZE, lkey: b.lkey }];
    let mut wr = rdma_write(&sge);
    wr.flags = SendFlags::SIGNALED;
    let mut wc = [WorkCompletion::default(); 1];
    for i in 0..iters {
        wr.wr_id = i;
        // SAFETY: the SGE lies in `b.data`, alive and unmoved for the whole loop.
        unsafe { S::post(&b.ctx, &mut b.qp, &wr) }.expect("post_send");
        b.peer.complete(i);
        let ne = loop {
            let ne = b.ctx.poll_cq(&mut b.cq, &mut wc).expect("poll_cq");
            if ne != 0 {
                break ne;
            }
        };
        assert!(ne == 1 && wc[0].status == WcStatus::Success, "completion status");
        b.last_wr_id = wc[0].wr_id;
        b.completions += 1;
    }
}

/// Run the case's loop over `b`; how long it took.
pub fn run<P: Provider, S: Peer<P>>(b: &mut Bench<P, S>, bw: bool, iters: u64) -> Duration {
    let t = Instant::now();
    if bw {
        hot_loop_bw(black_box(b), iters);
    } else {
        hot_loop_lat(black_box(b), iters);
    }
    t.elapsed()
}


/// The command line `[bw|lat [ITERS]]` (default bw 2000000): the case's name, whether it is bw,
/// and the iterations (bw: a whole number of CQ_MOD, at least one).
pub fn args() -> (String, bool, u64) {
    let mut args = std::env::args().skip(1);
    let case = args.next().unwrap_or_else(|| "bw".into());
    let mut iters: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(2_000_000);
    let bw = match case.as_str() {
        "bw" => true,
        "lat" => false,
        _ => panic!("case must be bw or lat"),
    };
    if bw {
        iters -= iters % CQ_MOD;
        iters = iters.max(CQ_MOD);
    }
    (case, bw, iters)
}

/// A memfd of `len` bytes named `name`: the uverbs fd's stand-in, shared, and its raw number.
pub fn memfd(name: &std::ffi::CStr, len: usize) -> (SharedFd, RawFd) {
    // SAFETY: memfd_create with a NUL-terminated name; the result is checked.
    let raw = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    assert!(raw >= 0, "memfd_create: {}", std::io::Error::last_os_error());
    // SAFETY: `raw` is a fresh descriptor that nothing else owns.
    let fd: SharedFd = Arc::new(unsafe { OwnedFd::from_raw_fd(raw) });
    // SAFETY: plain ftruncate on our own memfd; the result is checked.
    let rc = unsafe { libc::ftruncate(raw, len as libc::off_t) };
    assert!(rc == 0, "ftruncate: {}", std::io::Error::last_os_error());
    (fd, raw)
}
