//! Address handles (UD destinations).

use std::mem::ManuallyDrop;
use std::sync::Arc;

use super::pd::Pd;
use super::qp_attr::uverbs_ah_attr;
use super::{next_user_handle, report_drop};
use crate::cmd;
use crate::error::Result;
use crate::provider::{AhAttr, AhCreated, Provider};

/// An address handle (UD destinations).
pub struct Ah<P: Provider> {
    state: ManuallyDrop<P::Ah>,
    pd: Arc<Pd<P>>,
    handle: u32,
    number: u32,
}

impl<P: Provider> Ah<P> {
    pub fn new(pd: &Arc<Pd<P>>, attr: &AhAttr) -> Result<Self> {
        let ctx = &pd.ctx;
        let (prep, udata) = ctx.provider.prepare_ah(attr)?;
        let c = ctx.cmd();
        let (handle, drv) = cmd::create_ah(&c, next_user_handle(), pd.handle, &uverbs_ah_attr(attr), &udata)?;
        let state = match ctx.provider.finish_ah(prep, attr, &AhCreated { handle }, &drv) {
            Ok(s) => s,
            Err(e) => {
                let _ = cmd::destroy_ah(&c, handle);
                return Err(e);
            }
        };
        let number = ctx.provider.ah_number(&state);
        Ok(Ah { state: ManuallyDrop::new(state), pd: pd.clone(), handle, number })
    }
    pub fn handle(&self) -> u32 {
        self.handle
    }
    /// What a UD send names this AH by (`UdDest::ah`).
    pub fn number(&self) -> u32 {
        self.number
    }
    pub fn provider_ah(&self) -> &P::Ah {
        &self.state
    }
}

impl<P: Provider> Drop for Ah<P> {
    fn drop(&mut self) {
        report_drop(cmd::destroy_ah(&self.pd.ctx.cmd(), self.handle));
        // SAFETY: dropped once, after the kernel AH is gone.
        unsafe { ManuallyDrop::drop(&mut self.state) };
    }
}
