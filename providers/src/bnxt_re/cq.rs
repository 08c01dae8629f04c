//! CQs: creation, polling, arming, and the software flush of QPs in error.
//!
//! An entry is new when its phase bit equals the CQ's phase, which flips each time the consumer
//! index wraps. A send completion retires every WQE up to the consumer index it carries (the
//! unsignalled ones silently): the same entry is looked at again until the oldest outstanding
//! WQE is the one after it. After an error or a terminal entry the QP goes on this CQ's flush
//! lists, and its outstanding WQEs complete with `WR_FLUSH_ERR` from software, as libbnxt_re.

use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;

use uverbs::error::{Error, Result};
use uverbs::provider::{CqCreated, QpType, Udata};
use uverbs::wr::{wc_flags, WcOpcode, WcStatus, WorkCompletion};

use super::cqe::{self, Cqe, CqeKind};
use super::db::Page;
use super::geometry::cq_depth;
use super::hw::*;
use super::shared::QpShared;
use super::{abi, Bnxt};
use crate::mlx5::mem::DmaBuf;

pub struct BnxtCqPrep {
    buf: DmaBuf,
    depth: u32,
}

pub struct BnxtCq<P: Page = super::db::MmapPage> {
    buf: DmaBuf,
    pub depth: u32,
    pub head: u32,
    pub phase: u8,
    pub cqid: u32,
    /// The consumer's epoch: flips each time `head` wraps (gen P7 doorbells carry it).
    pub epoch: bool,
    /// The CQ's toggle page, where the kernel offered one (gen P7): its first word goes into
    /// every arm doorbell.
    toggle: Option<P>,
    first_arm: bool,
    /// An arm asked for since the last poll: the doorbell type, rung after the next poll.
    deferred_arm: Option<u32>,
    sq_flush: Vec<Arc<QpShared>>,
    rq_flush: Vec<Arc<QpShared>>,
}

impl<P: Page> BnxtCq<P> {
    /// The CQ ring (tests play the device with it).
    pub fn buf(&self) -> &DmaBuf {
        &self.buf
    }
    /// The toggle page, where the kernel gave one (tests play the kernel with it).
    pub fn toggle_page(&self) -> Option<&P> {
        self.toggle.as_ref()
    }
    /// What an arm doorbell carries: the toggle the kernel left in the page, or 0.
    fn toggle(&self) -> u32 {
        self.toggle.as_ref().map_or(0, |t| t.read32(0))
    }
}

fn add_once(list: &mut Vec<Arc<QpShared>>, qp: &Arc<QpShared>) {
    if !list.iter().any(|q| Arc::ptr_eq(q, qp)) {
        list.push(qp.clone());
    }
}

/// What one look at an entry gave: a completion, and whether the entry stays (a send entry
/// that covers more WQEs).
struct Step {
    wc: Option<WorkCompletion>,
    again: bool,
}

const CONSUMED: Step = Step {
    wc: None,
    again: false,
};

impl<P: Page> Bnxt<P> {
    pub(super) fn cq_prepare(&self, entries: u32) -> Result<(BnxtCqPrep, u32, Udata)> {
        let Some(depth) = cq_depth(entries, self.resp.max_cqd) else {
            let mut e = Error::msg(
                "bnxt_re create CQ",
                format!("{entries} entries is outside 1..{}", self.resp.max_cqd),
            )
            .with_hint("ask for fewer completions (a smaller -t/--tx-depth or CQ moderation)");
            e.errno = Some(libc::EINVAL);
            return Err(e);
        };
        let pg = self.pg_size() as usize;
        let bytes = (depth as usize * self.resp.cqe_sz as usize).div_ceil(pg) * pg;
        let buf = DmaBuf::alloc(bytes, "bnxt_re completion queue")?;
        let req = abi::cq_req(buf.addr(), self.handle());
        Ok((
            BnxtCqPrep { buf, depth },
            entries,
            Udata {
                req,
                resp_len: abi::CQ_RESP_V2_LEN,
            },
        ))
    }

