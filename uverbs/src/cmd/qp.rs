//! Queue pairs, address handles and multicast: create (plain, extended, ioctl), modify, query,
//! destroy, CREATE_AH / DESTROY_AH, ATTACH_MCAST / DETACH_MCAST.

use zerocopy::IntoBytes;

use crate::error::{Error, Result};
use crate::ioctl::{self, IoctlBuilder, IoctlReply};
use crate::provider::Udata;
use crate::sys::{self, attr, method, obj};

use super::{
    AlignedBuf, Cmd, Transport, command_error, destroy_handle_ioctl, destroy_with_resp,
    legacy_no_resp, legacy_typed, parse_response,
};

/// Arguments of CREATE_QP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CreateQpArgs {
    pub user_handle: u64,
    pub pd: u32,
    pub send_cq: u32,
    pub recv_cq: u32,
    pub srq: Option<u32>,
    /// XRC target QPs: the XRC domain (the QP then has no PD, CQs or queues of its own).
    pub xrcd: Option<u32>,
    /// `enum ib_uverbs_qp_type` value.
    pub qp_type: u8,
    pub caps: sys::QpCap,
    pub sq_sig_all: bool,
    /// Async event fd to bind (ioctl path).
    pub event_fd: Option<i32>,
}

/// Pointer values for the ioctl QP_CREATE encoding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpCreatePtrs {
    /// Where the 20-byte `ib_uverbs_qp_cap` request lives.
    pub cap: u64,
    pub resp_cap: u64,
    pub resp_qp_num: u64,
    pub drv_in: u64,
    pub drv_out: u64,
}

/// The ioctl QP.CREATE buffer (rdma-core 44's order). Returns the bytes and the index of the
/// HANDLE attribute.
pub fn encode_qp_create(driver_id: u32, a: &CreateQpArgs, drv_in: &[u8], drv_out_len: usize, p: &QpCreatePtrs) -> Result<(Vec<u8>, usize)> {
    let mut b = IoctlBuilder::new(obj::QP, method::QP_CREATE, driver_id);
    match (a.qp_type, a.xrcd) {
        // XRC target: the domain instead of PD and CQs (as rdma-core's ibv_cmd_create_qp_ex2).
        (sys::IB_UVERBS_QPT_XRC_TGT, Some(x)) => {
            b.idr_in(attr::CREATE_QP_XRCD_HANDLE, x);
        }
        (sys::IB_UVERBS_QPT_XRC_TGT, None) => return Err(Error::msg("CREATE_QP", "an XRC target QP needs an XRC domain")),
        // XRC initiator: a send CQ only.
        (sys::IB_UVERBS_QPT_XRC_INI, _) => {
            b.idr_in(attr::CREATE_QP_PD_HANDLE, a.pd);
            b.idr_in(attr::CREATE_QP_SEND_CQ_HANDLE, a.send_cq);
        }
        _ => {
            b.idr_in(attr::CREATE_QP_PD_HANDLE, a.pd);
            b.idr_in(attr::CREATE_QP_SEND_CQ_HANDLE, a.send_cq);
            b.idr_in(attr::CREATE_QP_RECV_CQ_HANDLE, a.recv_cq);
        }
    }
    let caps = qp_caps_for_type(a);
    if let Some(srq) = a.srq {
        b.idr_in(attr::CREATE_QP_SRQ_HANDLE, srq);
    }
    let h = b.idr_new(attr::CREATE_QP_HANDLE);
    b.const_in(attr::CREATE_QP_TYPE, a.qp_type as u64);
    b.u64_in(attr::CREATE_QP_USER_HANDLE, a.user_handle);
    b.ptr_in(attr::CREATE_QP_CAP, caps.as_bytes(), p.cap);
    if let Some(fd) = a.event_fd {
        b.fd_in(attr::CREATE_QP_EVENT_FD, fd);
    }
    if a.sq_sig_all {
        b.u32_in(attr::CREATE_QP_FLAGS, sys::IB_UVERBS_QP_CREATE_SQ_SIG_ALL);
    }
    b.ptr_out(attr::CREATE_QP_RESP_CAP, p.resp_cap, core::mem::size_of::<sys::QpCap>());
    b.ptr_out(attr::CREATE_QP_RESP_QP_NUM, p.resp_qp_num, 4);
    b.uhw_in(drv_in, p.drv_in);
    b.uhw_out(p.drv_out, drv_out_len);
    Ok((b.encode()?, h))
}

