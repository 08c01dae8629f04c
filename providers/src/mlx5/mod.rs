//! mlx5 (ConnectX-4 and later) provider, in Rust, without libmlx5.
//!
//! Layers:
//! - [`abi`]: driver data for the verbs commands (encode requests, validate responses);
//! - [`geometry`]: queue sizing;
//! - [`wqe`] / [`cqe`]: pure encode/decode of work-queue entries and completion entries;
//! - [`mem`]: memory shared with the device ([`mem::DmaBuf`], mmap- or heap-backed);
//! - [`uar`]: the MMIO doorbell layer behind [`uar::UarWriter`];
//! - this module: queue state (indices, wraparound, doorbell records, the per-context QP
//!   registry that CQ polling uses) and `impl Provider for Mlx5`.
//!
//! docs/mlx5.md walks through every store and load of the hot path and its barriers.

#[forbid(unsafe_code)]
pub mod abi;
#[forbid(unsafe_code)]
pub mod cqe;
pub mod crypto;
#[forbid(unsafe_code)]
pub mod dc;
#[forbid(unsafe_code)]
pub mod devx;
#[forbid(unsafe_code)]
pub mod geometry;
pub mod mem;
pub mod uar;
#[forbid(unsafe_code)]
pub mod umr;
#[forbid(unsafe_code)]
pub mod wqe;

use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use uverbs::error::{Error, Result};
use uverbs::provider::{
    AhAttr, AhCreated, CqCreated, DcInit, DeviceDesc, PostError, Provider, QpCreated, QpInitAttr, QpState,
    QpType, SharedFd, SrqCreated, Udata,
};
use uverbs::wr::{RecvWr, SendFlags, SendWr, Sge, WcStatus, WorkCompletion};

use abi::UctxResp;
use cqe::Queue;
use geometry::QpGeometry;
use mem::DmaBuf;
use uar::{MmapUar, UarMap, UarPlan, UarWriter};
use wqe::{SqParams, WQEBB};

/// Doorbell-record word indices (each a big-endian u32).
const RCV_DBR: usize = 0;
const SND_DBR: usize = 4;
const CQ_SET_CI: usize = 0;
const CQ_ARM_DB: usize = 4;
/// Largest user index (24 bits).
const MAX_UIDX: usize = 0xff_ffff;

/// Behaviour switches (libmlx5's environment variables, with the same defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mlx5Config {
    /// Use BlueFlame (write-combining copies of small WQEs). `MLX5_SHUT_UP_BF=1` turns it off;
    /// the UAR pages are then mapped non-cached.
    pub blueflame: bool,
    /// BlueFlame single-WR posts even without inline data (`MLX5_POST_SEND_PREFER_BF`, default on).
    pub prefer_bf: bool,
    /// What to ask for in GET_CONTEXT.
    pub uctx: abi::UctxReq,
}

impl Default for Mlx5Config {
    fn default() -> Self {
        Mlx5Config {
            blueflame: true,
            prefer_bf: true,
            uctx: abi::UctxReq::default(),
        }
    }
}

impl Mlx5Config {
    pub fn from_env() -> Self {
        let on = |k: &str| std::env::var(k).ok().map(|v| v.trim() != "0");
        let mut c = Mlx5Config::default();
        if on("MLX5_SHUT_UP_BF") == Some(true) {
            c.blueflame = false;
        }
        if let Some(p) = on("MLX5_POST_SEND_PREFER_BF") {
            c.prefer_bf = p;
        }
        c
    }
}

// ---- registry: what CQ polling needs to know about QPs -----------------------------------------

/// Send/receive bookkeeping a CQ needs to turn a CQE into a `wr_id`. Written by the posting
/// thread, read by the polling thread; single-word atomics, no locks.
pub struct QpShared {
    pub qpn: u32,
    /// A DCT's number, known only from its RTR modify (its `qpn` is the creation-time 0); 0
    /// until then and for every other QP. CQE version 0 names the DCT's receives by it.
    dctn: AtomicU32,
    pub uidx: u32,
    sq_mask: u32,
    sq_wrid: Box<[AtomicU64]>,
    /// `wqe_head[idx]`: the SQ head count when the WQE at idx was posted; a CQE for it retires
    /// every WQE up to and including it (unsignaled ones complete silently).
    sq_wqe_head: Box<[AtomicU32]>,
    sq_tail: AtomicU32,
    rq_mask: u32,
    rq_wrid: Box<[AtomicU64]>,
    rq_tail: AtomicU32,
    rq_shift: u32,
    rq_offset: usize,
    buf: Arc<DmaBuf>,
    uses_srq: bool,
    srq: RwLock<Option<Arc<SrqShared>>>,
}

enum Slot {
    Free,
    Reserved,
    Qp(Arc<QpShared>),
    /// An XRC SRQ under CQE version 1: its receives' CQEs carry the SRQ's user index (the XRC
    /// target QP that took them has no user-space state).
    Xsrq(Arc<SrqShared>),
}

/// User index → QP, plus the SRQs (CQ polling resolves SRQ receives through them).
#[derive(Default)]
pub struct Registry {
    qps: RwLock<Vec<Slot>>,
    srqs: RwLock<Vec<Arc<SrqShared>>>,
}

impl Registry {
    fn reserve(&self) -> Result<u32> {
        let mut v = self.qps.write().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = v.iter().position(|s| matches!(s, Slot::Free)) {
            v[i] = Slot::Reserved;
            return Ok(i as u32);
        }
        if v.len() > MAX_UIDX {
            return Err(Error::msg("mlx5 create QP", "out of 24-bit user indices"));
        }
        v.push(Slot::Reserved);
        Ok((v.len() - 1) as u32)
    }
    fn fill(&self, uidx: u32, qp: Arc<QpShared>) {
        let mut v = self.qps.write().unwrap_or_else(|e| e.into_inner());
        v[uidx as usize] = Slot::Qp(qp);
    }
    fn release(&self, uidx: u32) {
        let mut v = self.qps.write().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = v.get_mut(uidx as usize) {
            *s = Slot::Free;
        }
    }
    fn by_uidx(&self, uidx: u32) -> Option<Arc<QpShared>> {
        match self
            .qps
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(uidx as usize)
        {
            Some(Slot::Qp(q)) => Some(q.clone()),
            _ => None,
        }
    }
    fn by_qpn(&self, qpn: u32) -> Option<Arc<QpShared>> {
        self.qps
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find_map(|s| match s {
                Slot::Qp(q) if q.qpn == qpn || (qpn != 0 && q.dctn.load(Ordering::Acquire) == qpn) => {
                    Some(q.clone())
                }
                _ => None,
            })
    }
    fn xsrq_by_uidx(&self, uidx: u32) -> Option<Arc<SrqShared>> {
        match self.qps.read().unwrap_or_else(|e| e.into_inner()).get(uidx as usize) {
            Some(Slot::Xsrq(s)) => Some(s.clone()),
            _ => None,
        }
    }
    fn fill_xsrq(&self, uidx: u32, srq: Arc<SrqShared>) {
        let mut v = self.qps.write().unwrap_or_else(|e| e.into_inner());
        v[uidx as usize] = Slot::Xsrq(srq);
    }
    fn srq_by_srqn(&self, srqn: u32) -> Option<Arc<SrqShared>> {
        self.srqs
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|s| s.srqn == srqn)
            .cloned()
    }
    fn only_srq(&self) -> Option<Arc<SrqShared>> {
        let v = self.srqs.read().unwrap_or_else(|e| e.into_inner());
        if v.len() == 1 {
            Some(v[0].clone())
        } else {
            None
        }
    }
}

struct UidxReservation {
    reg: Arc<Registry>,
    uidx: u32,
    armed: bool,
}

impl Drop for UidxReservation {
    fn drop(&mut self) {
        if self.armed {
            self.reg.release(self.uidx);
        }
    }
}

