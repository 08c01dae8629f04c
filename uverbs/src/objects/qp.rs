//! Queue pairs: creation (RC/UC/UD, XRC, DC), state transitions, multicast, posting.

use std::mem::ManuallyDrop;
use std::os::fd::AsRawFd;
use std::sync::Arc;

use super::context::Context;
use super::cq::{Cq, CqInner};
use super::flags::{AccessFlags, QpAttrMask};
use super::pd::{CryptoMkey, Dek, Pd, Xrcd};
use super::qp_attr::{caps_of, init_attr, modify_request, query_attr, rtr_attr, rts_attr, QpAttr, RtrParams, RtsParams, DEFAULT_QKEY};
use super::srq::{Srq, SrqInner};
use super::{next_user_handle, report_drop};
use crate::cmd::{self, CreateQpArgs, Transport};
use crate::error::{Error, Result};
use crate::dv::{CryptoAttr, CryptoProvider, DcInit, DcProvider};
use crate::provider::{PostError, Provider, QpCaps, QpCreated, QpInitAttr, QpModified, QpState, QpType, Udata};
use crate::sys;
use crate::wr::{RecvWr, SendWr};

/// A GID as eight colon-separated groups of four hex digits (`ff01:0000:…`), for the multicast
/// error details.
fn gid_text(g: &[u8; 16]) -> String {
    g.chunks(2).map(|c| format!("{:02x}{:02x}", c[0], c[1])).collect::<Vec<_>>().join(":")
}

/// What to create a QP with.
pub struct QpInit<'a, P: Provider> {
    pub qp_type: QpType,
    pub send_cq: &'a Cq<P>,
    pub recv_cq: &'a Cq<P>,
    pub srq: Option<&'a Srq<P>>,
    pub caps: QpCaps,
    pub sq_sig_all: bool,
}

fn init_attr_of<P: Provider>(init: &QpInit<'_, P>) -> QpInitAttr {
    QpInitAttr { qp_type: init.qp_type, caps: init.caps, sq_sig_all: init.sq_sig_all, uses_srq: init.srq.is_some() }
}

/// A queue pair.
pub struct Qp<P: Provider> {
    state: ManuallyDrop<P::Qp>,
    ctx: Arc<Context<P>>,
    handle: u32,
    qpn: u32,
    qp_type: QpType,
    caps: QpCaps,
    qp_state: QpState,
    qkey: u32,
    /// Multicast groups (gid, mlid) attached with [`Qp::attach_mcast`], detached on drop.
    mcast: Vec<([u8; 16], u16)>,
    _pd: Arc<Pd<P>>,
    _send_cq: Arc<CqInner<P>>,
    _recv_cq: Arc<CqInner<P>>,
    _srq: Option<Arc<SrqInner<P>>>,
    _xrcd: Option<Arc<Xrcd<P>>>,
}

impl<P: Provider> Qp<P> {
    pub fn new(pd: &Arc<Pd<P>>, init: &QpInit<'_, P>) -> Result<Self> {
        if init.qp_type == QpType::XrcTgt {
            return Err(crate::error::Error::msg("CREATE_QP", "an XRC target QP is created with Qp::new_xrc_tgt (it needs an XRC domain)"));
        }
        Self::create(pd, init, None, None)
    }

    /// An XRC target QP in `xrcd` (`init.qp_type` must be [`QpType::XrcTgt`]). The kernel gets
    /// the domain instead of the PD and CQs; `init`'s CQs are only kept alive with the QP.
    pub fn new_xrc_tgt(pd: &Arc<Pd<P>>, xrcd: &Arc<Xrcd<P>>, init: &QpInit<'_, P>) -> Result<Self> {
        if init.qp_type != QpType::XrcTgt {
            return Err(crate::error::Error::msg("CREATE_QP", format!("Qp::new_xrc_tgt with QP type {}", init.qp_type.name())));
        }
        Self::create(pd, init, None, Some(xrcd))
    }

