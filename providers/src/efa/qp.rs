//! QPs (UD, and SRD created as a driver QP): creation with EFA's udata, the LLQ, RQ ring and
//! doorbells mapped at the kernel's keys with every offset and size checked, and the post paths
//! of libefa 44 (`efa_post_send`, `efa_post_recv`, and the RDMA read of its `ibv_wr_*` API).

use std::sync::{Arc, Mutex, MutexGuard};

use uverbs::error::{Error, Result};
use uverbs::provider::{PostError, QpCreated, QpInitAttr, QpState, QpType, Udata};
use uverbs::wr::{RecvWr, SendFlags, SendWr, WrOpcode};

use super::mem::{checked_db, Region};
use super::ring::{max_batch_wr, qp_geometry, QpGeometry, RingError, WqState};
use super::wqe::{
    encode_rdma_read, encode_rdma_write, encode_recv, encode_send, TxDest, TxPayload, TxSlot,
};
use super::{abi, hw, Efa};

/// A QP's two work queues, shared with the CQs that complete into them (through the
/// context's registry: a completion names its QP by number).
pub struct Queues {
    pub sq: WqState,
    pub rq: WqState,
}

/// The queues of a QP as its CQs see them.
#[derive(Clone)]
pub struct QpShared(Arc<Mutex<Queues>>);

impl QpShared {
    pub(super) fn same(&self, other: &QpShared) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
    pub fn lock(&self) -> MutexGuard<'_, Queues> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
    /// Give back request `req_id` (untrusted) of the send or the receive queue.
    pub fn complete(&self, send: bool, req_id: u16) -> Result<u64, RingError> {
        let mut q = self.lock();
        let wq = if send { &mut q.sq } else { &mut q.rq };
        wq.pool.complete(req_id)
    }
}

pub struct EfaQpPrep {
    geo: QpGeometry,
}

/// The receive ring and its doorbell.
struct Rq<M> {
    ring: M,
    db: M,
    db_off: usize,
}

pub struct EfaQp<M: Region> {
    pub qpn: u32,
    pub qp_type: QpType,
    shared: QpShared,
    /// The LLQ mapping and where the descriptors start in it.
    llq: M,
    llq_off: usize,
    sq_db: M,
    sq_db_off: usize,
    rq: Option<Rq<M>>,
    max_send_sge: usize,
    max_recv_sge: usize,
    max_inline: usize,
    max_batch: u32,
    rdma_read: bool,
    rdma_write: bool,
    sq_sig_all: bool,
    registry: Arc<super::Registry>,
}

impl<M: Region> EfaQp<M> {
    /// The LLQ mapping (tests read the descriptors the provider wrote).
    pub fn llq(&self) -> (&M, usize) {
        (&self.llq, self.llq_off)
    }
    pub fn sq_doorbell(&self) -> &M {
        &self.sq_db
    }
    pub fn rq_ring(&self) -> Option<&M> {
        self.rq.as_ref().map(|r| &r.ring)
    }
    pub fn rq_doorbell(&self) -> Option<&M> {
        self.rq.as_ref().map(|r| &r.db)
    }
    pub fn queues(&self) -> MutexGuard<'_, Queues> {
        self.shared.lock()
    }
    pub(super) fn state_changed(&mut self, state: QpState) {
        // A QP back in RESET starts its rings over (libefa's efa_qp_init_indices).
        if state == QpState::Reset {
            let mut q = self.shared.lock();
            q.sq.reset();
            q.rq.reset();
        }
    }
}

impl<M: Region> Drop for EfaQp<M> {
    fn drop(&mut self) {
        self.registry.remove(self.qpn as u16, &self.shared);
    }
}

fn create_err(errno: i32, detail: String, hint: &str) -> Error {
    let mut e = Error::msg("EFA create QP", detail).with_hint(hint.to_string());
    e.errno = Some(errno);
    e
}

fn post_err(index: usize, errno: i32, what: &str, detail: String) -> PostError {
    let mut e = Error::msg(format!("EFA {what}"), detail);
    e.errno = Some(errno);
    PostError { index, error: e }
}

fn ring_err(index: usize, what: &str, e: RingError) -> PostError {
    let errno = match e {
        RingError::Full { .. } => libc::ENOMEM,
        _ => libc::EINVAL,
    };
    post_err(index, errno, what, e.to_string())
}