// ---- context ----------------------------------------------------------------------------------

/// Per-bfreg state: the BlueFlame half toggle, under a lock because medium-latency bfregs may be
/// shared by QPs driven from different threads (the lock also keeps one doorbell's stores and
/// its flush together).
///
/// The lock is a test-and-set spin lock rather than a `std::sync::Mutex`: the critical section
/// is a handful of stores and two `sfence`s and never blocks, so there is no reason to sleep,
/// and the toggle is a single word that is valid at every instant, so there is nothing to poison
/// (the guard still unlocks if a bug assertion inside unwinds); uncontended it costs one
/// `lock cmpxchg` and one plain store (the `Mutex` added an unlock RMW and two
/// `thread::panicking()` poison checks per ring).
/// Memory ordering:
/// - taking the lock is an `Acquire` compare-exchange, releasing it a `Release` store; they
///   synchronise, so the `offset` toggle (accessed `Relaxed`, only while holding the lock) that
///   one holder stored is the value the next holder loads, whichever thread either runs on;
/// - the MMIO stores of the previous holder were pushed out of the write-combining buffer by its
///   `flush()` (`sfence`) before its `Release` unlock store, which our `Acquire` observed: its
///   doorbell / BlueFlame block reaches the register before ours (what libmlx5's bf lock gives);
/// - the critical section's volatile stores and fences cannot move out of it: nothing after an
///   `Acquire` load moves before it, nothing before a `Release` store moves after it.
struct BfReg {
    locked: AtomicBool,
    /// Offset of the half the next doorbell uses (0 or `bf_reg_size / 2`); only touched while
    /// holding `locked`.
    offset: AtomicUsize,
}

impl BfReg {
    #[inline(always)]
    fn lock(&self) -> BfGuard<'_> {
        if self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_contended();
        }
        BfGuard(self)
    }

    #[cold]
    #[inline(never)]
    fn lock_contended(&self) {
        let mut spins = 0u32;
        loop {
            // Test before test-and-set: spin on a plain load so the line stays shared.
            while self.locked.load(Ordering::Relaxed) {
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(64) {
                    // The holder may have been preempted: let it run.
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            }
            if self
                .locked
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }

}

/// Holds a [`BfReg`]'s lock; dropping it releases the lock (`Release` store).
struct BfGuard<'a>(&'a BfReg);

impl Drop for BfGuard<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.0.locked.store(false, Ordering::Release);
    }
}

/// An open mlx5 context. `U` is the MMIO layer: [`MmapUar`] on hardware, a recording one in tests.
pub struct Mlx5<U: UarWriter = MmapUar> {
    fd: SharedFd,
    pub resp: UctxResp,
    pub plan: UarPlan,
    pub config: Mlx5Config,
    uar: U,
    bfregs: Box<[BfReg]>,
    registry: Arc<Registry>,
    avs: Arc<RwLock<Vec<Option<[u8; 48]>>>>,
    ah_spread: AtomicU32,
    /// DEVX and AES-XTS state (crypto login); see [`crypto`].
    crypto: crypto::CryptoCtx,
    /// The device's AES-XTS engines (`umr::engines` bits, from QUERY_HCA_CAP); 0 until the
    /// crypto control path sets them with [`Mlx5::set_crypto_engines`].
    crypto_engines: AtomicU8,
}

impl<U: UarWriter> std::fmt::Debug for Mlx5<U> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mlx5")
            .field("resp", &self.resp)
            .field("plan", &self.plan)
            .finish()
    }
}

impl<U: UarMap> Mlx5<U> {
    /// Build a context from the GET_CONTEXT driver response with explicit settings.
    pub fn with_config(fd: SharedFd, drv_resp: &[u8], config: Mlx5Config) -> Result<Self> {
        let resp = UctxResp::parse(drv_resp)?;
        let plan = UarPlan::new(&resp, uverbs::objects::page_size(), config.blueflame)?;
        let uar = U::map(&fd, &plan)?;
        let nbf = plan.num_pages * plan.uars_per_page * uar::BFREGS_PER_UAR;
        let bfregs = (0..nbf)
            .map(|_| BfReg {
                locked: AtomicBool::new(false),
                offset: AtomicUsize::new(0),
            })
            .collect();
        Ok(Mlx5 {
            fd,
            resp,
            plan,
            config,
            uar,
            bfregs,
            registry: Arc::default(),
            avs: Arc::default(),
            ah_spread: AtomicU32::new(0),
            crypto: crypto::CryptoCtx::new(false),
            crypto_engines: AtomicU8::new(0),
        })
    }
}

impl<U: UarWriter> Mlx5<U> {
    /// The MMIO layer (tests read the recording from here).
    pub fn uar(&self) -> &U {
        &self.uar
    }

    /// Record the device's AES-XTS engines (`umr::engines` bits: libmlx5's
    /// `crypto_caps.crypto_engines`): they decide the tweak byte order in a crypto BSF and
    /// whether a crypto mapping may span several data units.
    pub fn set_crypto_engines(&self, engines: u8) {
        self.crypto_engines.store(engines, Ordering::Relaxed);
    }
    pub fn crypto_engines(&self) -> u8 {
        self.crypto_engines.load(Ordering::Relaxed)
    }

    /// Hand the engines the crypto control path learnt from QUERY_HCA_CAP to the data path.
    fn sync_crypto_engines(&self) {
        if let Some(e) = self.crypto.engines() {
            self.set_crypto_engines(e);
        }
    }

    /// Tell CQ polling which SRQ a QP receives from. The provider trait does not pass the SRQ
    /// to `prepare_qp`; without this call, an SRQ-attached QP uses the context's only SRQ.
    pub fn bind_srq(&self, qp: &Mlx5Qp, srq: &Mlx5Srq) {
        *qp.shared.srq.write().unwrap_or_else(|e| e.into_inner()) = Some(srq.shared.clone());
    }

    /// `bf_block`: the last WQE's basic block as written, when the caller has it in hand (one
    /// 64-byte WQE): BlueFlame copies it from there instead of reading the ring back.
    fn ring_sq(&self, qp: &mut Mlx5Qp, nreq: u32, last: wqe::Built, last_start: u32, bf_block: Option<&[u64; 8]>) {
        self.ring_sq_inline(qp, nreq, last, last_start, bf_block)
    }

    /// [`Self::ring_sq`], inlined into the single-request fast path.
    #[inline(always)]
    fn ring_sq_inline(&self, qp: &mut Mlx5Qp, nreq: u32, last: wqe::Built, last_start: u32, bf_block: Option<&[u64; 8]>) {
        qp.sq_head = qp.sq_head.wrapping_add(nreq);
        // udma_to_device_barrier: every WQE byte above must be visible to the device before the
        // doorbell record says they exist. x86-64 stores are not reordered with each other, so
        // this is a compiler barrier there (a release fence is exactly that on x86).
        fence(Ordering::Release);
        qp.db.write_be32_volatile(SND_DBR, qp.cur_post & 0xffff);

        let bf = &self.bfregs[qp.bfreg as usize];
        let guard = bf.lock();
        let toggle = bf.offset.load(Ordering::Relaxed);
        // mmio_wc_start: the doorbell-record store (write-back memory) must be globally visible
        // before the MMIO stores below, which go through the write-combining buffer (sfence).
        self.uar.wc_start();
        let dst = qp.bf_base + toggle;
        let bytes = last.ds as usize * 16;
        // `bf_limit` is the BlueFlame half when BlueFlame is on and the bfreg is not 0, else 0,
        // which `bytes` (at least 32 here) always exceeds: the same test as
        // `half != 0 && bfreg != 0 && bytes <= half`, with the constants folded at QP creation.
        if nreq == 1
            && (last.inline || self.config.prefer_bf)
            && last.ds > 1
            && bytes <= qp.bf_limit
        {
            // BlueFlame: the whole WQE, rounded up to 64 bytes, as ascending 8-byte stores; the
            // source wraps at the SQ end per 64-byte block.
            let mask = qp.geo.sq_wqe_cnt - 1;
            let from_ring = match bf_block {
                Some(words) if bytes <= WQEBB => {
                    self.uar.bf_copy(dst, words);
                    0
                }
                _ => bytes.div_ceil(WQEBB),
            };
            for blk in 0..from_ring {
                let slot = (last_start.wrapping_add(blk as u32) & mask) as usize;
                let base = qp.geo.sq_offset + slot * WQEBB;
                let words = qp.buf.read_u64x8(base);
                self.uar.bf_copy(dst + blk * WQEBB, &words);
            }
        } else {
            // Doorbell: first 8 bytes of the last control segment, one 64-bit store.
            self.uar.write64(dst, last.ctrl_head);
        }
        // mmio_flush_writes: push the WC buffer out while we still hold the bfreg, so another
        // thread's doorbell on the same register cannot overtake ours.
        self.uar.flush();
        bf.offset.store(toggle ^ qp.bf_toggle, Ordering::Relaxed);
        drop(guard);
    }

