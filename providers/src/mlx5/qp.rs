//! Queue pairs: creation, the send path (`post_send`, its single-request fast path, `ring_sq`:
//! doorbell record, BlueFlame or doorbell), the receive path, state changes.

use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use uverbs::error::{Error, Result};
use uverbs::provider::{PostError, QpCreated, QpInitAttr, QpState, QpType, Udata};
use uverbs::wr::{RecvWr, SendFlags, SendWr};

use super::geometry::{self, QpGeometry};
use super::mem::{queue_mem_accessors, DmaBuf};
use super::registry::{QpShared, Registry, UidxReservation, MAX_UIDX};
use super::uar::UarWriter;
use super::wqe::{self, SqParams, WQEBB};
use super::{abi, enomem, post_err, umr, Mlx5};

/// QP doorbell-record word indices (each a big-endian u32).
const RCV_DBR: usize = 0;
const SND_DBR: usize = 4;

pub struct Mlx5QpPrep {
    pub(super) buf: DmaBuf,
    pub(super) db: DmaBuf,
    pub(super) geo: QpGeometry,
    pub(super) uidx: UidxReservation,
    /// DCI: the DC key its sends present (0 for other types).
    pub(super) dc_key: u64,
}

pub struct Mlx5Qp {
    pub(super) shared: Arc<QpShared>,
    buf: Arc<DmaBuf>,
    db: DmaBuf,
    pub geo: QpGeometry,
    pub(super) params: SqParams,
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
    /// The fence the next WQE carries unless it asks for a full one.
    pub(super) fn fm_cache(&self) -> u8 {
        self.fm_cache
    }
    queue_mem_accessors!();
}

impl Mlx5QpPrep {
    /// The buffer and doorbell record for `geo`'s queues (a DCT's geometry has none, but libmlx5
    /// allocates the record all the same).
    pub(super) fn alloc_bufs(geo: &QpGeometry) -> Result<(DmaBuf, DmaBuf)> {
        let buf = DmaBuf::alloc(geo.buf_len, "mlx5 QP buffer")?;
        let db = DmaBuf::alloc(64, "mlx5 QP doorbell record")?;
        Ok((buf, db))
    }

    /// The driver request's QP part: the queue sizes, where the buffer and doorbell record are
    /// (`has_buf` false: nothing named, a DCT) and the user index the request carries.
    pub(super) fn request(&self, has_buf: bool, uidx: u32) -> abi::QpReq {
        abi::QpReq {
            buf_addr: if has_buf { self.buf.addr() } else { 0 },
            db_addr: if has_buf { self.db.addr() } else { 0 },
            sq_wqe_count: self.geo.sq_wqe_cnt,
            rq_wqe_count: self.geo.rq_wqe_cnt,
            rq_wqe_shift: self.geo.rq_wqe_shift,
            flags: 0,
            uidx,
            ..abi::QpReq::default()
        }
    }
}

impl Drop for Mlx5Qp {
    fn drop(&mut self) {
        self.registry.release(self.shared.uidx);
    }
}

impl<U: UarWriter> Mlx5<U> {
    pub(super) fn qp_prepare(&self, attr: &QpInitAttr) -> Result<(Mlx5QpPrep, Udata)> {
        if attr.qp_type.is_dc() {
            return Err(Error::msg(
                "mlx5 create QP",
                format!("{} QPs need their DC attributes (prepare_dc_qp)", attr.qp_type.name()),
            ));
        }
        if attr.qp_type == QpType::Srd {
            let mut e = Error::msg("mlx5 create QP", "SRD QPs are an EFA feature; mlx5 has none");
            e.errno = Some(libc::EOPNOTSUPP);
            return Err(e);
        }
        let geo = geometry::qp_geometry(&self.resp, attr)?;
        let (buf, db) = Mlx5QpPrep::alloc_bufs(&geo)?;
        let tgt = attr.qp_type == QpType::XrcTgt;
        // An XRC target gets no user index (its receives complete through the XRC SRQ's);
        // libmlx5 leaves the request's uidx 0 for it under CQE version 1.
        let uidx = if tgt {
            UidxReservation { reg: self.registry.clone(), uidx: u32::MAX, armed: false }
        } else {
            UidxReservation::take(&self.registry)?
        };
        let prep = Mlx5QpPrep { buf, db, geo, uidx, dc_key: 0 };
        let req_uidx = if self.resp.cqe_version != 1 {
            MAX_UIDX as u32
        } else if tgt {
            0
        } else {
            prep.uidx.uidx
        };
        let req = abi::encode_qp_req(&prep.request(true, req_uidx));
        Ok((
            prep,
            Udata {
                req,
                resp_len: abi::CREATE_QP_RESP_LEN,
            },
        ))
    }

