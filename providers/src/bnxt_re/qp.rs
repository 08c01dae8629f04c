//! QPs: creation (the SQ with its PSN search area, the RQ), and the post paths.
//!
//! The SQ and RQ are rings of 16-byte slots in memory we allocate and the kernel pins. A post
//! reads the slots its WQE will fill, lets [`super::wqe`] change the fields libbnxt_re writes,
//! copies them back and advances the tail; one doorbell per `post_send` call (per WQE for
//! receives, as libbnxt_re). The software entries (WR id, bytes, slots, signalled) live in
//! [`QpShared`], under a lock each post and each poll takes, as libbnxt_re's queue lock.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use uverbs::error::{Error, Result};
use uverbs::provider::{PostError, QpCreated, QpInitAttr, QpModified, QpState, QpType, Udata};
use uverbs::wr::{RecvWr, SendWr, WcOpcode};

use super::db::Page;
use super::geometry::{RqGeom, SqGeom};
use super::hw::*;
use super::registry::Registry;
use super::shared::{QpShared, Ring, SwEntry};
use super::srq::BnxtSrq;
use super::wqe::{self, SendShape};
use super::{abi, post_err, Bnxt};
use crate::mlx5::mem::DmaBuf;

/// Largest WQE the scratch copy holds: the header and 32 SGEs.
const MAX_WQE_SLOTS: usize = 34;

pub struct BnxtQpPrep {
    handle: u64,
    sq_buf: DmaBuf,
    rq_buf: Option<DmaBuf>,
    sq: SqGeom,
    rq: Option<RqGeom>,
}

pub struct BnxtQp {
    pub shared: Arc<QpShared>,
    handle: u64,
    registry: Arc<Registry>,
    sq_buf: DmaBuf,
    rq_buf: Option<DmaBuf>,
    pub sq: SqGeom,
    pub rq: Option<RqGeom>,
    variable: bool,
    gen_p5: bool,
    shape: SendShape,
    max_ssge: u32,
    max_rsge: u32,
    sq_psn: u32,
    /// Path MTU in bytes (0 until a modify sets it).
    mtu: u32,
    /// The kernel's handle of the QP (what a MODIFY_QP names).
    kernel_handle: u32,
    /// UD send WQEs posted since the last RTS→RTS of the hardware-stall workaround (libbnxt_re's
    /// `wqe_cnt`). Public so that tests can start near [`UD_QP_HW_STALL`] rather than post 4M.
    pub ud_wqes: u32,
}

impl BnxtQp {
    /// The SQ buffer (ring and PSN area) as the device sees it.
    pub fn sq_buf(&self) -> &DmaBuf {
        &self.sq_buf
    }
    pub fn rq_buf(&self) -> Option<&DmaBuf> {
        self.rq_buf.as_ref()
    }
    pub fn handle(&self) -> u64 {
        self.handle
    }
    pub(super) fn attach_srq(&mut self, srq: &BnxtSrq) {
        *self.shared.srq.write().unwrap_or_else(|e| e.into_inner()) = Some(srq.shared.clone());
    }
    pub(super) fn modified(&mut self, m: &QpModified) {
        if let Some(psn) = m.sq_psn {
            self.sq_psn = psn;
        }
        if let Some(mtu) = m.path_mtu {
            self.mtu = 0x80u32.checked_shl(mtu as u32).unwrap_or(0);
        }
    }
    /// A modify to RESET empties the rings (libbnxt_re zeroes their indices).
    pub(super) fn state_changed(&mut self, state: QpState) {
        self.shared.state.store(state as u8, Ordering::Release);
        if state == QpState::Reset {
            self.shared
                .sq
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .reset();
            if let Some(rq) = &self.shared.rq {
                rq.lock().unwrap_or_else(|e| e.into_inner()).reset();
            }
        }
    }
}

impl Drop for BnxtQp {
    fn drop(&mut self) {
        self.shared.alive.store(false, Ordering::Release);
        self.registry.remove(self.handle);
    }
}

/// Copy `scratch.len()` bytes of ring slots from (`write`: into) the ring of `depth` slots in
/// `buf`, starting at slot `at` and wrapping at the end.
fn ring_copy(buf: &DmaBuf, depth: u32, at: u32, scratch: &mut [u8], write: bool) {
    let ring_bytes = depth as usize * SLOT;
    let off = at as usize * SLOT;
    let first = scratch.len().min(ring_bytes - off);
    let (a, b) = scratch.split_at_mut(first);
    if write {
        buf.write(off, a);
        buf.write(0, b);
    } else {
        buf.read(off, a);
        buf.read(0, b);
    }
}