/// The capacities CREATE_QP carries: an XRC initiator has no receive side (rdma-core zeroes
/// `max_recv_wr`/`max_recv_sge`; the kernel's write handler does the same).
fn qp_caps_for_type(a: &CreateQpArgs) -> sys::QpCap {
    let mut caps = a.caps;
    if a.qp_type == sys::IB_UVERBS_QPT_XRC_INI {
        caps.max_recv_wr = 0;
        caps.max_recv_sge = 0;
    }
    caps
}

/// The write CREATE_QP core request. XRC target: `pd_handle` carries the XRC domain's handle
/// and both CQ handles are 0 (the kernel's `create_qp` reads the domain from `pd_handle` for
/// that type); XRC initiator: no receive CQ.
pub fn create_qp_req(a: &CreateQpArgs) -> sys::CreateQp {
    let caps = qp_caps_for_type(a);
    let (pd_handle, send_cq_handle, recv_cq_handle) = match a.qp_type {
        sys::IB_UVERBS_QPT_XRC_TGT => (a.xrcd.unwrap_or(0), 0, 0),
        sys::IB_UVERBS_QPT_XRC_INI => (a.pd, a.send_cq, 0),
        _ => (a.pd, a.send_cq, a.recv_cq),
    };
    sys::CreateQp {
        response: 0,
        user_handle: a.user_handle,
        pd_handle,
        send_cq_handle,
        recv_cq_handle,
        srq_handle: a.srq.unwrap_or(0),
        max_send_wr: caps.max_send_wr,
        max_recv_wr: caps.max_recv_wr,
        max_send_sge: caps.max_send_sge,
        max_recv_sge: caps.max_recv_sge,
        max_inline_data: caps.max_inline_data,
        sq_sig_all: a.sq_sig_all as u8,
        qp_type: a.qp_type,
        is_srq: a.srq.is_some() as u8,
        reserved: 0,
    }
}

/// CREATE_QP → (core response, driver response).
pub fn create_qp(c: &Cmd<'_>, a: &CreateQpArgs, drv: &Udata) -> Result<(sys::CreateQpResp, Vec<u8>)> {
    const WHAT: &str = "CREATE_QP";
    match c.transport {
        Transport::Write => {
            if a.qp_type == sys::IB_UVERBS_QPT_XRC_TGT && a.xrcd.is_none() {
                return Err(Error::msg(WHAT, "an XRC target QP needs an XRC domain"));
            }
            legacy_typed(c, WHAT, sys::CMD_CREATE_QP, &create_qp_req(a), drv)
        }
        Transport::Ioctl => {
            let mut cap = AlignedBuf::from_bytes(qp_caps_for_type(a).as_bytes());
            let mut resp_cap = AlignedBuf::zeroed(core::mem::size_of::<sys::QpCap>());
            let mut qpn = AlignedBuf::zeroed(4);
            let mut drv_in = AlignedBuf::from_bytes(&drv.req);
            let mut drv_out = AlignedBuf::zeroed(drv.resp_len);
            let p = QpCreatePtrs { cap: cap.addr(), resp_cap: resp_cap.addr(), resp_qp_num: qpn.addr(), drv_in: drv_in.addr(), drv_out: drv_out.addr() };
            let (bytes, h) = encode_qp_create(c.driver_id, a, &drv.req, drv.resp_len, &p)?;
            let mut buf = AlignedBuf::from_bytes(&bytes);
            // SAFETY: CAP, RESP_CAP, RESP_QP_NUM, UHW_IN, UHW_OUT point into the buffers above,
            // live to the end of this block and sized as declared.
            unsafe { ioctl::execute(c.fd, buf.bytes_mut()) }.map_err(|e| command_error(WHAT, e))?;
            let reply = IoctlReply::parse(buf.bytes())?;
            let qp_handle = reply.handle(WHAT, h)?;
            let caps = parse_response::<sys::QpCap>(WHAT, resp_cap.bytes())?;
            let qpn = parse_response::<u32>(WHAT, qpn.bytes())?;
            Ok((
                sys::CreateQpResp {
                    qp_handle,
                    qpn,
                    max_send_wr: caps.max_send_wr,
                    max_recv_wr: caps.max_recv_wr,
                    max_send_sge: caps.max_send_sge,
                    max_recv_sge: caps.max_recv_sge,
                    max_inline_data: caps.max_inline_data,
                    reserved: 0,
                },
                drv_out.bytes().to_vec(),
            ))
        }
    }
}