    /// The kernel create and the provider's `finish_qp`. `prepared`: what an extension's
    /// `prepare_*` (DC) gave; `None` runs the plain [`Provider::prepare_qp`].
    fn create(pd: &Arc<Pd<P>>, init: &QpInit<'_, P>, prepared: Option<(P::QpPrep, Udata)>, xrcd: Option<&Arc<Xrcd<P>>>) -> Result<Self> {
        let ctx = pd.ctx.clone();
        let attr = init_attr_of(init);
        let (prep, udata) = match prepared {
            Some(p) => p,
            None if init.qp_type.is_dc() => {
                return Err(Error::msg("create QP", format!("{} QPs are created with Qp::new_dc", init.qp_type.name())));
            }
            None => ctx.provider.prepare_qp(&attr)?,
        };
        let args = CreateQpArgs {
            user_handle: next_user_handle(),
            pd: pd.handle,
            send_cq: init.send_cq.handle(),
            recv_cq: init.recv_cq.handle(),
            srq: init.srq.map(|s| s.handle()),
            xrcd: xrcd.map(|x| x.handle),
            qp_type: init.qp_type.uverbs_type(),
            caps: init.caps,
            sq_sig_all: init.sq_sig_all,
            event_fd: (ctx.transport == Transport::Ioctl).then(|| ctx.async_fd.as_raw_fd()),
        };
        let c = ctx.cmd();
        let (r, drv) = cmd::create_qp(&c, &args, &udata)?;
        let caps = caps_of!(r);
        let created = QpCreated { handle: r.qp_handle, qpn: r.qpn, caps };
        let mut state = match ctx.provider.finish_qp(prep, &attr, &created, &drv) {
            Ok(s) => s,
            Err(e) => {
                let _ = cmd::destroy_qp(&c, r.qp_handle);
                return Err(e);
            }
        };
        if let Some(srq) = init.srq {
            ctx.provider.qp_attached_srq(&mut state, srq.provider_state());
        }
        Ok(Qp {
            state: ManuallyDrop::new(state),
            ctx: ctx.clone(),
            handle: r.qp_handle,
            qpn: r.qpn,
            qp_type: init.qp_type,
            caps,
            qp_state: QpState::Reset,
            qkey: DEFAULT_QKEY,
            mcast: Vec::new(),
            _pd: pd.clone(),
            _send_cq: init.send_cq.inner.clone(),
            _recv_cq: init.recv_cq.inner.clone(),
            _srq: init.srq.map(|s| s.inner.clone()),
            _xrcd: xrcd.cloned(),
        })
    }

    pub fn handle(&self) -> u32 {
        self.handle
    }
    pub fn qpn(&self) -> u32 {
        self.qpn
    }
    pub fn qp_type(&self) -> QpType {
        self.qp_type
    }
    /// Capacities as the kernel answered CREATE_QP (see the provider for real ring capacity).
    pub fn caps(&self) -> QpCaps {
        self.caps
    }
    /// The state after the last successful MODIFY_QP.
    pub fn state(&self) -> QpState {
        self.qp_state
    }
    /// The Q_Key [`Qp::to_init`] gives a UD QP (default [`DEFAULT_QKEY`]).
    pub fn set_qkey(&mut self, qkey: u32) {
        self.qkey = qkey;
    }
    pub fn provider_qp(&mut self) -> &mut P::Qp {
        &mut self.state
    }

    /// MODIFY_QP with the masked fields of `attr`; tells the provider about state changes.
    pub fn modify(&mut self, attr: &QpAttr, mask: QpAttrMask) -> Result<()> {
        let req = modify_request(self.handle, attr, mask);
        let detail = |e: Error| {
            let what = format!("{:?} → {:?}", self.qp_state, attr.qp_state);
            if mask.contains(QpAttrMask::STATE) {
                e.with_detail(format!("{} QP {:#x}, {what}, mask {:#x}", self.qp_type.name(), self.qpn, mask.bits()))
            } else {
                e
            }
        };
        let state = mask.contains(QpAttrMask::STATE).then_some(attr.qp_state);
        match self.ctx.provider.modify_qp_udata(&self.state, state) {
            None => cmd::modify_qp(&self.ctx.cmd(), &req).map_err(detail)?,
            Some(udata) => {
                // The driver answers this modify (mlx5: a DCT's number at RTR).
                let ex = sys::ExModifyQp { base: req, ..Default::default() };
                let (_, drv) = cmd::modify_qp_ex(&self.ctx.cmd(), &ex, &udata).map_err(detail)?;
                if let Some(n) = self.ctx.provider.modify_qp_done(&mut self.state, attr.qp_state, &drv)? {
                    self.qpn = n;
                }
            }
        }
        let modified = QpModified {
            sq_psn: mask.contains(QpAttrMask::SQ_PSN).then_some(attr.sq_psn),
            path_mtu: mask.contains(QpAttrMask::PATH_MTU).then_some(attr.path_mtu),
        };
        self.ctx.provider.qp_modified(&mut self.state, &modified);
        if mask.contains(QpAttrMask::STATE) {
            self.qp_state = attr.qp_state;
            self.ctx.provider.qp_state_changed(&mut self.state, attr.qp_state);
        }
        Ok(())
    }

    /// RESET → INIT (RC/UC: access flags; UD: the Q_Key from [`Qp::set_qkey`]).
    pub fn to_init(&mut self, port: u8, pkey_index: u16, access: AccessFlags) -> Result<()> {
        let (a, m) = init_attr(self.qp_type, port, pkey_index, access, self.qkey);
        self.modify(&a, m)
    }

    /// INIT → RTR.
    pub fn to_rtr(&mut self, p: &RtrParams) -> Result<()> {
        let (a, m) = rtr_attr(self.qp_type, p);
        self.modify(&a, m)
    }

    /// RTR → RTS.
    pub fn to_rts(&mut self, p: &RtsParams) -> Result<()> {
        if self.qp_type == QpType::Dct {
            return Err(Error::msg("modify QP to RTS", "a DCT only receives: it stays in RTR"));
        }
        let (a, m) = rts_attr(self.qp_type, p);
        self.modify(&a, m)
    }