/// Write PSN entry `p` of software entry `idx` (with the WQE's first slot on gen P5 chips).
fn write_psns(buf: &DmaBuf, g: &SqGeom, idx: u32, p: wqe::Psns, ext_slot: Option<u16>) {
    let off = g.psns_off(idx);
    let mut w = [0u8; PSNS_EXT_SIZE];
    let w = &mut w[..g.psns_size as usize];
    buf.read(off, w);
    wqe::encode_psns(w, p, ext_slot);
    buf.write(off, w);
}

fn enotsup(what: &str, detail: String) -> Error {
    let mut e = Error::msg(format!("bnxt_re {what}"), detail);
    e.errno = Some(libc::EOPNOTSUPP);
    e
}

impl<P: Page> Bnxt<P> {
    pub(super) fn qp_prepare(&self, attr: &QpInitAttr) -> Result<(BnxtQpPrep, Udata)> {
        if !matches!(attr.qp_type, QpType::Rc | QpType::Uc | QpType::Ud) {
            return Err(enotsup(
                "create QP",
                format!("{} QPs are not supported by bnxt_re", attr.qp_type.name()),
            ));
        }
        if self.resp.msn_table() {
            return Err(enotsup(
                "create QP",
                "this device keeps an MSN table where the provider writes PSN search entries \
                 (Thor 2 with hardware retransmission); rperftest does not write that format yet"
                    .into(),
            ));
        }
        let c = attr.caps;
        if c.max_inline_data > MAX_INLINE {
            let mut e = Error::msg(
                "bnxt_re create QP",
                format!(
                    "inline size {} is above the device's {MAX_INLINE}",
                    c.max_inline_data
                ),
            )
            .with_hint(format!("ask for at most {MAX_INLINE} inline bytes"));
            e.errno = Some(libc::EINVAL);
            return Err(e);
        }
        let (variable, p5, pg) = (self.resp.variable_wqe(), self.resp.gen_p5(), self.pg_size());
        let sq = SqGeom::new(
            c.max_send_wr,
            c.max_send_sge,
            c.max_inline_data,
            variable,
            p5,
            pg,
        );
        let sq_buf = DmaBuf::alloc(sq.bytes, "bnxt_re send queue")?;
        let (rq, rq_buf) = if attr.uses_srq {
            (None, None)
        } else {
            let g = RqGeom::new(c.max_recv_wr, c.max_recv_sge, variable, pg);
            (
                Some(g),
                Some(DmaBuf::alloc(g.bytes, "bnxt_re receive queue")?),
            )
        };
        let handle = self.handle();
        let req = abi::qp_req(
            sq_buf.addr(),
            rq_buf.as_ref().map_or(0, |b| b.addr()),
            handle,
        );
        Ok((
            BnxtQpPrep {
                handle,
                sq_buf,
                rq_buf,
                sq,
                rq,
            },
            Udata {
                req,
                resp_len: abi::QP_RESP_LEN,
            },
        ))
    }

    pub(super) fn qp_finish(
        &self,
        prep: BnxtQpPrep,
        attr: &QpInitAttr,
        core: &QpCreated,
        drv_resp: &[u8],
    ) -> Result<BnxtQp> {
        let qpid = abi::parse_qp_resp(drv_resp)?;
        let (sq, rq) = (prep.sq, prep.rq);
        let shared = Arc::new(QpShared {
            qpid,
            qp_type: attr.qp_type,
            nswr: sq.nswr,
            sq: Mutex::new(Ring::new(sq.depth, sq.diff, sq.nswr)),
            rq: rq.map(|g| Mutex::new(Ring::new(g.depth, 0, g.nrwr))),
            srq: RwLock::new(None),
            state: AtomicU8::new(QpState::Reset as u8),
            alive: AtomicBool::new(true),
        });
        self.registry.insert(prep.handle, shared.clone());
        Ok(BnxtQp {
            shared,
            handle: prep.handle,
            registry: self.registry.clone(),
            sq_buf: prep.sq_buf,
            rq_buf: prep.rq_buf,
            sq,
            rq,
            variable: self.resp.variable_wqe(),
            gen_p5: self.resp.gen_p5(),
            shape: SendShape {
                qp_type: attr.qp_type,
                sq_sig_all: attr.sq_sig_all,
                max_inline: core.caps.max_inline_data,
            },
            max_ssge: core.caps.max_send_sge,
            max_rsge: core.caps.max_recv_sge,
            sq_psn: 0,
            mtu: 0,
            kernel_handle: core.handle,
            ud_wqes: 0,
        })
    }

