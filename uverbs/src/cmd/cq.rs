//! Completion queues: CREATE_CQ (plain, extended, ioctl), DESTROY_CQ, REQ_NOTIFY_CQ.

use std::os::fd::BorrowedFd;

use zerocopy::IntoBytes;

use crate::error::Result;
use crate::ioctl::{self, IoctlBuilder, IoctlReply};
use crate::provider::Udata;
use crate::sys::{self, attr, method, obj};

use super::{
    AlignedBuf, Cmd, Transport, command_error, destroy_with_resp, legacy_typed, parse_response,
    require_output, sys_write,
};

/// Arguments of CREATE_CQ.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CreateCqArgs {
    /// Echoed in completion events (the comp channel yields it).
    pub user_handle: u64,
    pub cqe: u32,
    pub comp_vector: u32,
    /// Completion channel fd, if any.
    pub channel: Option<i32>,
    /// Async event fd to bind (ioctl path; optional attribute).
    pub event_fd: Option<i32>,
}

/// Pointer values for the ioctl CQ_CREATE encoding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CqCreatePtrs {
    pub resp_cqe: u64,
    pub drv_in: u64,
    pub drv_out: u64,
}

/// Attribute positions in [`encode_cq_create`]'s output.
pub const CQ_CREATE_HANDLE_INDEX: usize = 0;
pub const CQ_CREATE_RESP_CQE_INDEX: usize = 1;

/// The ioctl CQ.CREATE buffer, in rdma-core 44's attribute order.
pub fn encode_cq_create(driver_id: u32, a: &CreateCqArgs, drv_in: &[u8], drv_out_len: usize, p: &CqCreatePtrs) -> Result<Vec<u8>> {
    let mut b = IoctlBuilder::new(obj::CQ, method::CQ_CREATE, driver_id);
    b.idr_new(attr::CREATE_CQ_HANDLE);
    b.ptr_out(attr::CREATE_CQ_RESP_CQE, p.resp_cqe, 4);
    b.u32_in(attr::CREATE_CQ_CQE, a.cqe);
    b.u64_in(attr::CREATE_CQ_USER_HANDLE, a.user_handle);
    b.u32_in(attr::CREATE_CQ_COMP_VECTOR, a.comp_vector);
    if let Some(ch) = a.channel {
        b.fd_in(attr::CREATE_CQ_COMP_CHANNEL, ch);
    }
    if let Some(fd) = a.event_fd {
        let i = b.fd_in(attr::CREATE_CQ_EVENT_FD, fd);
        b.optional(i);
    }
    b.uhw_in(drv_in, p.drv_in);
    b.uhw_out(p.drv_out, drv_out_len);
    b.encode()
}

/// The write CREATE_CQ core request.
pub fn create_cq_req(a: &CreateCqArgs) -> sys::CreateCq {
    sys::CreateCq {
        response: 0,
        user_handle: a.user_handle,
        cqe: a.cqe,
        comp_vector: a.comp_vector,
        comp_channel: a.channel.unwrap_or(-1),
        reserved: 0,
    }
}

/// CREATE_CQ → ({cq_handle, cqe}, driver response).
pub fn create_cq(c: &Cmd<'_>, a: &CreateCqArgs, drv: &Udata) -> Result<(sys::CreateCqResp, Vec<u8>)> {
    const WHAT: &str = "CREATE_CQ";
    match c.transport {
        Transport::Write => legacy_typed(c, WHAT, sys::CMD_CREATE_CQ, &create_cq_req(a), drv),
        Transport::Ioctl => {
            let mut resp_cqe = AlignedBuf::zeroed(4);
            let mut drv_in = AlignedBuf::from_bytes(&drv.req);
            let mut drv_out = AlignedBuf::zeroed(drv.resp_len);
            let p = CqCreatePtrs { resp_cqe: resp_cqe.addr(), drv_in: drv_in.addr(), drv_out: drv_out.addr() };
            let mut buf = AlignedBuf::from_bytes(&encode_cq_create(c.driver_id, a, &drv.req, drv.resp_len, &p)?);
            // SAFETY: RESP_CQE, UHW_IN and UHW_OUT point into `resp_cqe`, `drv_in`, `drv_out`,
            // live to the end of this block and sized as declared.
            unsafe { ioctl::execute(c.fd, buf.bytes_mut()) }.map_err(|e| command_error(WHAT, e))?;
            let reply = IoctlReply::parse(buf.bytes())?;
            require_output(WHAT, &reply, CQ_CREATE_RESP_CQE_INDEX, "the CQ size")?;
            let cq_handle = reply.handle(WHAT, CQ_CREATE_HANDLE_INDEX)?;
            let cqe = parse_response::<u32>(WHAT, resp_cqe.bytes())?;
            Ok((sys::CreateCqResp { cq_handle, cqe }, drv_out.bytes().to_vec()))
        }
    }
}

/// DESTROY_CQ → {comp_events_reported, async_events_reported}.
pub fn destroy_cq(c: &Cmd<'_>, cq: u32) -> Result<sys::DestroyCqResp> {
    let req = sys::DestroyCq { response: 0, cq_handle: cq, reserved: 0 };
    destroy_with_resp(c, "DESTROY_CQ", sys::CMD_DESTROY_CQ, &req, obj::CQ, method::CQ_DESTROY, cq)
}

/// The REQ_NOTIFY_CQ write buffer (16 bytes).
pub fn encode_req_notify_cq(cq_handle: u32, solicited_only: bool) -> [u8; 16] {
    let hdr = sys::CmdHdr { command: sys::CMD_REQ_NOTIFY_CQ, in_words: 4, out_words: 0 };
    let body = sys::ReqNotifyCq { cq_handle, solicited_only: solicited_only as u32 };
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(hdr.as_bytes());
    out[8..].copy_from_slice(body.as_bytes());
    out
}

/// REQ_NOTIFY_CQ (always `write()`; rxe opts in to this command): arm the CQ's completion event.
pub fn req_notify_cq(fd: BorrowedFd<'_>, cq_handle: u32, solicited_only: bool) -> Result<()> {
    sys_write(fd, &encode_req_notify_cq(cq_handle, solicited_only)).map_err(|e| command_error("REQ_NOTIFY_CQ", e))
}
