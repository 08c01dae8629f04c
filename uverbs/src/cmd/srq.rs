//! Shared receive queues and XRC domains: CREATE_SRQ, CREATE_XSRQ, OPEN_XRCD / CLOSE_XRCD,
//! DESTROY_SRQ.

use crate::error::Result;
use crate::provider::Udata;
use crate::sys::{self, method, obj};

use super::{Cmd, Transport, destroy_handle_ioctl, destroy_with_resp, legacy_no_resp, legacy_typed};

/// CREATE_SRQ → (core response, driver response). (Basic SRQ, via write or INVOKE_WRITE.)
pub fn create_srq(c: &Cmd<'_>, user_handle: u64, pd: u32, max_wr: u32, max_sge: u32, srq_limit: u32, drv: &Udata) -> Result<(sys::CreateSrqResp, Vec<u8>)> {
    let req = sys::CreateSrq { response: 0, user_handle, pd_handle: pd, max_wr, max_sge, srq_limit };
    legacy_typed(c, "CREATE_SRQ", sys::CMD_CREATE_SRQ, &req, drv)
}

/// Arguments of CREATE_XSRQ for an XRC SRQ.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CreateXrcSrqArgs {
    pub user_handle: u64,
    pub pd: u32,
    pub xrcd: u32,
    /// The CQ that receives through this SRQ complete on (XRC target QPs have no CQ of their own).
    pub cq: u32,
    pub max_wr: u32,
    pub max_sge: u32,
    pub srq_limit: u32,
}

/// The CREATE_XSRQ core request for an XRC SRQ (`srq_type` XRC; `max_num_tags` 0).
pub fn create_xrc_srq_req(a: &CreateXrcSrqArgs) -> sys::CreateXsrq {
    sys::CreateXsrq {
        response: 0,
        user_handle: a.user_handle,
        srq_type: sys::IB_UVERBS_SRQT_XRC,
        pd_handle: a.pd,
        max_wr: a.max_wr,
        max_sge: a.max_sge,
        srq_limit: a.srq_limit,
        max_num_tags: 0,
        xrcd_handle: a.xrcd,
        cq_handle: a.cq,
    }
}

/// CREATE_XSRQ (XRC) → (core response, driver response). The response is CREATE_SRQ's, whose
/// `srqn` is the number XRC initiators put in their sends. Over write or INVOKE_WRITE, as
/// rdma-core's `ibv_cmd_create_srq_ex` does.
pub fn create_xrc_srq(c: &Cmd<'_>, a: &CreateXrcSrqArgs, drv: &Udata) -> Result<(sys::CreateSrqResp, Vec<u8>)> {
    legacy_typed(c, "CREATE_XSRQ", sys::CMD_CREATE_XSRQ, &create_xrc_srq_req(a), drv)
}

/// The OPEN_XRCD core request: `fd` -1 for a domain private to this context.
pub fn open_xrcd_req(fd: i32, oflags: u32) -> sys::OpenXrcd {
    sys::OpenXrcd { response: 0, fd: fd as u32, oflags }
}

/// OPEN_XRCD → the XRC domain's handle. Devices without XRC refuse it (EOPNOTSUPP or ENOSYS).
pub fn open_xrcd(c: &Cmd<'_>, fd: i32, oflags: u32) -> Result<u32> {
    let (r, _): (sys::OpenXrcdResp, _) = legacy_typed(c, "OPEN_XRCD", sys::CMD_OPEN_XRCD, &open_xrcd_req(fd, oflags), &Udata::none())?;
    Ok(r.xrcd_handle)
}

/// CLOSE_XRCD (XRCD_DESTROY over ioctl).
pub fn close_xrcd(c: &Cmd<'_>, xrcd: u32) -> Result<()> {
    match c.transport {
        Transport::Write => legacy_no_resp(c, "CLOSE_XRCD", sys::CMD_CLOSE_XRCD, &sys::CloseXrcd { xrcd_handle: xrcd }),
        Transport::Ioctl => destroy_handle_ioctl(c, "CLOSE_XRCD", obj::XRCD, method::XRCD_DESTROY, xrcd),
    }
}

/// DESTROY_SRQ → events_reported.
pub fn destroy_srq(c: &Cmd<'_>, srq: u32) -> Result<u32> {
    let req = sys::DestroySrq { response: 0, srq_handle: srq, reserved: 0 };
    destroy_with_resp::<sys::DestroySrqResp, _>(c, "DESTROY_SRQ", sys::CMD_DESTROY_SRQ, &req, obj::SRQ, method::SRQ_DESTROY, srq).map(|r| r.events_reported)
}