    /// `post_send` of a single request that `wqe::build_send_fast` encodes (RC, one SGE, not
    /// inline), straight-line: the same flow-control check, bookkeeping and ring as the general
    /// loop. `false` (nothing written, nothing changed) when the request or the QP's state is
    /// anything else (no SQ, queue full, a pending UMR fence): the general path then posts it
    /// or reports the error.
    #[inline(always)]
    fn post_one_fast(&self, qp: &mut Mlx5Qp, wr: &SendWr<'_>) -> bool {
        if qp.geo.sq_wqe_cnt == 0 || qp.fm_cache != 0 {
            return false;
        }
        let tail = qp.shared.sq_tail.load(Ordering::Acquire);
        if qp.sq_head.wrapping_sub(tail) >= qp.geo.sq_max_post {
            return false;
        }
        let sq_len = qp.geo.sq_wqe_cnt as usize * WQEBB;
        // SAFETY: as in post_send: the SQ region is written only by the `&mut Mlx5Qp` poster;
        // the device only reads it; CQ polling reads only the RQ region.
        let sq = unsafe { qp.buf.slice_mut(qp.geo.sq_offset, sq_len) };
        let Some((b, words)) = wqe::build_send_fast_block(sq, qp.cur_post, &qp.params, wr) else {
            return false;
        };
        let idx = (qp.cur_post & (qp.geo.sq_wqe_cnt - 1)) as usize;
        qp.shared.sq_wrid[idx].store(wr.wr_id, Ordering::Relaxed);
        qp.shared.sq_wqe_head[idx].store(qp.sq_head, Ordering::Relaxed);
        let start = qp.cur_post;
        qp.cur_post = qp.cur_post.wrapping_add(b.wqebbs);
        self.ring_sq_inline(qp, 1, b, start, Some(&words));
        true
    }

    /// The QP a CQE names, borrowed from the CQ's one-entry cache (`last`): no reference-count
    /// traffic when consecutive CQEs name the same QP. The key is the CQE's 24-bit user index
    /// (CQE version 1) or QPN, both already masked by `cqe::parse_into`; the registry bounds-checks
    /// it on a cache miss.
    fn resolve<'a>(
        &self,
        last: &'a mut Option<(u32, Arc<QpShared>)>,
        c: &cqe::CqeInfo,
    ) -> Option<&'a QpShared> {
        let v1 = self.resp.cqe_version == 1;
        let key = if v1 { c.srqn_uidx } else { c.qpn };
        if !matches!(last, Some((k, _)) if *k == key) {
            let q = if v1 {
                self.registry.by_uidx(key)
            } else {
                self.registry.by_qpn(key)
            }?;
            *last = Some((key, q));
        }
        last.as_ref().map(|(_, q)| &**q)
    }

    /// The XRC SRQ a responder CQE belongs to, if it is an XRC receive: under CQE version 1
    /// the CQE's user index names the SRQ itself; under version 0 the QPN is an XRC target's
    /// (unknown here) and the SRQ number names the SRQ (libmlx5's mlx5_parse_cqe does the same).
    fn xrc_srq_of(&self, c: &cqe::CqeInfo) -> Option<Arc<SrqShared>> {
        if c.queue != Queue::Recv {
            return None;
        }
        if self.resp.cqe_version == 1 {
            self.registry.xsrq_by_uidx(c.srqn_uidx)
        } else if self.registry.by_qpn(c.qpn).is_none() {
            self.registry.srq_by_srqn(c.srqn_uidx & 0xff_ffff).filter(|s| s.xrc)
        } else {
            None
        }
    }

    /// A receive completed from an XRC SRQ: the work request id from the SRQ's entry, which
    /// returns to the free list.
    fn complete_xrc_recv(
        &self,
        srq: &SrqShared,
        c: &cqe::CqeInfo,
        raw: &[u8; 64],
        wc: &mut WorkCompletion,
    ) {
        srq.complete_recv(c, raw, wc);
    }

    /// Finish one decoded CQE's completion (`wc`, as `cqe::parse_into` left it) using the QP
    /// bookkeeping: the `wr_id`, the queue's tail, inline-scattered payload.
    #[inline(always)]
    fn complete(
        &self,
        last: &mut Option<(u32, Arc<QpShared>)>,
        c: &cqe::CqeInfo,
        raw: &[u8; 64],
        wc: &mut WorkCompletion,
    ) -> Result<()> {
        if c.queue == Queue::Recv {
            if let Some(srq) = self.xrc_srq_of(c) {
                self.complete_xrc_recv(&srq, c, raw, wc);
                return Ok(());
            }
        }
        let qp = self.resolve(last, c).ok_or_else(|| {
            Error::msg(
                "mlx5 poll_cq",
                format!(
                    "CQE for unknown QP (qpn {:#x}, user index {:#x})",
                    c.qpn, c.srqn_uidx
                ),
            )
        })?;
        match c.queue {
            Queue::Send => {
                if qp.sq_wrid.is_empty() {
                    return Err(Error::msg(
                        "mlx5 poll_cq",
                        format!("send CQE for QP {:#x} without a send queue", qp.qpn),
                    ));
                }
                if c.inline_scatter_32 {
                    return Err(Error::msg(
                        "mlx5 poll_cq",
                        "requester CQE with scattered data (SCATTER_CQE is never requested)",
                    ));
                }
                let idx = (c.wqe_counter as u32 & qp.sq_mask) as usize;
                wc.wr_id = qp.sq_wrid[idx].load(Ordering::Relaxed);
                let head = qp.sq_wqe_head[idx].load(Ordering::Relaxed);
                // Release: the posting thread's flow-control check reads tail with Acquire.
                qp.sq_tail.store(head.wrapping_add(1), Ordering::Release);
            }
            Queue::Recv => {
                let srq = if qp.uses_srq {
                    let bound = qp.srq.read().unwrap_or_else(|e| e.into_inner()).clone();
                    bound.or_else(|| {
                        if self.resp.cqe_version == 0 {
                            self.registry.srq_by_srqn(c.srqn_uidx)
                        } else {
                            self.registry.only_srq()
                        }
                    })
                } else {
                    None
                };
                if let Some(srq) = srq {
                    srq.complete_recv(c, raw, wc);
                } else {
                    if qp.rq_wrid.is_empty() {
                        return Err(Error::msg(
                            "mlx5 poll_cq",
                            format!(
                                "receive CQE for QP {:#x} without a receive queue or a known SRQ",
                                qp.qpn
                            ),
                        ));
                    }
                    let idx = c.wqe_counter as u32 & qp.rq_mask;
                    wc.wr_id = qp.rq_wrid[idx as usize].load(Ordering::Relaxed);
                    qp.rq_tail.fetch_add(1, Ordering::Release);
                    if c.inline_scatter_32 && wc.status == WcStatus::Success {
                        let mut slot = [0u8; 512];
                        let n = (1usize << qp.rq_shift).min(slot.len());
                        qp.buf.read(
                            qp.rq_offset + ((idx as usize) << qp.rq_shift),
                            &mut slot[..n],
                        );
                        wc.status = scatter_into(&slot[..n], raw, wc.byte_len);
                    }
                }
            }
        }
        Ok(())
    }
}