/// MODIFY_QP (no response). `req.qp_handle` names the QP.
pub fn modify_qp(c: &Cmd<'_>, req: &sys::ModifyQp) -> Result<()> {
    legacy_no_resp(c, "MODIFY_QP", sys::CMD_MODIFY_QP, req)
}

/// EX_MODIFY_QP with driver data → (core response, driver response).
pub fn modify_qp_ex(c: &Cmd<'_>, req: &sys::ExModifyQp, drv: &Udata) -> Result<(sys::ExModifyQpResp, Vec<u8>)> {
    legacy_typed(c, "EX_MODIFY_QP", sys::IB_USER_VERBS_CMD_FLAG_EXTENDED | sys::CMD_EX_MODIFY_QP, req, drv)
}

/// QUERY_QP.
pub fn query_qp(c: &Cmd<'_>, qp: u32, attr_mask: u32) -> Result<sys::QueryQpResp> {
    let req = sys::QueryQp { response: 0, qp_handle: qp, attr_mask };
    legacy_typed(c, "QUERY_QP", sys::CMD_QUERY_QP, &req, &Udata::none()).map(|(r, _)| r)
}

/// DESTROY_QP → events_reported.
pub fn destroy_qp(c: &Cmd<'_>, qp: u32) -> Result<u32> {
    let req = sys::DestroyQp { response: 0, qp_handle: qp, reserved: 0 };
    destroy_with_resp::<sys::DestroyQpResp, _>(c, "DESTROY_QP", sys::CMD_DESTROY_QP, &req, obj::QP, method::QP_DESTROY, qp).map(|r| r.events_reported)
}

/// The CREATE_AH core request.
pub fn create_ah_req(user_handle: u64, pd: u32, attr: &sys::AhAttr) -> sys::CreateAh {
    sys::CreateAh { response: 0, user_handle, pd_handle: pd, reserved: 0, attr: *attr }
}

/// CREATE_AH → (ah handle, driver response).
pub fn create_ah(c: &Cmd<'_>, user_handle: u64, pd: u32, attr: &sys::AhAttr, drv: &Udata) -> Result<(u32, Vec<u8>)> {
    let (r, d): (sys::CreateAhResp, _) = legacy_typed(c, "CREATE_AH", sys::CMD_CREATE_AH, &create_ah_req(user_handle, pd, attr), drv)?;
    Ok((r.ah_handle, d))
}

/// DESTROY_AH (AH_DESTROY over ioctl).
pub fn destroy_ah(c: &Cmd<'_>, ah: u32) -> Result<()> {
    match c.transport {
        Transport::Write => legacy_no_resp(c, "DESTROY_AH", sys::CMD_DESTROY_AH, &sys::DestroyAh { ah_handle: ah }),
        Transport::Ioctl => destroy_handle_ioctl(c, "DESTROY_AH", obj::AH, method::AH_DESTROY, ah),
    }
}

/// `struct ib_uverbs_attach_mcast` for QP `qp` and group (`gid`, `mlid`); DETACH_MCAST has the
/// same layout.
pub fn attach_mcast_req(qp: u32, gid: [u8; 16], mlid: u16) -> sys::AttachMcast {
    sys::AttachMcast { gid, qp_handle: qp, mlid, reserved: 0 }
}

/// ATTACH_MCAST: the QP receives UD sends addressed to the group (no response, no driver data;
/// rdma-core sends it as a write() command on every transport).
pub fn attach_mcast(c: &Cmd<'_>, qp: u32, gid: [u8; 16], mlid: u16) -> Result<()> {
    legacy_no_resp(c, "ATTACH_MCAST", sys::CMD_ATTACH_MCAST, &attach_mcast_req(qp, gid, mlid))
}

/// DETACH_MCAST: undo [`attach_mcast`] (the kernel refuses to destroy a QP still attached).
pub fn detach_mcast(c: &Cmd<'_>, qp: u32, gid: [u8; 16], mlid: u16) -> Result<()> {
    let a = attach_mcast_req(qp, gid, mlid);
    let req = sys::DetachMcast { gid: a.gid, qp_handle: a.qp_handle, mlid: a.mlid, reserved: a.reserved };
    legacy_no_resp(c, "DETACH_MCAST", sys::CMD_DETACH_MCAST, &req)
}