impl<M: Region> Efa<M> {
    /// libefa 44's checks and `efa_setup_qp` sizing; the create udata carries the ring sizes
    /// and, for SRD, `EFA_QP_DRIVER_TYPE_SRD`.
    pub(super) fn qp_prepare(&self, attr: &QpInitAttr) -> Result<(EfaQpPrep, Udata)> {
        let driver_type = match attr.qp_type {
            QpType::Ud => 0,
            QpType::Srd => abi::QP_DRIVER_TYPE_SRD,
            t => {
                return Err(create_err(
                    libc::EOPNOTSUPP,
                    format!("EFA has no {} QPs", t.name()),
                    "use UD or SRD (-c UD / -c SRD)",
                ))
            }
        };
        if attr.uses_srq {
            return Err(create_err(
                libc::EOPNOTSUPP,
                "EFA has no SRQs".into(),
                "leave out --use-srq",
            ));
        }
        let c = &attr.caps;
        let caps = &self.caps;
        let over = [
            ("send WRs", c.max_send_wr, caps.max_sq_wr),
            ("receive WRs", c.max_recv_wr, caps.max_rq_wr),
            ("send SGEs", c.max_send_sge, u32::from(caps.max_sq_sge)),
            ("receive SGEs", c.max_recv_sge, u32::from(caps.max_rq_sge)),
            (
                "inline bytes",
                c.max_inline_data,
                u32::from(self.uctx.inline_buf_size),
            ),
        ];
        if let Some((what, got, max)) = over.iter().find(|(_, got, max)| got > max) {
            return Err(create_err(
                libc::EINVAL,
                format!("{got} {what} asked for, the device takes at most {max}"),
                "ask for less (a smaller -t/--tx-depth, -r/--rx-depth or -I/--inline_size)",
            ));
        }
        let geo = qp_geometry(
            c.max_send_wr,
            u32::from(self.uctx.min_sq_wr),
            c.max_recv_wr,
            c.max_recv_sge,
        )
        .map_err(|e| create_err(libc::EINVAL, e.to_string(), "ask for a smaller queue"))?;
        let req = abi::create_qp_cmd(geo.rq_ring_size, geo.sq_ring_size, driver_type).to_vec();
        Ok((
            EfaQpPrep { geo },
            Udata {
                req,
                resp_len: abi::CREATE_QP_RESP_LEN,
            },
        ))
    }

    pub(super) fn qp_finish(
        &self,
        prep: EfaQpPrep,
        attr: &QpInitAttr,
        core: &QpCreated,
        drv_resp: &[u8],
    ) -> Result<EfaQp<M>> {
        let r =
            abi::parse_qp_resp(drv_resp).map_err(|e| Error::msg("EFA create QP", e.to_string()))?;
        let geo = prep.geo;
        let pg = self.page_size;
        let bad = |d: String| {
            create_err(
                libc::EINVAL,
                d,
                "the kernel's answer is not one this provider can use",
            )
        };
        // The LLQ: the descriptors start `llq_desc_offset` into the first page mapped.
        let llq_off = r.llq_desc_offset as usize;
        if llq_off >= pg || !llq_off.is_multiple_of(hw::TX_WQE_SIZE) {
            return Err(bad(format!(
                "LLQ descriptors at offset {llq_off:#x}, not 64-byte aligned in the first page"
            )));
        }
        let llq_len = (geo.sq_ring_size as usize + llq_off).next_multiple_of(pg);
        let sq_db_off = checked_db(r.sq_db_offset, pg, "SQ doorbell")?;
        let rq = if geo.rq_ring_size > 0 {
            if r.rq_mmap_size < u64::from(geo.rq_ring_size) {
                return Err(bad(format!(
                    "an RQ ring of {} bytes for {} asked",
                    r.rq_mmap_size, geo.rq_ring_size
                )));
            }
            let db_off = checked_db(r.rq_db_offset, pg, "RQ doorbell")?;
            // libefa's order: the RQ doorbell page, the RQ ring, the SQ doorbell page, the LLQ.
            Some(Rq {
                db: M::map(&self.fd, r.rq_db_mmap_key, pg, true, "RQ doorbell")?,
                ring: M::map(
                    &self.fd,
                    r.rq_mmap_key,
                    r.rq_mmap_size as usize,
                    true,
                    "RQ ring",
                )?,
                db_off,
            })
        } else {
            None
        };
        let sq_db = M::map(&self.fd, r.sq_db_mmap_key, pg, true, "SQ doorbell")?;
        let llq = M::map(
            &self.fd,
            r.llq_desc_mmap_key,
            llq_len,
            true,
            "LLQ descriptors",
        )?;
        let ring = |e: RingError| bad(e.to_string());
        let shared = QpShared(Arc::new(Mutex::new(Queues {
            sq: WqState::new(geo.sq_wqe_cnt, geo.sq_wqe_cnt).map_err(ring)?,
            rq: WqState::new(geo.rq_desc_cnt, geo.rq_wqe_cnt).map_err(ring)?,
        })));
        self.registry.insert(core.qpn as u16, shared.clone());
        Ok(EfaQp {
            qpn: core.qpn,
            qp_type: attr.qp_type,
            shared,
            llq,
            llq_off,
            sq_db,
            sq_db_off,
            rq,
            max_send_sge: attr.caps.max_send_sge as usize,
            max_recv_sge: attr.caps.max_recv_sge as usize,
            max_inline: attr.caps.max_inline_data as usize,
            max_batch: max_batch_wr(self.uctx.max_tx_batch, self.uctx.min_sq_wr, geo.sq_wqe_cnt),
            rdma_read: attr.qp_type == QpType::Srd && self.caps.rdma_read(),
            rdma_write: attr.qp_type == QpType::Srd && self.caps.rdma_write(),
            sq_sig_all: attr.sq_sig_all,
            registry: self.registry.clone(),
        })
    }