    /// # Safety
    /// As [`uverbs::provider::Provider::post_send`]: inline SGEs are read from user memory.
    pub(super) unsafe fn qp_post_send(
        &self,
        qp: &mut BnxtQp,
        wrs: &[SendWr<'_>],
    ) -> Result<(), PostError> {
        let mut posted = false;
        let mut res = Ok(());
        for (i, wr) in wrs.iter().enumerate() {
            // SAFETY: the caller's contract covers every SGE of every request.
            if let Err(e) = unsafe { self.post_one_send(qp, i, wr) } {
                res = Err(e);
                break;
            }
            posted = true;
            // Only chips before Thor stall (libbnxt_re 48 on skips the gen P5 and P7 ones).
            if qp.shape.qp_type == QpType::Ud && !qp.gen_p5 {
                self.ud_stall_workaround(qp);
            }
        }
        if posted {
            let (tail, epoch) = {
                let sq = qp.shared.sq.lock().unwrap_or_else(|e| e.into_inner());
                (sq.tail, sq.epoch)
            };
            let indx = tail / qp.sq.max_slots;
            self.ring(self.db(indx, epoch, 0, qp.shared.qpid, dbtype::SQ));
        }
        res
    }

    /// libbnxt_re's UD hardware-stall workaround: every [`UD_QP_HW_STALL`] send WQEs, a
    /// MODIFY_QP from RTS to RTS, in the middle of the post as libbnxt_re does it (after the WQE
    /// that reached the count, before the doorbell). Its failure is not the post's: the WQEs are
    /// in the ring and will be rung, so, as libbnxt_re, the count starts again either way.
    fn ud_stall_workaround(&self, qp: &mut BnxtQp) {
        qp.ud_wqes = qp.ud_wqes.wrapping_add(1);
        if qp.ud_wqes != UD_QP_HW_STALL {
            return;
        }
        qp.ud_wqes = 0;
        if let Some(d) = self.dpi.get() {
            if d.rts_again(&self.fd, qp.kernel_handle).is_ok() {
                qp.shared.state.store(QpState::Rts as u8, Ordering::Release);
            }
        }
    }

    /// # Safety
    /// As [`Bnxt::qp_post_send`] for this one request.
    unsafe fn post_one_send(
        &self,
        qp: &mut BnxtQp,
        i: usize,
        wr: &SendWr<'_>,
    ) -> Result<(), PostError> {
        let st = qp.shared.state.load(Ordering::Acquire);
        if st != QpState::Rts as u8 && st != QpState::Sqd as u8 {
            return Err(post_err(
                i,
                libc::EINVAL,
                "post send",
                "the QP is not in RTS or SQD".into(),
            ));
        }
        let ws = wqe::send_slots(wr, &qp.shape)
            .map_err(|e| post_err(i, libc::EINVAL, "post send", e.to_string()))?;
        let slots = if qp.variable { ws } else { STATIC_SLOTS };
        let mut sq = qp.shared.sq.lock().unwrap_or_else(|e| e.into_inner());
        if sq.is_full(slots) || wr.sgl.len() > qp.max_ssge as usize || ws as usize > MAX_WQE_SLOTS {
            return Err(post_err(
                i,
                libc::ENOMEM,
                "post send",
                "the send queue is full or the request has too many SGEs".into(),
            ));
        }
        let mut payload = [0u8; MAX_INLINE as usize];
        let inline = wqe::is_inline(wr).then(|| {
            let mut n = 0;
            for s in wr.sgl {
                // SAFETY: the caller guarantees each SGE is readable for its length; the total
                // fits `payload` (send_slots checked it against the QP's inline size <= 96).
                let src = unsafe {
                    std::slice::from_raw_parts(s.addr as usize as *const u8, s.length as usize)
                };
                payload[n..n + src.len()].copy_from_slice(src);
                n += src.len();
            }
            &payload[..n]
        });
        let avid = wr.ud.map_or(0, |u| u.ah);
        let mut scratch = [0u8; MAX_WQE_SLOTS * SLOT];
        let w = &mut scratch[..ws as usize * SLOT];
        ring_copy(&qp.sq_buf, qp.sq.depth, sq.tail, w, false);
        let bytes = wqe::encode_send(w, wr, &qp.shape, ws, inline, avid);
        ring_copy(&qp.sq_buf, qp.sq.depth, sq.tail, w, true);
        // The PSN search entry of this software entry (the device reads it to retransmit).
        let p = wqe::psns(
            wr.opcode,
            qp.shape.qp_type == QpType::Rc,
            &mut qp.sq_psn,
            bytes,
            qp.mtu,
        );
        write_psns(
            &qp.sq_buf,
            &qp.sq,
            sq.start,
            p,
            qp.gen_p5.then_some(sq.tail as u16),
        );
        let sig = wr.flags.contains(uverbs::wr::SendFlags::SIGNALED) || qp.shape.sq_sig_all;
        sq.push(SwEntry {
            wrid: wr.wr_id,
            bytes,
            slots,
            sig,
            opcode: WcOpcode::for_send(wr.opcode),
        });
        Ok(())
    }

    pub(super) fn qp_post_recv(
        &self,
        qp: &mut BnxtQp,
        wrs: &[RecvWr<'_>],
    ) -> Result<(), PostError> {
        let (Some(rqg), Some(buf), Some(rq)) = (qp.rq, qp.rq_buf.as_ref(), qp.shared.rq.as_ref())
        else {
            return Err(post_err(
                0,
                libc::EINVAL,
                "post receive",
                "the QP receives from an SRQ; post to the SRQ".into(),
            ));
        };
        for (i, wr) in wrs.iter().enumerate() {
            let st = qp.shared.state.load(Ordering::Acquire);
            if st == QpState::Reset as u8 || st == QpState::Err as u8 {
                return Err(post_err(
                    i,
                    libc::EINVAL,
                    "post receive",
                    "the QP is in RESET or ERR".into(),
                ));
            }
            let mut r = rq.lock().unwrap_or_else(|e| e.into_inner());
            let n = 2 + wr.sgl.len();
            if r.is_full(rqg.max_slots)
                || wr.sgl.len() > qp.max_rsge as usize
                || n > MAX_WQE_SLOTS
                || n as u32 > rqg.max_slots
            {
                return Err(post_err(
                    i,
                    libc::ENOMEM,
                    "post receive",
                    "the receive queue is full or the request has too many SGEs".into(),
                ));
            }
            let mut scratch = [0u8; MAX_WQE_SLOTS * SLOT];
            let w = &mut scratch[..n * SLOT];
            ring_copy(buf, rqg.depth, r.tail, w, false);
            let bytes = wqe::encode_recv(w, wr.sgl, r.start);
            ring_copy(buf, rqg.depth, r.tail, w, true);
            r.push(SwEntry {
                wrid: wr.wr_id,
                bytes,
                slots: rqg.max_slots,
                sig: false,
                opcode: WcOpcode::Recv,
            });
            let (tail, epoch) = (r.tail, r.epoch);
            drop(r);
            let indx = tail / rqg.max_slots;
            self.ring(self.db(indx, epoch, 0, qp.shared.qpid, dbtype::RQ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use uverbs::provider::{DeviceDesc, Provider, QpCaps};
    use uverbs::wr::{SendFlags, Sge, UdDest, WrOpcode};

    use super::*;
    use crate::bnxt_re::db::RecordingPage;

    fn ud_qp(ctx: &Bnxt<RecordingPage>) -> BnxtQp {
        let caps = QpCaps {
            max_send_wr: 8,
            max_recv_wr: 1,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        };
        let attr = QpInitAttr {
            qp_type: QpType::Ud,
            caps,
            sq_sig_all: false,
            uses_srq: false,
        };
        let (prep, _) = ctx.prepare_qp(&attr).unwrap();
        let core = QpCreated {
            handle: 0x77,
            qpn: 0x21,
            caps,
        };
        let mut qp = ctx.finish_qp(prep, &attr, &core, &[0x21, 0, 0, 0]).unwrap();
        ctx.qp_state_changed(&mut qp, QpState::Rts);
        qp
    }

    /// A context on chip `chip` with `cmask` in GET_CONTEXT's comp_mask, and its PD.
    fn context(chip: u32, cmask: u64) -> Bnxt<RecordingPage> {
        let fd: uverbs::provider::SharedFd =
            Arc::new(std::fs::File::open("/dev/null").unwrap().into());
        let dev = DeviceDesc {
            ibdev: "bnxt_re0".into(),
            uverbs: "uverbs0".into(),
            driver_id: 6,
            driver_abi: 1,
        };
        let mut u = vec![0u8; abi::UCTX_RESP_LEN];
        u[abi::uctx::PG_SIZE..][..4].copy_from_slice(&4096u32.to_le_bytes());
        u[abi::uctx::CQE_SZ] = 32;
        u[abi::uctx::MAX_CQD] = 0xff;
        u[abi::uctx::COMP_MASK..][..8].copy_from_slice(&cmask.to_le_bytes());
        u[abi::uctx::CHIP_ID0..][..4].copy_from_slice(&chip.to_le_bytes());
        let ctx = Bnxt::<RecordingPage>::new_context(fd, &dev, &u, &()).unwrap();
        ctx.pd_number(&[1, 0, 0, 0, 5, 0, 0, 0, 0, 0x50, 0, 0, 0, 0, 0, 0])
            .unwrap();
        ctx
    }

    #[test]
    fn an_msn_table_device_is_refused_with_one_line() {
        let ctx = context(0x1760, abi::CMASK_HAVE_CCTX | abi::CMASK_MSN_TABLE_ENABLED);
        let attr = QpInitAttr {
            qp_type: QpType::Rc,
            caps: QpCaps::default(),
            sq_sig_all: false,
            uses_srq: false,
        };
        let e = ctx.prepare_qp(&attr).err().expect("refused");
        assert_eq!(e.errno, Some(libc::EOPNOTSUPP));
        assert!(e.to_string().contains("MSN table"), "{e}");
    }

    #[test]
    fn thor_and_later_skip_the_ud_stall_workaround() {
        for chip in [0x1750, 0x1760] {
            let ctx = context(chip, abi::CMASK_HAVE_CCTX);
            let mut qp = ud_qp(&ctx);
            qp.ud_wqes = UD_QP_HW_STALL - 1;
            let sg = [Sge {
                addr: 0x1000,
                length: 8,
                lkey: 1,
            }];
            let mut wr = SendWr::new(1, WrOpcode::Send, &sg);
            wr.ud = Some(UdDest {
                ah: 1,
                remote_qpn: 2,
                remote_qkey: 3,
            });
            // SAFETY: no inline data: the SGE is only written into the WQE, never read.
            unsafe { ctx.qp_post_send(&mut qp, &[wr]) }.unwrap();
            let dbs = ctx.doorbell_page().unwrap();
            assert!(dbs.take_modifies().is_empty(), "chip {chip:#x}");
        }
    }

    #[test]
    fn ud_qps_go_rts_to_rts_every_4m_send_wqes() {
        // A BCM57414 (before Thor): libbnxt_re 48 on keeps the workaround for these only.
        let ctx = context(0x16d7, abi::CMASK_HAVE_CCTX);
        let mut qp = ud_qp(&ctx);
        qp.ud_wqes = UD_QP_HW_STALL - 2;
        let sg = [Sge {
            addr: 0x1000,
            length: 8,
            lkey: 1,
        }];
        let mut wr = SendWr::new(1, WrOpcode::Send, &sg);
        wr.flags = SendFlags::SIGNALED;
        wr.ud = Some(UdDest {
            ah: 1,
            remote_qpn: 2,
            remote_qkey: 3,
        });
        let dbs = ctx.doorbell_page().unwrap();
        // SAFETY: no inline data: the SGE is only written into the WQE, never read.
        unsafe { ctx.qp_post_send(&mut qp, &[wr, wr, wr]) }.unwrap();
        // The second request reaches the count: the modify, then the one doorbell of the post.
        assert_eq!(dbs.take_modifies(), [(0x77, 0)]);
        assert_eq!(dbs.take().len(), 1);
        assert_eq!(qp.ud_wqes, 1, "counting again from the third");
        // SAFETY: as above.
        unsafe { ctx.qp_post_send(&mut qp, &[wr]) }.unwrap();
        assert!(dbs.take_modifies().is_empty());
        assert_eq!(qp.ud_wqes, 2);
    }
}