    /// QUERY_QP: the kernel's view of the QP (the fields `mask` asks for; see [`query_attr`]).
    pub fn query(&self, mask: QpAttrMask) -> Result<(QpAttr, QpCaps)> {
        let r = cmd::query_qp(&self.ctx.cmd(), self.handle, mask.bits())?;
        Ok(query_attr(&r))
    }

    /// ATTACH_MCAST: this (UD) QP receives sends to the multicast group `gid` (`mlid`: the
    /// group's LID on InfiniBand, 0 on RoCE). Detached again on drop.
    pub fn attach_mcast(&mut self, gid: [u8; 16], mlid: u16) -> Result<()> {
        cmd::attach_mcast(&self.ctx.cmd(), self.handle, gid, mlid)
            .map_err(|e| e.with_detail(format!("{} QP {:#x}, group {}", self.qp_type.name(), self.qpn, gid_text(&gid))))?;
        self.mcast.push((gid, mlid));
        Ok(())
    }

    /// DETACH_MCAST of a group attached with [`Qp::attach_mcast`].
    pub fn detach_mcast(&mut self, gid: [u8; 16], mlid: u16) -> Result<()> {
        cmd::detach_mcast(&self.ctx.cmd(), self.handle, gid, mlid)
            .map_err(|e| e.with_detail(format!("{} QP {:#x}, group {}", self.qp_type.name(), self.qpn, gid_text(&gid))))?;
        self.mcast.retain(|&(g, l)| (g, l) != (gid, mlid));
        Ok(())
    }

    /// The groups this QP is attached to.
    pub fn mcast_groups(&self) -> &[([u8; 16], u16)] {
        &self.mcast
    }

    /// Post send work requests.
    ///
    /// # Safety
    /// The contract of [`Provider::post_send`]: each SGE's memory is valid for reads (and for
    /// writes with READ/atomics), in a live MR under its lkey, until the request completes.
    #[inline(always)]
    pub unsafe fn post_send(&mut self, wrs: &[SendWr<'_>]) -> std::result::Result<(), PostError> {
        // SAFETY: forwarded contract.
        unsafe { self.ctx.provider.post_send(&mut self.state, wrs) }
    }

    /// Post receive work requests.
    ///
    /// # Safety
    /// The contract of [`Provider::post_recv`].
    #[inline]
    pub unsafe fn post_recv(&mut self, wrs: &[RecvWr<'_>]) -> std::result::Result<(), PostError> {
        // SAFETY: forwarded contract.
        unsafe { self.ctx.provider.post_recv(&mut self.state, wrs) }
    }
}

impl<P: DcProvider> Qp<P> {
    /// A Dynamically Connected QP (`init.qp_type` `Dci` or `Dct`). A DCT needs `init.srq`; it
    /// has no queues of its own.
    pub fn new_dc(pd: &Arc<Pd<P>>, init: &QpInit<'_, P>, dc: &DcInit) -> Result<Self> {
        if !init.qp_type.is_dc() {
            return Err(Error::msg("create DC QP", format!("QP type {} is not a DC type (DCI or DCT)", init.qp_type.name())));
        }
        if init.qp_type == QpType::Dct && init.srq.is_none() {
            return Err(Error::msg("create DC QP", "a DCT receives from an SRQ: pass one"));
        }
        let prepared = pd.ctx.provider.prepare_dc_qp(&init_attr_of(init), dc)?;
        Self::create(pd, init, Some(prepared), None)
    }
}

impl<P: CryptoProvider> Qp<P> {
    /// Post a UMR that configures `mkey` for AES-XTS over `sge` (see
    /// [`CryptoProvider::post_crypto_mkey_configure`]).
    ///
    /// # Safety
    /// The contract of [`CryptoProvider::post_crypto_mkey_configure`].
    pub unsafe fn post_crypto_mkey_configure(
        &mut self,
        mkey: &mut CryptoMkey<P>,
        sge: &crate::wr::Sge,
        access: AccessFlags,
        attr: &CryptoAttr,
        dek: &Dek<P>,
    ) -> std::result::Result<(), PostError> {
        // SAFETY: forwarded contract.
        unsafe {
            self.ctx.provider.post_crypto_mkey_configure(&mut self.state, &mut mkey.mkey, sge, access.bits(), attr, &dek.dek)
        }
    }

}

impl<P: Provider> Drop for Qp<P> {
    fn drop(&mut self) {
        // The kernel refuses (EBUSY) to destroy a QP that is still attached to a group.
        for (gid, mlid) in std::mem::take(&mut self.mcast) {
            report_drop(cmd::detach_mcast(&self.ctx.cmd(), self.handle, gid, mlid));
        }
        report_drop(cmd::destroy_qp(&self.ctx.cmd(), self.handle).map(|_| ()));
        // SAFETY: dropped exactly once, here, after the kernel QP is gone; the PD/CQ/SRQ
        // references (dropped after this body) keep those objects alive until now.
        unsafe { ManuallyDrop::drop(&mut self.state) };
    }
}
