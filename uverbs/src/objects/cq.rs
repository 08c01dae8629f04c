//! Completion channels and completion queues.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

use super::context::{poll_read, Context};
use super::shared::{KernelObject, Shared};
use super::{next_user_handle, report_drop};
use crate::cmd::{self, CreateCqArgs, Transport};
use crate::error::{Error, Result};
use crate::provider::{CqCreated, Provider};
use crate::wr::WorkCompletion;

/// A completion event channel: a fd that becomes readable when an armed CQ completes.
pub struct CompChannel {
    fd: OwnedFd,
}

impl CompChannel {
    pub fn new<P: Provider>(ctx: &Arc<Context<P>>) -> Result<Self> {
        Ok(CompChannel { fd: cmd::create_comp_channel(&ctx.cmd())? })
    }
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
    /// Wait up to `timeout` (None: forever) for one completion event; returns the CQ's
    /// `user_handle` ([`Cq::user_handle`]). Call [`Cq::event_received`] on that CQ, re-arm, and
    /// poll it.
    pub fn wait(&self, timeout: Option<Duration>) -> Result<Option<u64>> {
        let mut buf = [0u8; 8];
        match poll_read("read completion event", self.fd.as_fd(), &mut buf, timeout)? {
            None => Ok(None),
            Some(8) => Ok(Some(u64::from_ne_bytes(buf))),
            Some(n) => Err(Error::msg("read completion event", format!("short event of {n} bytes"))),
        }
    }
}

pub(super) struct CqMeta<P: Provider> {
    ctx: Arc<Context<P>>,
    handle: u32,
    cqe: u32,
    user_handle: u64,
}

impl<P: Provider> KernelObject for CqMeta<P> {
    fn destroy(&self) {
        report_drop(cmd::destroy_cq(&self.ctx.cmd(), self.handle).map(|_| ()));
    }
}

pub(super) type CqInner<P> = Shared<CqMeta<P>, <P as Provider>::Cq>;

/// A completion queue. Unique owner of the provider state; QPs hold only a reference that keeps
/// the kernel CQ alive.
pub struct Cq<P: Provider> {
    pub(super) inner: Arc<CqInner<P>>,
}

impl<P: Provider> Cq<P> {
    /// Create a CQ of at least `entries` completions, optionally reporting to `channel`.
    pub fn new(ctx: &Arc<Context<P>>, entries: u32, channel: Option<&CompChannel>, comp_vector: u32) -> Result<Self> {
        let (prep, cqe, udata) = ctx.provider.prepare_cq_for(entries, channel.is_some())?;
        let user_handle = next_user_handle();
        let args = CreateCqArgs {
            user_handle,
            cqe,
            comp_vector,
            channel: channel.map(|c| c.fd.as_raw_fd()),
            event_fd: (ctx.transport == Transport::Ioctl).then(|| ctx.async_fd.as_raw_fd()),
        };
        let c = ctx.cmd();
        let (resp, drv) = cmd::create_cq(&c, &args, &udata)?;
        let core = CqCreated { handle: resp.cq_handle, cqe: resp.cqe };
        let state = match ctx.provider.finish_cq(prep, &core, &drv) {
            Ok(s) => s,
            Err(e) => {
                let _ = cmd::destroy_cq(&c, resp.cq_handle);
                return Err(e);
            }
        };
        let meta = CqMeta { ctx: ctx.clone(), handle: resp.cq_handle, cqe: resp.cqe, user_handle };
        Ok(Cq { inner: Shared::new(meta, state) })
    }

    /// The provider context and the CQ's provider state, without touching reference counts.
    fn parts(&mut self) -> (&P, &mut P::Cq) {
        let inner = &*self.inner;
        // SAFETY: `Cq` is the unique owner, and `&mut self` makes this access exclusive.
        let state = unsafe { inner.state_mut() };
        (&inner.meta.ctx.provider, state)
    }

    /// Fill `out` with up to `out.len()` completions; returns how many.
    #[inline(always)]
    pub fn poll(&mut self, out: &mut [WorkCompletion]) -> Result<usize> {
        let (p, state) = self.parts();
        p.poll_cq(state, out)
    }

    /// Request a completion event for the next (or next solicited) completion. Poll again after
    /// arming: a completion may have arrived in between.
    pub fn arm(&mut self, solicited_only: bool) -> Result<()> {
        let (p, state) = self.parts();
        p.arm_cq(state, solicited_only)
    }

    /// Tell the provider one completion event for this CQ was read from the channel.
    pub fn event_received(&mut self) {
        let (p, state) = self.parts();
        p.cq_event(state)
    }

    pub fn handle(&self) -> u32 {
        self.inner.meta.handle
    }
    /// The capacity the kernel granted.
    pub fn cqe(&self) -> u32 {
        self.inner.meta.cqe
    }
    /// What completion events for this CQ carry.
    pub fn user_handle(&self) -> u64 {
        self.inner.meta.user_handle
    }
    pub fn context(&self) -> &Arc<Context<P>> {
        &self.inner.meta.ctx
    }
}
