//! Completion queues: creation, `poll_cq` (CQE ownership, decode through [`cqe::parse_into`],
//! completion through the QP registry), arming and the CQ doorbell.

use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;

use uverbs::error::{Error, Result};
use uverbs::provider::{CqCreated, Udata};
use uverbs::wr::{WcStatus, WorkCompletion};

use super::cqe::{self, Queue};
use super::mem::{queue_mem_accessors, DmaBuf};
use super::registry::QpShared;
use super::scatter::scatter_into;
use super::srq_ring::SrqShared;
use super::uar::{self, UarWriter};
use super::{abi, Mlx5};

/// CQ doorbell-record word indices (each a big-endian u32).
const CQ_SET_CI: usize = 0;
const CQ_ARM_DB: usize = 4;

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
    pub(super) arm_sn: u32,
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
    queue_mem_accessors!();
}

impl<U: UarWriter> Mlx5<U> {
    pub(super) fn cq_prepare(&self, entries: u32) -> Result<(Mlx5CqPrep, u32, Udata)> {
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

    pub(super) fn cq_finish(&self, prep: Mlx5CqPrep, _core: &CqCreated, drv_resp: &[u8]) -> Result<Mlx5Cq> {
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

    // Forced inline, as is `Provider::poll_cq` over it, into the loop that polls: out of
    // line, a poll that takes one CQE pays a call frame, spills and a `Result` through memory,
    // and cannot fold on the caller's array length. Host hot-path loop: lat 472 -> 422 Ir/op from
    // this alone, 393 -> 341 on top of the inlined post
    // (docs/benchmarks-data/2026-12-06-hotpath-inline.md).
    #[inline(always)]
    pub(super) fn cq_poll(&self, cq: &mut Mlx5Cq, out: &mut [WorkCompletion]) -> Result<usize> {
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

    pub(super) fn cq_arm(&self, cq: &mut Mlx5Cq, solicited_only: bool) -> Result<()> {
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
}

/// The poll error for a CQE `cqe::parse_into` refused (out of line: the hot loop only branches).
#[cold]
#[inline(never)]
fn cqe_error(e: cqe::CqeError) -> Error {
    Error::msg("mlx5 poll_cq", e.to_string())
}