    /// libefa's `efa_post_send`: each request checked, then encoded at the LLQ slot the SQ
    /// counter names; the doorbell (the counter) rung every `max_batch` requests and after the
    /// last. Every request asks for a completion, so every one must be signaled (or the QP
    /// created with `sq_sig_all`), as libefa 44 requires.
    ///
    /// # Safety
    /// [`uverbs::provider::Provider::post_send`]'s contract (inline payloads are read from the
    /// SGEs' addresses).
    pub(super) unsafe fn qp_post_send(
        &self,
        qp: &mut EfaQp<M>,
        wrs: &[SendWr<'_>],
    ) -> Result<(), PostError> {
        let shared = qp.shared.clone();
        let mut q = shared.lock();
        let mut batch = 0u32;
        let mut result = Ok(());
        for (i, wr) in wrs.iter().enumerate() {
            // SAFETY: the caller keeps this function's contract, which is encode_one's.
            let wqe = match unsafe { encode_one(qp, &mut q.sq, wr, i) } {
                Ok(w) => w,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            };
            qp.llq
                .write(qp.llq_off + q.sq.slot() * hw::TX_WQE_SIZE, &wqe);
            q.sq.advance();
            batch += 1;
            if batch == qp.max_batch {
                batch = 0;
                qp.sq_db.ring32(qp.sq_db_off, u32::from(q.sq.pc));
            }
        }
        if batch > 0 {
            qp.sq_db.ring32(qp.sq_db_off, u32::from(q.sq.pc));
        }
        result
    }

    /// libefa's `efa_post_recv`: one RX descriptor per SGE in the host ring, the doorbell (the
    /// counter) rung at the end.
    pub(super) fn qp_post_recv(
        &self,
        qp: &mut EfaQp<M>,
        wrs: &[RecvWr<'_>],
    ) -> Result<(), PostError> {
        let Some(rq) = &qp.rq else {
            return Err(post_err(
                0,
                libc::EINVAL,
                "post receive",
                "this QP has no receive queue (created with 0 receive WRs)".into(),
            ));
        };
        let mut q = qp.shared.lock();
        let mut result = Ok(());
        for (i, wr) in wrs.iter().enumerate() {
            if wr.sgl.len() > qp.max_recv_sge {
                let d = format!(
                    "{} SGEs, this QP takes at most {}",
                    wr.sgl.len(),
                    qp.max_recv_sge
                );
                result = Err(post_err(i, libc::EINVAL, "post receive", d));
                break;
            }
            let req_id = match q.rq.pool.take(wr.wr_id) {
                Ok(id) => id,
                Err(e) => {
                    result = Err(ring_err(i, "post receive", e));
                    break;
                }
            };
            for d in encode_recv(req_id, wr.sgl) {
                rq.ring.write(q.rq.slot() * hw::RX_DESC_SIZE, &d);
                q.rq.advance();
            }
        }
        rq.db.ring32(rq.db_off, u32::from(q.rq.pc));
        result
    }
}

/// Check one send request and build its descriptor, taking its request id last (a refused
/// request takes none).
///
/// # Safety
/// For an INLINE request, every SGE must describe memory valid for reads.
unsafe fn encode_one<M: Region>(
    qp: &EfaQp<M>,
    sq: &mut WqState,
    wr: &SendWr<'_>,
    i: usize,
) -> Result<[u8; hw::TX_WQE_SIZE], PostError> {
    const WHAT: &str = "post send";
    let Some(ud) = wr.ud else {
        return Err(post_err(
            i,
            libc::EINVAL,
            WHAT,
            "an EFA send needs an address (AH, remote QPN, QKEY)".into(),
        ));
    };
    if !qp.sq_sig_all && !wr.flags.contains(SendFlags::SIGNALED) {
        let d =
            "an unsignaled send: EFA completes every send, so libefa 44 refuses them too".into();
        return Err(post_err(i, libc::EINVAL, WHAT, d));
    }
    let dest = TxDest {
        ah: ud.ah as u16,
        remote_qpn: ud.remote_qpn as u16,
        qkey: ud.remote_qkey,
    };
    let (read, write) = match wr.opcode {
        WrOpcode::Send | WrOpcode::SendWithImm => (false, false),
        WrOpcode::RdmaRead if qp.rdma_read => (true, false),
        WrOpcode::RdmaWrite | WrOpcode::RdmaWriteWithImm if qp.rdma_write => (false, true),
        op => {
            let d = format!(
                "{} on an EFA {} QP (EFA's descriptors carry SEND, SEND_WITH_IMM, and on SRD RDMA_READ and RDMA_WRITE[_WITH_IMM] where the device's caps have them)",
                op.name(),
                qp.qp_type.name()
            );
            return Err(post_err(i, libc::EINVAL, WHAT, d));
        }
    };
    if wr.sgl.len() > qp.max_send_sge {
        let d = format!(
            "{} SGEs, this QP takes at most {}",
            wr.sgl.len(),
            qp.max_send_sge
        );
        return Err(post_err(i, libc::EINVAL, WHAT, d));
    }
    let mut inline = [0u8; hw::TX_INLINE_MAX];
    let mut inline_len = None;
    if !read && !write && wr.flags.contains(SendFlags::INLINE) {
        let total = wr.total_len() as usize;
        if total > qp.max_inline.min(hw::TX_INLINE_MAX) {
            let d = format!(
                "{total} inline bytes, this QP takes at most {}",
                qp.max_inline
            );
            return Err(post_err(i, libc::EINVAL, WHAT, d));
        }
        let mut at = 0;
        for s in wr.sgl {
            // SAFETY: the caller guarantees each SGE is readable for its length; the total
            // fits the buffer (checked above).
            let src = unsafe {
                std::slice::from_raw_parts(s.addr as usize as *const u8, s.length as usize)
            };
            inline[at..at + src.len()].copy_from_slice(src);
            at += src.len();
        }
        inline_len = Some(at);
    }
    let slot = TxSlot {
        req_id: sq.pool.take(wr.wr_id).map_err(|e| ring_err(i, WHAT, e))?,
        phase: sq.phase,
    };
    let encoded = if read {
        encode_rdma_read(slot, dest, wr.remote.addr, wr.remote.rkey, wr.sgl)
    } else if write {
        let imm = (wr.opcode == WrOpcode::RdmaWriteWithImm).then(|| u32::from_be(wr.imm_data));
        encode_rdma_write(slot, dest, wr.remote.addr, wr.remote.rkey, wr.sgl, imm)
    } else {
        let imm = (wr.opcode == WrOpcode::SendWithImm).then(|| u32::from_be(wr.imm_data));
        let payload = match inline_len {
            Some(n) => TxPayload::Inline(&inline[..n]),
            None => TxPayload::Sgl(wr.sgl),
        };
        encode_send(slot, dest, imm, payload)
    };
    encoded.map_err(|e| {
        // Give the id back: nothing was written for it.
        let _ = sq.pool.complete(slot.req_id);
        post_err(i, libc::EINVAL, WHAT, e.to_string())
    })
}