/// The poll error for a CQE `cqe::parse_into` refused (out of line: the hot loop only branches).
#[cold]
#[inline(never)]
fn cqe_error(e: cqe::CqeError) -> Error {
    Error::msg("mlx5 poll_cq", e.to_string())
}

/// Copy up to 32 bytes of payload carried in the CQE into the receive buffers named by the
/// receive WQE's scatter list. LOC_LEN_ERR if they do not fit.
fn scatter_into(slot: &[u8], raw: &[u8; 64], byte_len: u32) -> WcStatus {
    let mut left = &raw[..(byte_len as usize).min(32)];
    for s in wqe::recv_scatter(slot) {
        if left.is_empty() {
            break;
        }
        let n = (s.length as usize).min(left.len());
        // SAFETY: the address and length come from a receive request the application posted
        // (registered memory it promised to keep valid until completion), as with any DMA target.
        unsafe { std::ptr::copy_nonoverlapping(left.as_ptr(), s.addr as usize as *mut u8, n) };
        left = &left[n..];
    }
    if left.is_empty() {
        WcStatus::Success
    } else {
        WcStatus::LocLenErr
    }
}

// ---- objects ----------------------------------------------------------------------------------

pub struct Mlx5CqPrep {
    buf: DmaBuf,
    db: DmaBuf,
    ncqe: u32,
}

pub struct Mlx5Cq {
    buf: DmaBuf,
    db: DmaBuf,
    ncqe: u32,
    /// Consumer index (free-running; the slot is `ci & (ncqe-1)`).
    ci: u32,
    arm_sn: u32,
    pub cqn: u32,
    last: Option<(u32, Arc<QpShared>)>,
}

impl Mlx5Cq {
    pub fn ncqe(&self) -> u32 {
        self.ncqe
    }
    pub fn consumer_index(&self) -> u32 {
        self.ci
    }
    /// Buffer and doorbell-record addresses (what the kernel was given).
    pub fn addrs(&self) -> (u64, u64) {
        (self.buf.addr(), self.db.addr())
    }
    /// The doorbell record as the device sees it (8 bytes).
    pub fn dbrec(&self) -> [u8; 8] {
        let mut b = [0u8; 8];
        self.db.read(0, &mut b);
        b
    }
    /// Write a CQE into the ring (tests and the device model play the HCA with this).
    pub fn buf(&self) -> &DmaBuf {
        &self.buf
    }
}

pub struct Mlx5QpPrep {
    buf: DmaBuf,
    db: DmaBuf,
    geo: QpGeometry,
    uidx: UidxReservation,
    /// DCI: the DC key its sends present (0 for other types).
    dc_key: u64,
}

pub struct Mlx5Qp {
    shared: Arc<QpShared>,
    buf: Arc<DmaBuf>,
    db: DmaBuf,
    pub geo: QpGeometry,
    params: SqParams,
    cur_post: u32,
    sq_head: u32,
    rq_head: u32,
    bfreg: u32,
    bf_base: usize,
    /// BlueFlame size limit: `plan.bf_half()` if BlueFlame is on and `bfreg != 0`, else 0.
    bf_limit: usize,
    /// `plan.toggle()`: what flips the bfreg's half after each doorbell.
    bf_toggle: usize,
    registry: Arc<Registry>,
    /// The fence the next WQE carries unless it asks for a full one (libmlx5's `fm_cache`:
    /// the initiator small fence after a UMR).
    fm_cache: u8,
}

impl Mlx5Qp {
    pub fn qpn(&self) -> u32 {
        self.shared.qpn
    }
    pub fn uidx(&self) -> u32 {
        self.shared.uidx
    }
    pub fn bfreg(&self) -> u32 {
        self.bfreg
    }
    /// SQ producer index in basic blocks (free-running).
    pub fn sq_cur_post(&self) -> u32 {
        self.cur_post
    }
    pub fn rq_head(&self) -> u32 {
        self.rq_head
    }
    pub fn addrs(&self) -> (u64, u64) {
        (self.buf.addr(), self.db.addr())
    }
    pub fn dbrec(&self) -> [u8; 8] {
        let mut b = [0u8; 8];
        self.db.read(0, &mut b);
        b
    }
    pub fn buf(&self) -> &DmaBuf {
        &self.buf
    }
}

impl Drop for Mlx5Qp {
    fn drop(&mut self) {
        self.registry.release(self.shared.uidx);
    }
}

/// SRQ state shared with CQ polling (which returns completed entries to the free list).
pub struct SrqShared {
    pub srqn: u32,
    /// An XRC SRQ (CREATE_XSRQ).
    xrc: bool,
    buf: DmaBuf,
    cnt: u32,
    shift: u32,
    wrid: Box<[AtomicU64]>,
    /// Free list: head (next to post) and tail (last free entry); entries linked through
    /// `next_wqe_index` in each WQE's first segment.
    state: Mutex<(u32, u32)>,
}

impl SrqShared {
    fn next_of(&self, i: u32) -> u32 {
        let mut b = [0u8; 2];
        self.buf.read(((i as usize) << self.shift) + 2, &mut b);
        u16::from_be_bytes(b) as u32 & (self.cnt - 1)
    }
    fn set_next(&self, i: u32, next: u32) {
        self.buf.write(
            ((i as usize) << self.shift) + 2,
            &(next as u16).to_be_bytes(),
        );
    }
    /// A receive completed from this SRQ (basic or XRC): the work request id from the entry the
    /// CQE's WQE counter names (masked: the counter comes from the device), the payload the
    /// device scattered into the CQE copied out, and the entry back on the free list.
    fn complete_recv(&self, c: &cqe::CqeInfo, raw: &[u8; 64], wc: &mut WorkCompletion) {
        let idx = c.wqe_counter as u32 & (self.cnt - 1);
        wc.wr_id = self.wrid[idx as usize].load(Ordering::Relaxed);
        if c.inline_scatter_32 && wc.status == WcStatus::Success {
            // The entry's scatter list after its 16-byte next segment, on the stack as for a
            // QP's receive queue (no allocation per completion; 31 SGEs cover any 32 bytes).
            let mut slot = [0u8; 512];
            let n = ((1usize << self.shift) - 16).min(slot.len());
            self.buf.read(((idx as usize) << self.shift) + 16, &mut slot[..n]);
            wc.status = scatter_into(&slot[..n], raw, wc.byte_len);
        }
        self.free(idx);
    }

    fn free(&self, idx: u32) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.set_next(st.1, idx);
        st.1 = idx;
    }
}

pub struct Mlx5SrqPrep {
    buf: DmaBuf,
    db: DmaBuf,
    cnt: u32,
    shift: u32,
    max_sge: u32,
    /// XRC SRQs: the reservation of the user index CQEs name it by (CQE version 1; `None`
    /// under version 0, where the SRQ number does).
    xrc: Option<Option<UidxReservation>>,
}

pub struct Mlx5Srq {
    shared: Arc<SrqShared>,
    db: DmaBuf,
    counter: u32,
    registry: Arc<Registry>,
    /// An XRC SRQ's user index (released on drop).
    xrc_uidx: Option<u32>,
}