    pub(super) fn cq_finish(
        &self,
        prep: BnxtCqPrep,
        _core: &CqCreated,
        drv_resp: &[u8],
    ) -> Result<BnxtCq<P>> {
        let r = abi::CqResp::parse(drv_resp)?;
        let toggle = if r.toggle_page {
            // The kernel offers the page only where the chip needs it in arm doorbells.
            let (off, len) = P::toggle_mem(&self.fd, r.cqid)?;
            Some(P::map_read_only(&self.fd, off, len, "CQ toggle page")?)
        } else {
            None
        };
        Ok(BnxtCq {
            buf: prep.buf,
            depth: prep.depth,
            head: 0,
            phase: r.phase,
            cqid: r.cqid,
            epoch: false,
            toggle,
            first_arm: true,
            deferred_arm: None,
            sq_flush: Vec::new(),
            rq_flush: Vec::new(),
        })
    }

    /// Arm: the first arm rings at once, every arm is rung (again) after the next poll.
    pub(super) fn cq_arm(&self, cq: &mut BnxtCq<P>, solicited_only: bool) {
        let t = if solicited_only {
            dbtype::CQ_ARMSE
        } else {
            dbtype::CQ_ARMALL
        };
        if cq.first_arm {
            self.ring(self.db(cq.head, cq.epoch, cq.toggle(), cq.cqid, t));
            cq.first_arm = false;
        }
        cq.deferred_arm = Some(t);
    }

    pub(super) fn cq_poll(&self, cq: &mut BnxtCq<P>, out: &mut [WorkCompletion]) -> usize {
        let mut n = 0;
        let mut consumed = 0;
        // Each look either consumes the entry or retires one send WQE, and a send entry is
        // looked at at most `nswr` times, so the loop ends even on hostile entries.
        while n < out.len() {
            let off = cq.head as usize * CQE_SIZE;
            // The word with the phase bit first; the rest of the entry only after it is seen
            // valid (the device writes the entry before flipping the bit).
            let w0 = cq.buf.read_be32_volatile(off + BCQE_OFF).swap_bytes();
            if cqe::phase_of(w0) != cq.phase {
                break;
            }
            fence(Ordering::Acquire);
            let mut raw = [0u8; CQE_SIZE];
            cq.buf.read(off, &mut raw);
            let c = cqe::decode(&raw);
            let step = self.cqe_step(cq, &c);
            if !step.again {
                consumed += 1;
                if let Some(o) = cqe::qp_handle_off(c.kind) {
                    // Mark the entry read, as libbnxt_re does (a destroy's clean-up looks at it).
                    cq.buf.write(off + o, &[0; 8]);
                }
                cq.head = (cq.head + 1) % cq.depth;
                if cq.head == 0 {
                    cq.phase ^= 1;
                    cq.epoch = !cq.epoch;
                }
            }
            if let Some(wc) = step.wc {
                out[n] = wc;
                n += 1;
            }
        }
        if consumed > 0 {
            self.ring(self.db(cq.head, cq.epoch, 0, cq.cqid, dbtype::CQ));
        }
        if let Some(t) = cq.deferred_arm.take() {
            self.ring(self.db(cq.head, cq.epoch, cq.toggle(), cq.cqid, t));
        }
        if n < out.len() {
            n += flush(cq, &mut out[n..]);
        }
        n
    }

    fn cqe_step(&self, cq: &mut BnxtCq<P>, c: &Cqe) -> Step {
        let Some(qp) = self.registry.get(c.qp_handle) else {
            // No QP: stale (its QP was destroyed), or a kind that names none.
            return CONSUMED;
        };
        match c.kind {
            CqeKind::Send => send_step(cq, &qp, c),
            CqeKind::RecvRc | CqeKind::RecvUd => recv_step(cq, &qp, c),
            CqeKind::Term => {
                qp.set_error();
                add_once(&mut cq.rq_flush, &qp);
                add_once(&mut cq.sq_flush, &qp);
                CONSUMED
            }
            _ => CONSUMED,
        }
    }
}

fn base_wc(qp: &QpShared, wr_id: u64, status: WcStatus, opcode: WcOpcode) -> WorkCompletion {
    WorkCompletion {
        wr_id,
        status,
        opcode,
        qp_num: qp.qpid,
        ..Default::default()
    }
}

