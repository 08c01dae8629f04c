//! The per-context registry CQ polling resolves CQEs through: user index (or QPN) → the QP's
//! [`QpShared`] bookkeeping, and the SRQs (libmlx5's `uidx_table` and SRQ table).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use uverbs::error::{Error, Result};

use super::mem::DmaBuf;
use super::srq_ring::SrqShared;

/// Largest user index (24 bits).
pub(super) const MAX_UIDX: usize = 0xff_ffff;

/// Send/receive bookkeeping a CQ needs to turn a CQE into a `wr_id`. Written by the posting
/// thread, read by the polling thread; single-word atomics, no locks.
pub struct QpShared {
    pub qpn: u32,
    /// A DCT's number, known only from its RTR modify (its `qpn` is the creation-time 0); 0
    /// until then and for every other QP. CQE version 0 names the DCT's receives by it.
    pub(super) dctn: AtomicU32,
    pub uidx: u32,
    pub(super) sq_mask: u32,
    pub(super) sq_wrid: Box<[AtomicU64]>,
    /// `wqe_head[idx]`: the SQ head count when the WQE at idx was posted; a CQE for it retires
    /// every WQE up to and including it (unsignaled ones complete silently).
    pub(super) sq_wqe_head: Box<[AtomicU32]>,
    pub(super) sq_tail: AtomicU32,
    pub(super) rq_mask: u32,
    pub(super) rq_wrid: Box<[AtomicU64]>,
    pub(super) rq_tail: AtomicU32,
    pub(super) rq_shift: u32,
    pub(super) rq_offset: usize,
    pub(super) buf: Arc<DmaBuf>,
    pub(super) uses_srq: bool,
    pub(super) srq: RwLock<Option<Arc<SrqShared>>>,
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
    pub(super) srqs: RwLock<Vec<Arc<SrqShared>>>,
}

impl Registry {
    pub(super) fn reserve(&self) -> Result<u32> {
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
    pub(super) fn fill(&self, uidx: u32, qp: Arc<QpShared>) {
        let mut v = self.qps.write().unwrap_or_else(|e| e.into_inner());
        v[uidx as usize] = Slot::Qp(qp);
    }
    pub(super) fn release(&self, uidx: u32) {
        let mut v = self.qps.write().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = v.get_mut(uidx as usize) {
            *s = Slot::Free;
        }
    }
    pub(super) fn by_uidx(&self, uidx: u32) -> Option<Arc<QpShared>> {
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
    pub(super) fn by_qpn(&self, qpn: u32) -> Option<Arc<QpShared>> {
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
    pub(super) fn xsrq_by_uidx(&self, uidx: u32) -> Option<Arc<SrqShared>> {
        match self.qps.read().unwrap_or_else(|e| e.into_inner()).get(uidx as usize) {
            Some(Slot::Xsrq(s)) => Some(s.clone()),
            _ => None,
        }
    }
    pub(super) fn fill_xsrq(&self, uidx: u32, srq: Arc<SrqShared>) {
        let mut v = self.qps.write().unwrap_or_else(|e| e.into_inner());
        v[uidx as usize] = Slot::Xsrq(srq);
    }
    pub(super) fn srq_by_srqn(&self, srqn: u32) -> Option<Arc<SrqShared>> {
        self.srqs
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|s| s.srqn == srqn)
            .cloned()
    }
    pub(super) fn only_srq(&self) -> Option<Arc<SrqShared>> {
        let v = self.srqs.read().unwrap_or_else(|e| e.into_inner());
        if v.len() == 1 {
            Some(v[0].clone())
        } else {
            None
        }
    }
}

pub(super) struct UidxReservation {
    pub(super) reg: Arc<Registry>,
    pub(super) uidx: u32,
    pub(super) armed: bool,
}

impl UidxReservation {
    /// A free user index of `reg`, given back when this drops unless the object it was taken
    /// for disarms it.
    pub(super) fn take(reg: &Arc<Registry>) -> Result<Self> {
        let uidx = reg.reserve()?;
        Ok(UidxReservation { reg: reg.clone(), uidx, armed: true })
    }
}

impl Drop for UidxReservation {
    fn drop(&mut self) {
        if self.armed {
            self.reg.release(self.uidx);
        }
    }
}

// ---- context ----------------------------------------------------------------------------------
