//! Protection domains, memory regions and completion channels.

use std::os::fd::OwnedFd;

use crate::error::Result;
use crate::provider::Udata;
use crate::sys::{self, method, obj};

use crate::ioctl::IoctlBuilder;
use crate::sys::attr;

use super::{AlignedBuf, Cmd, Transport, destroy_handle_ioctl, legacy_no_resp, legacy_typed, owned_fd, require_output, run_ioctl};

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

/// What a dma-buf MR registers: `length` bytes from `offset` into the dma-buf `fd`, seen by the
/// device at `iova`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmabufMrArgs {
    pub pd: u32,
    pub fd: i32,
    pub offset: u64,
    pub length: u64,
    pub iova: u64,
    pub access: u32,
}

/// The MR.REG_DMABUF_MR buffer, attributes in rdma-core's order (`ibv_cmd_reg_dmabuf_mr`: the
/// new handle, the two key outputs, then the inputs; the fd travels as a 4-byte value, not an
/// fd attribute), the key outputs at `lkey_ptr` / `rkey_ptr`.
pub fn encode_reg_dmabuf_mr(driver_id: u32, a: &DmabufMrArgs, lkey_ptr: u64, rkey_ptr: u64) -> Result<Vec<u8>> {
    reg_dmabuf_mr_call(driver_id, a, lkey_ptr, rkey_ptr).encode()
}

fn reg_dmabuf_mr_call(driver_id: u32, a: &DmabufMrArgs, lkey_ptr: u64, rkey_ptr: u64) -> IoctlBuilder {
    let mut b = IoctlBuilder::new(obj::MR, method::REG_DMABUF_MR, driver_id);
    b.idr_new(attr::REG_DMABUF_MR_HANDLE);
    b.ptr_out(attr::REG_DMABUF_MR_RESP_LKEY, lkey_ptr, 4);
    b.ptr_out(attr::REG_DMABUF_MR_RESP_RKEY, rkey_ptr, 4);
    b.idr_in(attr::REG_DMABUF_MR_PD_HANDLE, a.pd);
    b.u64_in(attr::REG_DMABUF_MR_OFFSET, a.offset);
    b.u64_in(attr::REG_DMABUF_MR_LENGTH, a.length);
    b.u64_in(attr::REG_DMABUF_MR_IOVA, a.iova);
    b.u32_in(attr::REG_DMABUF_MR_FD, a.fd as u32);
    b.u32_in(attr::REG_DMABUF_MR_ACCESS_FLAGS, a.access);
    b
}

/// MR.REG_DMABUF_MR → {mr_handle, lkey, rkey}. ioctl only (there is no write() form), whatever
/// the context's transport. A device whose driver has no dma-buf MRs (rxe, siw) answers
/// EOPNOTSUPP; a kernel older than 5.12 does not know the method.
pub fn reg_dmabuf_mr(c: &Cmd<'_>, a: &DmabufMrArgs) -> Result<sys::RegMrResp> {
    const WHAT: &str = "REG_DMABUF_MR";
    let mut keys = AlignedBuf::zeroed(8);
    let base = keys.addr();
    // The two key outputs point into `keys`, which lives past the call; the rest is inline.
    let reply = run_ioctl(WHAT, c.fd, &reg_dmabuf_mr_call(c.driver_id, a, base, base + 4))?;
    let mr_handle = reply.handle(WHAT, 0)?;
    require_output(WHAT, &reply, 1, "the lkey")?;
    require_output(WHAT, &reply, 2, "the rkey")?;
    let k = keys.bytes();
    let key = |i: usize| u32::from_le_bytes([k[i], k[i + 1], k[i + 2], k[i + 3]]);
    Ok(sys::RegMrResp { mr_handle, lkey: key(0), rkey: key(4) })
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
