//! Shared receive queues, basic and XRC.

use std::sync::Arc;

use super::cq::{Cq, CqInner};
use super::pd::{Pd, Xrcd};
use super::shared::{KernelObject, Shared};
use super::{next_user_handle, report_drop};
use crate::cmd;
use crate::error::Result;
use crate::dv::XrcSrqProvider;
use crate::provider::{PostError, Provider, SrqCreated};
use crate::sys;
use crate::wr::RecvWr;

pub(super) struct SrqMeta<P: Provider> {
    pd: Arc<Pd<P>>,
    created: SrqCreated,
    /// XRC SRQs: the domain and the CQ stay alive as long as the SRQ.
    _xrc: Option<XrcKeepAlive<P>>,
}

/// What an XRC SRQ keeps alive: its domain and its CQ.
pub(super) type XrcKeepAlive<P> = (Arc<Xrcd<P>>, Arc<CqInner<P>>);

impl<P: Provider> KernelObject for SrqMeta<P> {
    fn destroy(&self) {
        report_drop(cmd::destroy_srq(&self.pd.ctx.cmd(), self.created.handle).map(|_| ()));
    }
}

pub(super) type SrqInner<P> = Shared<SrqMeta<P>, <P as Provider>::Srq>;

/// A shared receive queue.
pub struct Srq<P: Provider> {
    pub(super) inner: Arc<SrqInner<P>>,
}

impl<P: Provider> Srq<P> {
    pub fn new(pd: &Arc<Pd<P>>, max_wr: u32, max_sge: u32, srq_limit: u32) -> Result<Self> {
        let ctx = &pd.ctx;
        let (prep, udata) = ctx.provider.prepare_srq(max_wr, max_sge)?;
        let c = ctx.cmd();
        let (r, drv) = cmd::create_srq(&c, next_user_handle(), pd.handle, max_wr, max_sge, srq_limit, &udata)?;
        Self::finish(pd, &c, prep, &r, &drv, None)
    }

    /// The provider's half of either create (basic or XRC); the kernel's SRQ is destroyed again
    /// if the provider refuses it.
    fn finish(
        pd: &Arc<Pd<P>>,
        c: &cmd::Cmd<'_>,
        prep: P::SrqPrep,
        r: &sys::CreateSrqResp,
        drv: &[u8],
        xrc: Option<XrcKeepAlive<P>>,
    ) -> Result<Self> {
        let created = SrqCreated { handle: r.srq_handle, max_wr: r.max_wr, max_sge: r.max_sge, srqn: r.srqn };
        let state = match pd.ctx.provider.finish_srq(prep, &created, drv) {
            Ok(s) => s,
            Err(e) => {
                let _ = cmd::destroy_srq(c, r.srq_handle);
                return Err(e);
            }
        };
        Ok(Srq { inner: Shared::new(SrqMeta { pd: pd.clone(), created, _xrc: xrc }, state) })
    }

    /// Post receives to the SRQ.
    ///
    /// # Safety
    /// The contract of [`Provider::post_srq_recv`]: each SGE's memory stays valid for writes, in
    /// a live MR under its lkey, until the receive completes.
    #[inline]
    pub unsafe fn post_recv(&mut self, wrs: &[RecvWr<'_>]) -> std::result::Result<(), PostError> {
        let inner = &*self.inner;
        // SAFETY: `Srq` is the unique owner, and `&mut self` makes this access exclusive.
        let state = unsafe { inner.state_mut() };
        // SAFETY: the caller upholds post_srq_recv's buffer contract (this fn's own contract).
        unsafe { inner.meta.pd.ctx.provider.post_srq_recv(state, wrs) }
    }
    /// The provider's SRQ state (read-only), for telling the provider which SRQ a QP uses.
    pub(super) fn provider_state(&self) -> &P::Srq {
        // SAFETY: `Srq` is the unique owner; `&self` keeps it from being borrowed mutably.
        unsafe { self.inner.state_ref() }
    }
    pub fn handle(&self) -> u32 {
        self.inner.meta.created.handle
    }
    pub fn srqn(&self) -> u32 {
        self.inner.meta.created.srqn
    }
    pub fn max_wr(&self) -> u32 {
        self.inner.meta.created.max_wr
    }
    pub fn max_sge(&self) -> u32 {
        self.inner.meta.created.max_sge
    }
}

impl<P: XrcSrqProvider> Srq<P> {
    /// An XRC SRQ (CREATE_XSRQ): receives of every XRC target QP in `xrcd` whose initiator names
    /// this SRQ's number land here and complete on `cq`.
    pub fn new_xrc(pd: &Arc<Pd<P>>, xrcd: &Arc<Xrcd<P>>, cq: &Cq<P>, max_wr: u32, max_sge: u32, srq_limit: u32) -> Result<Self> {
        let ctx = &pd.ctx;
        let (prep, udata) = ctx.provider.prepare_xrc_srq(max_wr, max_sge)?;
        let c = ctx.cmd();
        let args = cmd::CreateXrcSrqArgs {
            user_handle: next_user_handle(),
            pd: pd.handle,
            xrcd: xrcd.handle,
            cq: cq.handle(),
            max_wr,
            max_sge,
            srq_limit,
        };
        let (r, drv) = cmd::create_xrc_srq(&c, &args, &udata)?;
        Self::finish(pd, &c, prep, &r, &drv, Some((xrcd.clone(), cq.inner.clone())))
    }
}