impl Mlx5Srq {
    pub fn srqn(&self) -> u32 {
        self.shared.srqn
    }
    pub fn addrs(&self) -> (u64, u64) {
        (self.shared.buf.addr(), self.db.addr())
    }
}

impl Drop for Mlx5Srq {
    fn drop(&mut self) {
        let mut v = self
            .registry
            .srqs
            .write()
            .unwrap_or_else(|e| e.into_inner());
        v.retain(|s| !Arc::ptr_eq(s, &self.shared));
        drop(v);
        if let Some(u) = self.xrc_uidx {
            self.registry.release(u);
        }
    }
}

pub struct Mlx5AhPrep {
    attr: AhAttr,
}

pub struct Mlx5Ah {
    num: u32,
    pub av: [u8; 48],
    table: Arc<RwLock<Vec<Option<[u8; 48]>>>>,
}

impl Drop for Mlx5Ah {
    fn drop(&mut self) {
        let mut t = self.table.write().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = t.get_mut(self.num as usize) {
            *s = None;
        }
    }
}

fn post_err(index: usize, e: Error) -> PostError {
    PostError { index, error: e }
}

fn enomem(what: &str, detail: String) -> Error {
    let mut e = Error::msg(what, detail);
    e.errno = Some(libc::ENOMEM);
    e
}

/// Copy inline payload from the application's buffer.
/// # Safety
/// `[addr, addr + dst.len())` must be readable memory (post_send's contract).
unsafe fn copy_from_va(addr: u64, dst: &mut [u8]) {
    // SAFETY: the SGE names memory the application posted for this send (post_send's
    // contract); it is read once, here, before the call returns.
    unsafe {
        std::ptr::copy_nonoverlapping(addr as usize as *const u8, dst.as_mut_ptr(), dst.len())
    }
}

impl<U: UarMap> Provider for Mlx5<U> {
    const NAME: &'static str = "mlx5";
    const DRIVER_ID: u32 = 1;
    const ABI_RANGE: (u32, u32) = (abi::ABI_VERSION, abi::ABI_VERSION);

    type CqPrep = Mlx5CqPrep;
    type Cq = Mlx5Cq;
    type QpPrep = Mlx5QpPrep;
    type Qp = Mlx5Qp;
    type SrqPrep = Mlx5SrqPrep;
    type Srq = Mlx5Srq;
    type AhPrep = Mlx5AhPrep;
    type Ah = Mlx5Ah;
    type Dek = crypto::Mlx5Dek;
    type CryptoMkey = crypto::Mlx5CryptoMkey;

    fn context_udata(_dev: &DeviceDesc) -> Udata {
        Udata {
            req: Mlx5Config::from_env().uctx.encode(),
            resp_len: abi::ALLOC_UCONTEXT_RESP_LEN,
        }
    }

    fn null_mr_lkey(&self) -> Option<u32> {
        self.resp.dump_fill_mkey
    }

    fn new_context(fd: SharedFd, _dev: &DeviceDesc, drv_resp: &[u8]) -> Result<Self> {
        Self::with_config(fd, drv_resp, Mlx5Config::from_env())
    }

    fn context_udata_devx(_dev: &DeviceDesc) -> Option<Udata> {
        Some(Udata {
            req: Mlx5Config::from_env().uctx.encode_devx(),
            resp_len: abi::ALLOC_UCONTEXT_RESP_LEN,
        })
    }

    fn new_context_devx(fd: SharedFd, _dev: &DeviceDesc, drv_resp: &[u8]) -> Result<Self> {
        let mut m = Self::with_config(fd, drv_resp, Mlx5Config::from_env())?;
        m.crypto = crypto::CryptoCtx::new(true);
        Ok(m)
    }

    fn pd_udata(&self) -> Udata {
        Udata { req: Vec::new(), resp_len: abi::ALLOC_PD_RESP_LEN }
    }

    fn pd_number(&self, drv_resp: &[u8]) -> Result<Option<u32>> {
        abi::parse_alloc_pd_resp(drv_resp).map(Some)
    }

    fn crypto_login(&self, credential: &[u8; 48]) -> Result<()> {
        let r = self.crypto.login(&self.fd, credential);
        self.sync_crypto_engines();
        r
    }

    fn create_dek(&self, pdn: u32, wrapped_key: &[u8]) -> Result<crypto::Mlx5Dek> {
        let r = self.crypto.create_dek(&self.fd, pdn, wrapped_key);
        self.sync_crypto_engines();
        r
    }

    fn create_crypto_mkey(&self, pdn: u32, max_entries: u16) -> Result<crypto::Mlx5CryptoMkey> {
        let r = self.crypto.create_mkey(&self.fd, pdn, max_entries);
        self.sync_crypto_engines();
        r
    }

    fn crypto_mkey_lkey(&self, mkey: &crypto::Mlx5CryptoMkey) -> u32 {
        mkey.lkey()
    }

    fn prepare_cq(&self, entries: u32) -> Result<(Mlx5CqPrep, u32, Udata)> {
        let ncqe = entries.saturating_add(1).next_power_of_two();
        if entries >= 1 << 24 || ncqe > 1 << 24 {
            let mut e = Error::msg(
                "mlx5 create CQ",
                format!("{entries} entries, at most {}", (1 << 24) - 1),
            );
            e.errno = Some(libc::EINVAL);
            return Err(e);
        }
        let buf = DmaBuf::alloc(ncqe as usize * cqe::CQE_SIZE, "mlx5 CQ buffer")?;
        for i in 0..ncqe as usize {
            buf.write(i * cqe::CQE_SIZE + cqe::off::OP_OWN, &[cqe::OP_OWN_INIT]);
        }
        let db = DmaBuf::alloc(64, "mlx5 CQ doorbell record")?;
        let req = abi::create_cq_req(buf.addr(), db.addr(), cqe::CQE_SIZE as u32);
        Ok((
            Mlx5CqPrep { buf, db, ncqe },
            ncqe - 1,
            Udata {
                req,
                resp_len: abi::CREATE_CQ_RESP_LEN,
            },
        ))
    }

    fn finish_cq(&self, prep: Mlx5CqPrep, _core: &CqCreated, drv_resp: &[u8]) -> Result<Mlx5Cq> {
        let cqn = abi::parse_create_cq_resp(drv_resp)?;
        Ok(Mlx5Cq {
            buf: prep.buf,
            db: prep.db,
            ncqe: prep.ncqe,
            ci: 0,
            arm_sn: 0,
            cqn,
            last: None,
        })
    }

    fn prepare_qp(&self, attr: &QpInitAttr) -> Result<(Mlx5QpPrep, Udata)> {
        if attr.qp_type.is_dc() {
            return Err(Error::msg(
                "mlx5 create QP",
                format!("{} QPs need their DC attributes (prepare_dc_qp)", attr.qp_type.name()),
            ));
        }
        let geo = geometry::qp_geometry(&self.resp, attr)?;
        let buf = DmaBuf::alloc(geo.buf_len, "mlx5 QP buffer")?;
        let db = DmaBuf::alloc(64, "mlx5 QP doorbell record")?;
        let tgt = attr.qp_type == QpType::XrcTgt;
        // An XRC target gets no user index (its receives complete through the XRC SRQ's);
        // libmlx5 leaves the request's uidx 0 for it under CQE version 1.
        let uidx = if tgt {
            UidxReservation { reg: self.registry.clone(), uidx: u32::MAX, armed: false }
        } else {
            let uidx = self.registry.reserve()?;
            UidxReservation { reg: self.registry.clone(), uidx, armed: true }
        };
        let req = abi::QpReq {
            buf_addr: buf.addr(),
            db_addr: db.addr(),
            sq_wqe_count: geo.sq_wqe_cnt,
            rq_wqe_count: geo.rq_wqe_cnt,
            rq_wqe_shift: geo.rq_wqe_shift,
            flags: 0,
            uidx: if self.resp.cqe_version != 1 {
                MAX_UIDX as u32
            } else if tgt {
                0
            } else {
                uidx.uidx
            },
        }
        .encode();
        Ok((
            Mlx5QpPrep {
                buf,
                db,
                geo,
                uidx,
                dc_key: 0,
            },
            Udata {
                req,
                resp_len: abi::CREATE_QP_RESP_LEN,
            },
        ))
    }

