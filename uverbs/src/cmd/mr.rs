//! Protection domains, memory regions and completion channels.

use std::os::fd::OwnedFd;

use crate::error::Result;
use crate::provider::Udata;
use crate::sys::{self, method, obj};

use super::{Cmd, Transport, destroy_handle_ioctl, legacy_no_resp, legacy_typed, owned_fd};

/// ALLOC_PD → (pd handle, driver response).
pub fn alloc_pd(c: &Cmd<'_>, drv: &Udata) -> Result<(u32, Vec<u8>)> {
    let (r, d): (sys::AllocPdResp, _) = legacy_typed(c, "ALLOC_PD", sys::CMD_ALLOC_PD, &sys::AllocPd::default(), drv)?;
    Ok((r.pd_handle, d))
}

/// DEALLOC_PD (PD_DESTROY over ioctl).
pub fn dealloc_pd(c: &Cmd<'_>, pd: u32) -> Result<()> {
    match c.transport {
        Transport::Write => legacy_no_resp(c, "DEALLOC_PD", sys::CMD_DEALLOC_PD, &sys::DeallocPd { pd_handle: pd }),
        Transport::Ioctl => destroy_handle_ioctl(c, "DEALLOC_PD", obj::PD, method::PD_DESTROY, pd),
    }
}

/// The REG_MR core request.
pub fn reg_mr_req(addr: u64, length: u64, iova: u64, pd: u32, access: u32) -> sys::RegMr {
    sys::RegMr { response: 0, start: addr, length, hca_va: iova, pd_handle: pd, access_flags: access }
}

/// REG_MR → {mr_handle, lkey, rkey}.
pub fn reg_mr(c: &Cmd<'_>, addr: u64, length: u64, iova: u64, pd: u32, access: u32) -> Result<sys::RegMrResp> {
    legacy_typed(c, "REG_MR", sys::CMD_REG_MR, &reg_mr_req(addr, length, iova, pd, access), &Udata::none()).map(|(r, _)| r)
}

/// DEREG_MR (MR_DESTROY over ioctl).
pub fn dereg_mr(c: &Cmd<'_>, mr: u32) -> Result<()> {
    match c.transport {
        Transport::Write => legacy_no_resp(c, "DEREG_MR", sys::CMD_DEREG_MR, &sys::DeregMr { mr_handle: mr }),
        Transport::Ioctl => destroy_handle_ioctl(c, "DEREG_MR", obj::MR, method::MR_DESTROY, mr),
    }
}

/// CREATE_COMP_CHANNEL → the channel fd.
pub fn create_comp_channel(c: &Cmd<'_>) -> Result<OwnedFd> {
    const WHAT: &str = "CREATE_COMP_CHANNEL";
    let (r, _): (sys::CreateCompChannelResp, _) = legacy_typed(c, WHAT, sys::CMD_CREATE_COMP_CHANNEL, &sys::CreateCompChannel::default(), &Udata::none())?;
    owned_fd(WHAT, r.fd as i32 as i64)
}