    pub(super) fn qp_finish(
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

    pub(super) fn qp_reset_if_reset(&self, qp: &mut Mlx5Qp, state: QpState) {
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

    /// One UMR WQE (umr.rs) configuring the crypto mkey `m` names, rung like a single-WR post
    /// (BlueFlame when eligible: it is an inline WQE of 16 DS). Unsignaled unless the QP signals
    /// every send.
    /// # Safety
    /// `m.sgl` names registered memory (`CryptoProvider::post_crypto_mkey_configure`'s contract).
    pub(super) unsafe fn qp_post_mkey_configure(
        &self,
        qp: &mut Mlx5Qp,
        m: &umr::MkeyConfigure<'_>,
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
        let sq_len = qp.geo.sq_wqe_cnt as usize * WQEBB;
        // SAFETY: as in post_send: `&mut Mlx5Qp` makes this the only writer of the SQ region,
        // which the device only reads and CQ polling never touches.
        let sq = unsafe { qp.buf.slice_mut(qp.geo.sq_offset, sq_len) };
        let b = umr::build_crypto_mkey_configure(sq, qp.cur_post, &qp.params, m).map_err(|e| post_err(0, e))?;
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

    /// # Safety
    /// every SGE is readable for its length (`Provider::post_send`'s contract).
    // Forced inline into the caller's post loop (with `Provider::post_send`): out of line each
    // post pays a call frame, register spills and a `Result` through memory, and the
    // single-request fast path cannot fold what the loop knows (one WR, one SGE, the opcode).
    // Host hot-path loop: bw 260.8 -> 185.7 Ir/op, lat 472 -> 393 from this alone
    // (docs/benchmarks-data/2026-12-06-hotpath-inline.md). The general path stays out of line.
    #[inline(always)]
    pub(super) unsafe fn qp_post_send(&self, qp: &mut Mlx5Qp, wrs: &[SendWr<'_>]) -> Result<(), PostError> {
        if let [wr] = wrs {
            if self.post_one_fast(qp, wr) {
                return Ok(());
            }
        }
        // SAFETY: the caller keeps `post_send`'s contract, which is the callee's.
        unsafe { self.qp_post_send_general(qp, wrs) }
    }

    /// `post_send` of anything the single-request fast path does not take: a list, other
    /// transports and opcodes, inline data, a full queue, a pending UMR fence. Kept out of line
    /// so that forcing `qp_post_send` into the caller's loop does not bring this loop along:
    /// host hot-path loop bw 184.5 -> 179.5 Ir/op, lat 341 -> 335.
    /// # Safety
    /// every SGE is readable for its length (`Provider::post_send`'s contract).
    #[inline(never)]
    unsafe fn qp_post_send_general(&self, qp: &mut Mlx5Qp, wrs: &[SendWr<'_>]) -> Result<(), PostError> {
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

    /// # Safety
    /// every SGE names writable memory that stays valid until completion (`Provider::post_recv`'s contract).
    pub(super) unsafe fn qp_post_recv(&self, qp: &mut Mlx5Qp, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
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