    fn prepare_dc_qp(&self, attr: &QpInitAttr, dc: &DcInit) -> Result<(Mlx5QpPrep, Udata)> {
        let (prep, req) = self.dc_qp_request(attr, dc)?;
        Ok((
            prep,
            Udata {
                req,
                resp_len: abi::CREATE_QP_RESP_LEN,
            },
        ))
    }

    fn finish_qp(
        &self,
        mut prep: Mlx5QpPrep,
        attr: &QpInitAttr,
        core: &QpCreated,
        drv_resp: &[u8],
    ) -> Result<Mlx5Qp> {
        let tgt = attr.qp_type == QpType::XrcTgt;
        // An XRC target never rings a doorbell: no bfreg to map. A DCT has no send queue and so
        // no doorbell register either (libmlx5 reads nothing but the ECE options from its
        // response).
        let (bfreg, bf_base) = if tgt {
            (0, 0)
        } else {
            let bfreg = if attr.qp_type == QpType::Dct { 0 } else { abi::parse_create_qp_resp(drv_resp)? };
            (bfreg, self.plan.bfreg_offset(bfreg)?)
        };
        let g = prep.geo;
        let atomics = |n: u32| (0..n).map(|_| AtomicU64::new(0)).collect::<Box<[_]>>();
        let buf = Arc::new(prep.buf);
        let shared = Arc::new(QpShared {
            qpn: core.qpn & 0xff_ffff,
            dctn: AtomicU32::new(0),
            uidx: prep.uidx.uidx,
            sq_mask: g.sq_wqe_cnt.saturating_sub(1),
            sq_wrid: atomics(g.sq_wqe_cnt),
            sq_wqe_head: (0..g.sq_wqe_cnt).map(|_| AtomicU32::new(0)).collect(),
            sq_tail: AtomicU32::new(0),
            rq_mask: g.rq_wqe_cnt.saturating_sub(1),
            rq_wrid: atomics(g.rq_wqe_cnt),
            rq_tail: AtomicU32::new(0),
            rq_shift: g.rq_wqe_shift,
            rq_offset: 0,
            buf: buf.clone(),
            uses_srq: attr.uses_srq,
            srq: RwLock::new(None),
        });
        if !tgt {
            self.registry.fill(prep.uidx.uidx, shared.clone());
        }
        prep.uidx.armed = false;
        let params = SqParams {
            qpn: core.qpn & 0xff_ffff,
            qp_type: attr.qp_type,
            max_send_sge: g.max_send_sge,
            max_inline: g.max_inline,
            max_wqe_bytes: g.sq_wqe_size,
            sig_all: attr.sq_sig_all,
            dc_key: prep.dc_key,
        };
        Ok(Mlx5Qp {
            shared,
            buf,
            db: prep.db,
            geo: g,
            params,
            cur_post: 0,
            sq_head: 0,
            rq_head: 0,
            bfreg,
            bf_base,
            bf_limit: if bfreg != 0 { self.plan.bf_half() } else { 0 },
            bf_toggle: self.plan.toggle(),
            registry: self.registry.clone(),
            fm_cache: 0,
        })
    }

    fn prepare_srq(&self, max_wr: u32, max_sge: u32) -> Result<(Mlx5SrqPrep, Udata)> {
        let (cnt, shift, max_sge) = geometry::srq_geometry(&self.resp, max_wr, max_sge)?;
        let buf = DmaBuf::alloc((cnt as usize) << shift, "mlx5 SRQ buffer")?;
        for i in 0..cnt {
            buf.write(
                ((i as usize) << shift) + 2,
                &(((i + 1) & (cnt - 1)) as u16).to_be_bytes(),
            );
        }
        let db = DmaBuf::alloc(64, "mlx5 SRQ doorbell record")?;
        let uidx = if self.resp.cqe_version == 1 {
            0
        } else {
            MAX_UIDX as u32
        };
        let req = abi::create_srq_req(buf.addr(), db.addr(), uidx);
        Ok((
            Mlx5SrqPrep {
                buf,
                db,
                cnt,
                shift,
                max_sge,
                xrc: None,
            },
            Udata {
                req,
                resp_len: abi::CREATE_SRQ_RESP_LEN,
            },
        ))
    }

    fn finish_srq(
        &self,
        prep: Mlx5SrqPrep,
        _core: &SrqCreated,
        drv_resp: &[u8],
    ) -> Result<Mlx5Srq> {
        let srqn = abi::parse_create_srq_resp(drv_resp)?;
        let _ = prep.max_sge;
        let shared = Arc::new(SrqShared {
            srqn,
            xrc: prep.xrc.is_some(),
            buf: prep.buf,
            cnt: prep.cnt,
            shift: prep.shift,
            wrid: (0..prep.cnt).map(|_| AtomicU64::new(0)).collect(),
            state: Mutex::new((0, prep.cnt - 1)),
        });
        self.registry
            .srqs
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(shared.clone());
        let mut xrc_uidx = None;
        if let Some(Some(mut r)) = prep.xrc {
            self.registry.fill_xsrq(r.uidx, shared.clone());
            r.armed = false;
            xrc_uidx = Some(r.uidx);
        }
        Ok(Mlx5Srq {
            shared,
            db: prep.db,
            counter: 0,
            registry: self.registry.clone(),
            xrc_uidx,
        })
    }

    fn prepare_xrc_srq(&self, max_wr: u32, max_sge: u32) -> Result<(Mlx5SrqPrep, Udata)> {
        // The same ring and the same driver request as a basic SRQ (libmlx5's
        // mlx5_create_xrc_srq sends mlx5_create_srq too); the XRC domain and CQ travel in the
        // core request. Under CQE version 1 the SRQ takes a user index of its own.
        let (mut prep, mut udata) = self.prepare_srq(max_wr, max_sge)?;
        let resv = if self.resp.cqe_version == 1 {
            let uidx = self.registry.reserve()?;
            Some(UidxReservation { reg: self.registry.clone(), uidx, armed: true })
        } else {
            None
        };
        let uidx = resv.as_ref().map_or(MAX_UIDX as u32, |r| r.uidx);
        let (buf, db) = (prep.buf.addr(), prep.db.addr());
        udata.req = abi::create_srq_req(buf, db, uidx);
        prep.xrc = Some(resv);
        Ok((prep, udata))
    }

    fn prepare_ah(&self, attr: &AhAttr) -> Result<(Mlx5AhPrep, Udata)> {
        if attr.is_global && self.resp.cmds_supp_uhw & abi::CMDS_SUPP_UHW_CREATE_AH == 0 {
            return Err(Error::msg("mlx5 create AH", "the kernel does not resolve the peer MAC (no CREATE_AH driver data)")
                .with_hint("this kernel is too old for rperftest's mlx5 provider; RoCE needs kernel MAC resolution"));
        }
        let resp_len = if attr.is_global {
            abi::CREATE_AH_RESP_LEN
        } else {
            0
        };
        Ok((
            Mlx5AhPrep { attr: *attr },
            Udata {
                req: Vec::new(),
                resp_len,
            },
        ))
    }