fn send_step<P: Page>(cq: &mut BnxtCq<P>, qp: &Arc<QpShared>, c: &Cqe) -> Step {
    // No check that anything is outstanding, as libbnxt_re: an entry for an empty queue retires
    // the oldest software entry again (indices stay in range; the poll loop stays bounded).
    let mut sq = qp.sq.lock().unwrap_or_else(|e| e.into_inner());
    let e = sq.retire();
    if c.status != REQ_ST_OK {
        drop(sq);
        qp.set_error();
        add_once(&mut cq.sq_flush, qp);
        return Step {
            wc: Some(base_wc(qp, e.wrid, req_status(c.status), e.opcode)),
            again: false,
        };
    }
    let wc = e.sig.then(|| {
        let mut wc = base_wc(qp, e.wrid, WcStatus::Success, e.opcode);
        if matches!(
            e.opcode,
            WcOpcode::RdmaRead | WcOpcode::CompSwap | WcOpcode::FetchAdd
        ) {
            wc.byte_len = e.bytes;
        }
        wc
    });
    // Look at the entry again until the oldest outstanding WQE is the one after it: at most
    // `nswr` looks, since the index is masked to the ring.
    let cindx = c.con_indx & (qp.nswr - 1);
    Step {
        wc,
        again: sq.last() != cindx,
    }
}

fn recv_step<P: Page>(cq: &mut BnxtCq<P>, qp: &Arc<QpShared>, c: &Cqe) -> Step {
    let srq = qp.srq.read().unwrap_or_else(|e| e.into_inner()).clone();
    let wr_id = match &srq {
        Some(s) => {
            let mut r = s.ring.lock().unwrap_or_else(|e| e.into_inner());
            let Some(id) = r.take(c.rwrid) else {
                return CONSUMED;
            };
            if c.status == RSP_ST_HW_FLUSH {
                return CONSUMED;
            }
            r.consumed();
            id
        }
        None => {
            let Some(rq) = &qp.rq else { return CONSUMED };
            let mut r = rq.lock().unwrap_or_else(|e| e.into_inner());
            if c.status == RSP_ST_HW_FLUSH {
                // The hardware's own flush: software flushes the queue instead.
                return CONSUMED;
            }
            r.retire().wrid
        }
    };
    let ud = qp.qp_type == QpType::Ud;
    if c.status != RSP_ST_OK {
        if srq.is_none() {
            add_once(&mut cq.rq_flush, qp);
        }
        return Step {
            wc: Some(base_wc(qp, wr_id, rsp_status(c.status), WcOpcode::Recv)),
            again: false,
        };
    }
    let mut wc = base_wc(qp, wr_id, WcStatus::Success, WcOpcode::Recv);
    wc.byte_len = c.length;
    if c.flags & RC_FLAGS_IMM != 0 {
        wc.wc_flags |= wc_flags::WITH_IMM;
        // The device reports the immediate little-endian; verbs hand it in network order.
        wc.imm_data = c.imm.to_be();
        if c.flags & RC_FLAGS_RDMA != 0 {
            wc.opcode = WcOpcode::RecvRdmaWithImm;
        }
    }
    if ud {
        wc.src_qp = c.src_qp;
        wc.wc_flags |= wc_flags::GRH;
    }
    Step {
        wc: Some(wc),
        again: false,
    }
}

/// Flush completions for the outstanding WQEs of the QPs on this CQ's lists.
fn flush<P: Page>(cq: &mut BnxtCq<P>, out: &mut [WorkCompletion]) -> usize {
    let mut n = 0;
    for (list, send) in [(&cq.sq_flush, true), (&cq.rq_flush, false)] {
        for qp in list.iter().filter(|q| q.alive.load(Ordering::Acquire)) {
            let ring = if send { Some(&qp.sq) } else { qp.rq.as_ref() };
            let Some(ring) = ring else { continue };
            let mut r = ring.lock().unwrap_or_else(|e| e.into_inner());
            while n < out.len() && !r.is_empty() {
                let e = r.retire();
                out[n] = base_wc(qp, e.wrid, WcStatus::WrFlushErr, e.opcode);
                n += 1;
            }
            if n == out.len() {
                return n;
            }
        }
    }
    n
}