    fn finish_ah(
        &self,
        prep: Mlx5AhPrep,
        attr: &AhAttr,
        _core: &AhCreated,
        drv_resp: &[u8],
    ) -> Result<Mlx5Ah> {
        let _ = prep.attr;
        let av = if attr.is_global {
            let dmac = abi::parse_create_ah_resp(drv_resp)?;
            let spread = self
                .ah_spread
                .fetch_add(1, Ordering::Relaxed)
                .wrapping_mul(0x9e37);
            wqe::roce_av(attr, dmac, wqe::roce_udp_sport(attr.flow_label, spread))
        } else {
            // InfiniBand, LID-routed.
            let mut a = [0u8; 48];
            a[12] = attr.sl & 0xf;
            a[14..16].copy_from_slice(&attr.dlid.to_be_bytes());
            a
        };
        let mut t = self.avs.write().unwrap_or_else(|e| e.into_inner());
        let num = match t.iter().position(|s| s.is_none()) {
            Some(i) => {
                t[i] = Some(av);
                i
            }
            None => {
                t.push(Some(av));
                t.len() - 1
            }
        } as u32;
        Ok(Mlx5Ah {
            num,
            av,
            table: self.avs.clone(),
        })
    }

    fn ah_number(&self, ah: &Mlx5Ah) -> u32 {
        ah.num
    }

    fn modify_qp_udata(&self, qp: &Mlx5Qp, state: Option<QpState>) -> Option<Udata> {
        (qp.params.qp_type == QpType::Dct && state == Some(QpState::Rtr)).then(|| Udata {
            req: vec![0u8; dc::MODIFY_QP_REQ_LEN],
            resp_len: dc::MODIFY_QP_RESP_LEN,
        })
    }

    fn modify_qp_done(&self, qp: &mut Mlx5Qp, state: QpState, drv_resp: &[u8]) -> Result<Option<u32>> {
        if qp.params.qp_type != QpType::Dct || state != QpState::Rtr {
            return Ok(None);
        }
        let dctn = dc::parse_modify_dct_resp(drv_resp)?;
        qp.params.qpn = dctn;
        // CQE version 0 looks QPs up by the CQE's QPN: from now on that is the DCT number.
        qp.shared.dctn.store(dctn & 0xff_ffff, Ordering::Release);
        Ok(Some(dctn))
    }

    fn qp_state_changed(&self, qp: &mut Mlx5Qp, state: QpState) {
        if state == QpState::Reset {
            // Back to a fresh queue: indices and doorbell records to zero (the kernel reset the
            // hardware queue). CQEs of this QP still in CQs are not cleaned here (see docs).
            qp.cur_post = 0;
            qp.sq_head = 0;
            qp.rq_head = 0;
            qp.fm_cache = 0;
            qp.shared.sq_tail.store(0, Ordering::Release);
            qp.shared.rq_tail.store(0, Ordering::Release);
            qp.db.write_be32_volatile(RCV_DBR, 0);
            qp.db.write_be32_volatile(SND_DBR, 0);
        }
    }

    /// One UMR WQE (umr.rs), rung like a single-WR post (BlueFlame when eligible: it is an
    /// inline WQE of 16 DS). Unsignaled unless the QP signals every send.
    unsafe fn post_crypto_mkey_configure(
        &self,
        qp: &mut Mlx5Qp,
        mkey: &mut crypto::Mlx5CryptoMkey,
        sge: &Sge,
        access: u32,
        attr: &uverbs::provider::CryptoAttr,
        dek: &crypto::Mlx5Dek,
    ) -> Result<(), PostError> {
        if qp.geo.sq_wqe_cnt == 0 {
            return Err(post_err(0, enomem("mlx5 post mkey configure", "the QP has no send queue".into())));
        }
        let tail = qp.shared.sq_tail.load(Ordering::Acquire);
        if qp.sq_head.wrapping_sub(tail) >= qp.geo.sq_max_post {
            return Err(post_err(
                0,
                enomem("mlx5 post mkey configure", format!("send queue full ({} outstanding)", qp.geo.sq_max_post))
                    .with_hint("poll the CQ more often or create the QP with a larger max_send_wr"),
            ));
        }
        let m = umr::MkeyConfigure {
            mkey_lkey: mkey.lkey(),
            max_entries: mkey.max_entries(),
            sgl: std::slice::from_ref(sge),
            access,
            attr,
            dek_id: dek.id(),
            engines: self.crypto_engines(),
            update_tag: self.resp.comp_mask & umr::UCTX_RESP_MASK_MKEY_UPDATE_TAG != 0,
            fm_cache: qp.fm_cache,
        };
        let sq_len = qp.geo.sq_wqe_cnt as usize * WQEBB;
        // SAFETY: as in post_send: `&mut Mlx5Qp` makes this the only writer of the SQ region,
        // which the device only reads and CQ polling never touches.
        let sq = unsafe { qp.buf.slice_mut(qp.geo.sq_offset, sq_len) };
        let b = umr::build_crypto_mkey_configure(sq, qp.cur_post, &qp.params, &m).map_err(|e| post_err(0, e))?;
        let start = qp.cur_post;
        let idx = (start & (qp.geo.sq_wqe_cnt - 1)) as usize;
        // libmlx5 keeps the QP's current wr_id for the UMR; the trait has none: 0.
        qp.shared.sq_wrid[idx].store(0, Ordering::Relaxed);
        qp.shared.sq_wqe_head[idx].store(qp.sq_head, Ordering::Relaxed);
        qp.cur_post = qp.cur_post.wrapping_add(b.wqebbs);
        // The request after this one waits for the mkey update (libmlx5's fm_cache).
        qp.fm_cache = umr::INITIATOR_SMALL_FENCE;
        // ring_sq orders the WQE stores before the doorbell record and the record before the
        // MMIO doorbell / BlueFlame copy (see its comments).
        self.ring_sq(qp, 1, b, start, None);
        Ok(())
    }

    unsafe fn post_send(&self, qp: &mut Mlx5Qp, wrs: &[SendWr<'_>]) -> Result<(), PostError> {
        if let [wr] = wrs {
            if self.post_one_fast(qp, wr) {
                return Ok(());
            }
        }
        if wrs.is_empty() {
            return Ok(());
        }
        if qp.geo.sq_wqe_cnt == 0 {
            return Err(post_err(
                0,
                enomem("mlx5 post_send", "the QP has no send queue".into()),
            ));
        }
        let sq_len = qp.geo.sq_wqe_cnt as usize * WQEBB;
        // SAFETY: the SQ region is written only here, and `&mut Mlx5Qp` makes this the only
        // poster; the device only reads it; CQ polling reads only the RQ region.
        let sq = unsafe { qp.buf.slice_mut(qp.geo.sq_offset, sq_len) };
        let mut nreq: u32 = 0;
        let mut last = None;
        let mut err = None;
        let avs = if matches!(qp.params.qp_type, QpType::Ud | QpType::Dci) {
            Some(self.avs.read().unwrap_or_else(|e| e.into_inner()))
        } else {
            None
        };
        for (i, wr) in wrs.iter().enumerate() {
            let tail = qp.shared.sq_tail.load(Ordering::Acquire);
            if qp.sq_head.wrapping_add(nreq).wrapping_sub(tail) >= qp.geo.sq_max_post {
                err = Some(post_err(
                    i,
                    enomem(
                        "mlx5 post_send",
                        format!("send queue full ({} outstanding)", qp.geo.sq_max_post),
                    )
                    .with_hint("poll the CQ more often or create the QP with a larger max_send_wr"),
                ));
                break;
            }
            let av = match (&avs, wr.ud) {
                (Some(t), Some(ud)) => t.get(ud.ah as usize).and_then(|a| a.as_ref()),
                _ => None,
            };
            match wqe::build_send(sq, qp.cur_post, &qp.params, wr, av, |a, d| {
                // SAFETY: this runs inside the unsafe post_send, whose caller guarantees every
                // SGE is readable for its length.
                unsafe { copy_from_va(a, d) }
            }) {
                Ok(b) => {
                    let idx = (qp.cur_post & (qp.geo.sq_wqe_cnt - 1)) as usize;
                    if qp.fm_cache != 0 {
                        // The WQE after a UMR carries the small fence unless it asked for the
                        // full one (libmlx5: fence = FENCE ? FENCE : fm_cache).
                        if !wr.flags.contains(SendFlags::FENCE) {
                            sq[idx * WQEBB + 11] |= qp.fm_cache;
                        }
                        qp.fm_cache = 0;
                    }
                    qp.shared.sq_wrid[idx].store(wr.wr_id, Ordering::Relaxed);
                    qp.shared.sq_wqe_head[idx]
                        .store(qp.sq_head.wrapping_add(nreq), Ordering::Relaxed);
                    last = Some((b, qp.cur_post));
                    qp.cur_post = qp.cur_post.wrapping_add(b.wqebbs);
                    nreq += 1;
                }
                Err(e) => {
                    err = Some(post_err(i, e));
                    break;
                }
            }
        }
        drop(avs);
        if let Some((b, start)) = last {
            self.ring_sq(qp, nreq, b, start, None);
        }
        match err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    unsafe fn post_recv(&self, qp: &mut Mlx5Qp, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
        if wrs.is_empty() {
            return Ok(());
        }
        if qp.geo.rq_wqe_cnt == 0 {
            let what = if qp.shared.uses_srq {
                "the QP receives from an SRQ: post to the SRQ"
            } else {
                "the QP has no receive queue"
            };
            return Err(post_err(0, enomem("mlx5 post_recv", what.into())));
        }
        let stride = 1usize << qp.geo.rq_wqe_shift;
        let mut nreq: u32 = 0;
        let mut err = None;
        for (i, wr) in wrs.iter().enumerate() {
            let tail = qp.shared.rq_tail.load(Ordering::Acquire);
            if qp.rq_head.wrapping_add(nreq).wrapping_sub(tail) >= qp.geo.rq_max_post {
                err = Some(post_err(
                    i,
                    enomem(
                        "mlx5 post_recv",
                        format!("receive queue full ({} outstanding)", qp.geo.rq_max_post),
                    ),
                ));
                break;
            }
            let idx = qp.rq_head.wrapping_add(nreq) & (qp.geo.rq_wqe_cnt - 1);
            // SAFETY: RQ slots are written only by the (single, &mut) poster; CQ polling reads a
            // slot only after the device completed it, and a completed slot is reused only after
            // the tail moved past it (flow control above).
            let slot = unsafe { qp.buf.slice_mut((idx as usize) * stride, stride) };
            if let Err(e) = wqe::build_recv(slot, wr) {
                err = Some(post_err(i, e));
                break;
            }
            qp.shared.rq_wrid[idx as usize].store(wr.wr_id, Ordering::Relaxed);
            nreq += 1;
        }
        if nreq > 0 {
            qp.rq_head = qp.rq_head.wrapping_add(nreq);
            // udma_to_device_barrier: receive WQEs before the doorbell record that exposes them.
            fence(Ordering::Release);
            qp.db.write_be32_volatile(RCV_DBR, qp.rq_head & 0xffff);
        }
        match err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    unsafe fn post_srq_recv(&self, srq: &mut Mlx5Srq, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
        let s = &srq.shared;
        let stride = 1usize << s.shift;
        let mut nreq = 0u32;
        let mut err = None;
        {
            let mut st = s.state.lock().unwrap_or_else(|e| e.into_inner());
            for (i, wr) in wrs.iter().enumerate() {
                if st.0 == st.1 {
                    err = Some(post_err(
                        i,
                        enomem(
                            "mlx5 post_srq_recv",
                            format!("SRQ full ({} entries)", s.cnt - 1),
                        ),
                    ));
                    break;
                }
                let idx = st.0;
                // Encode on the stack (no allocation per receive; SRQ strides are at most the
                // device's max_rq_desc_sz, 512 on ConnectX), then copy into the entry.
                let mut stack = [0u8; 512];
                let mut heap = Vec::new();
                let slot: &mut [u8] = if stride - 16 <= stack.len() {
                    &mut stack[..stride - 16]
                } else {
                    heap.resize(stride - 16, 0);
                    &mut heap
                };
                if let Err(e) = wqe::build_recv(slot, wr) {
                    err = Some(post_err(i, e));
                    break;
                }
                s.buf.write(((idx as usize) << s.shift) + 16, slot);
                s.wrid[idx as usize].store(wr.wr_id, Ordering::Relaxed);
                st.0 = s.next_of(idx);
                nreq += 1;
            }
        }
        if nreq > 0 {
            srq.counter = srq.counter.wrapping_add(nreq);
            // udma_to_device_barrier: SRQ WQEs before the counter that exposes them.
            fence(Ordering::Release);
            srq.db.write_be32_volatile(0, srq.counter & 0xffff);
        }
        match err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn poll_cq(&self, cq: &mut Mlx5Cq, out: &mut [WorkCompletion]) -> Result<usize> {
        let mask = cq.ncqe - 1;
        let mut n = 0;
        while n < out.len() {
            let slot = (cq.ci & mask) as usize * cqe::CQE_SIZE;
            // The device writes op_own last; one volatile byte load decides ownership.
            let op_own = cq.buf.read_u8_volatile(slot + cqe::off::OP_OWN);
            if !cqe::sw_owned(op_own, cq.ci, cq.ncqe) {
                break;
            }
            // udma_from_device_barrier (lfence): no load of the CQE body may be satisfied before
            // the owner check above.
            uar::lfence();
            // SAFETY: software owns this CQE (owner check above): the device writes the slot
            // again only after the consumer index we publish below has moved past it, and we
            // publish it only after the last use of `raw` (end of this iteration). `&mut cq`
            // makes us the only poller. The bytes are still untrusted: parse_into masks every
            // index and QPN it returns.
            let raw: &[u8; 64] = unsafe { cq.buf.array_ref::<64>(slot) };
            cq.ci = cq.ci.wrapping_add(1);
            // Decoded straight into the caller's entry (no intermediate completion to copy);
            // on an error that entry is left with unspecified values and not counted.
            let wc = &mut out[n];
            let r = match cqe::parse_into(raw, wc) {
                Ok(c) => self.complete(&mut cq.last, &c, raw, wc),
                Err(e) => Err(cqe_error(e)),
            };
            if let Err(e) = r {
                // The bad CQE is consumed (as before): publish the consumer index, then fail.
                fence(Ordering::Release);
                cq.db.write_be32_volatile(CQ_SET_CI, cq.ci & 0xff_ffff);
                return Err(e);
            }
            n += 1;
        }
        if n > 0 {
            // Our reads of the consumed CQEs must not be reordered after the store that lets
            // the device overwrite them (compiler barrier on x86-64, where loads are not
            // reordered with later stores).
            fence(Ordering::Release);
            cq.db.write_be32_volatile(CQ_SET_CI, cq.ci & 0xff_ffff);
        }
        Ok(n)
    }

    fn arm_cq(&self, cq: &mut Mlx5Cq, solicited_only: bool) -> Result<()> {
        let sn = cq.arm_sn & 3;
        let ci = cq.ci & 0xff_ffff;
        let cmd = if solicited_only { 1 << 24 } else { 0 };
        let arm = (sn << 28) | cmd | ci;
        cq.db.write_be32_volatile(CQ_ARM_DB, arm);
        // mmio_wc_start: the arm word in the doorbell record must be visible before the device
        // acts on the doorbell below (it reads the record).
        self.uar.wc_start();
        let v = ((arm as u64) << 32) | cq.cqn as u64;
        self.uar.write64(self.plan.cq_doorbell_offset(), v.to_be());
        self.uar.flush();
        Ok(())
    }

    fn cq_event(&self, cq: &mut Mlx5Cq) {
        cq.arm_sn = cq.arm_sn.wrapping_add(1);
    }
}
