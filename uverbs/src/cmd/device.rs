//! Context and device queries: GET_CONTEXT, the async event fd, QUERY_DEVICE (plain and
//! extended), QUERY_PORT and the GID table.

use std::os::fd::OwnedFd;

use crate::error::Result;
use crate::ioctl::{self, IoctlBuilder, IoctlReply};
use crate::provider::Udata;
use crate::sys::{self, attr, method, obj};

use super::{
    AlignedBuf, Cmd, Transport, bad_response, command_error, legacy_typed, owned_fd, parse_response,
    require_output, run_ioctl,
};

/// What GET_CONTEXT produced.
#[derive(Debug)]
pub struct ContextCreated {
    pub async_fd: OwnedFd,
    pub num_comp_vectors: u32,
    /// `CORE_SUPPORT` bits (ioctl path only; 0 over write).
    pub core_support: u64,
    pub drv_resp: Vec<u8>,
}

/// The ioctl GET_CONTEXT buffer (rdma-core's attribute order).
pub fn encode_get_context_ioctl(driver_id: u32, num_comp_vectors_ptr: u64, core_support_ptr: u64, drv_in: &[u8], drv_in_ptr: u64, drv_out_ptr: u64, drv_out_len: usize) -> Result<Vec<u8>> {
    let mut b = IoctlBuilder::new(obj::DEVICE, method::GET_CONTEXT, driver_id);
    b.ptr_out(attr::GET_CONTEXT_NUM_COMP_VECTORS, num_comp_vectors_ptr, 4);
    b.ptr_out(attr::GET_CONTEXT_CORE_SUPPORT, core_support_ptr, 8);
    b.uhw_in(drv_in, drv_in_ptr);
    b.uhw_out(drv_out_ptr, drv_out_len);
    b.encode()
}

/// The ASYNC_EVENT.ALLOC buffer (creates the async event fd on the ioctl path).
pub fn encode_async_event_alloc(driver_id: u32) -> Result<Vec<u8>> {
    let mut b = IoctlBuilder::new(obj::ASYNC_EVENT, method::ASYNC_EVENT_ALLOC, driver_id);
    b.fd_new(attr::ASYNC_EVENT_ALLOC_FD_HANDLE);
    b.encode()
}

/// GET_CONTEXT: must be the first command on a uverbs fd. Over ioctl it is followed by
/// ASYNC_EVENT.ALLOC, since the ioctl GET_CONTEXT creates no async fd.
pub fn get_context(c: &Cmd<'_>, drv: &Udata) -> Result<ContextCreated> {
    const WHAT: &str = "GET_CONTEXT";
    match c.transport {
        Transport::Write => {
            let (r, drv_resp): (sys::GetContextResp, _) = legacy_typed(c, WHAT, sys::CMD_GET_CONTEXT, &sys::GetContext::default(), drv)?;
            let async_fd = owned_fd(WHAT, r.async_fd as i32 as i64)?;
            Ok(ContextCreated { async_fd, num_comp_vectors: r.num_comp_vectors, core_support: 0, drv_resp })
        }
        Transport::Ioctl => {
            let mut ncv = AlignedBuf::zeroed(4);
            let mut support = AlignedBuf::zeroed(8);
            let mut drv_in = AlignedBuf::from_bytes(&drv.req);
            let mut drv_out = AlignedBuf::zeroed(drv.resp_len);
            let bytes = encode_get_context_ioctl(c.driver_id, ncv.addr(), support.addr(), &drv.req, drv_in.addr(), drv_out.addr(), drv.resp_len)?;
            let mut buf = AlignedBuf::from_bytes(&bytes);
            // SAFETY: the out pointers refer to `ncv`, `support`, `drv_out`, the in pointer to
            // `drv_in`; all live to the end of this block and sized as declared.
            unsafe { ioctl::execute(c.fd, buf.bytes_mut()) }.map_err(|e| command_error(WHAT, e))?;
            let reply = IoctlReply::parse(buf.bytes())?;
            require_output(WHAT, &reply, 0, "num_comp_vectors")?;
            let num_comp_vectors = parse_response::<u32>(WHAT, ncv.bytes())?;
            let core_support = parse_response::<u64>(WHAT, support.bytes())?;
            let async_fd = async_event_alloc(c)?;
            Ok(ContextCreated { async_fd, num_comp_vectors, core_support, drv_resp: drv_out.bytes().to_vec() })
        }
    }
}

/// ASYNC_EVENT.ALLOC: a new async event fd (ioctl only).
pub fn async_event_alloc(c: &Cmd<'_>) -> Result<OwnedFd> {
    const WHAT: &str = "ASYNC_EVENT_ALLOC";
    let mut b = IoctlBuilder::new(obj::ASYNC_EVENT, method::ASYNC_EVENT_ALLOC, c.driver_id);
    b.fd_new(attr::ASYNC_EVENT_ALLOC_FD_HANDLE);
    let r = run_ioctl(WHAT, c.fd, &b)?;
    owned_fd(WHAT, r.data(0) as i64)
}

/// QUERY_DEVICE.
pub fn query_device(c: &Cmd<'_>) -> Result<sys::QueryDeviceResp> {
    legacy_typed(c, "QUERY_DEVICE", sys::CMD_QUERY_DEVICE, &sys::QueryDevice::default(), &Udata::none()).map(|(r, _)| r)
}

/// EX_QUERY_DEVICE. Older kernels fill less than the full struct; `response_length` says how
/// much (the rest stays zero).
pub fn query_device_ex(c: &Cmd<'_>) -> Result<sys::ExQueryDeviceResp> {
    query_device_ex_drv(c, 0).map(|(r, _)| r)
}

/// EX_QUERY_DEVICE with room for `drv_resp_len` bytes of driver response after the core one
/// (EFA answers its caps there, what efadv_query_device reports).
pub fn query_device_ex_drv(c: &Cmd<'_>, drv_resp_len: usize) -> Result<(sys::ExQueryDeviceResp, Vec<u8>)> {
    legacy_typed(
        c,
        "EX_QUERY_DEVICE",
        sys::IB_USER_VERBS_CMD_FLAG_EXTENDED | sys::CMD_EX_QUERY_DEVICE,
        &sys::ExQueryDevice::default(),
        &Udata { req: Vec::new(), resp_len: drv_resp_len },
    )
}

/// The ioctl QUERY_PORT buffer.
pub fn encode_query_port_ioctl(driver_id: u32, port: u8, resp_ptr: u64) -> Result<Vec<u8>> {
    let mut b = IoctlBuilder::new(obj::DEVICE, method::QUERY_PORT, driver_id);
    b.const_in(attr::QUERY_PORT_PORT_NUM, port as u64);
    b.ptr_out(attr::QUERY_PORT_RESP, resp_ptr, core::mem::size_of::<sys::QueryPortRespEx>());
    b.encode()
}

/// QUERY_PORT. Over write the extra `_ex` fields are zero.
pub fn query_port(c: &Cmd<'_>, port: u8) -> Result<sys::QueryPortRespEx> {
    const WHAT: &str = "QUERY_PORT";
    match c.transport {
        Transport::Write => {
            let req = sys::QueryPort { port_num: port, ..Default::default() };
            let (legacy_resp, _): (sys::QueryPortResp, _) = legacy_typed(c, WHAT, sys::CMD_QUERY_PORT, &req, &Udata::none())?;
            Ok(sys::QueryPortRespEx { legacy_resp, ..Default::default() })
        }
        Transport::Ioctl => {
            let mut resp = AlignedBuf::zeroed(core::mem::size_of::<sys::QueryPortRespEx>());
            let mut buf = AlignedBuf::from_bytes(&encode_query_port_ioctl(c.driver_id, port, resp.addr())?);
            // SAFETY: RESP points into `resp`, live and 48 bytes long.
            unsafe { ioctl::execute(c.fd, buf.bytes_mut()) }.map_err(|e| command_error(WHAT, e))?;
            let reply = IoctlReply::parse(buf.bytes())?;
            require_output(WHAT, &reply, 1, "the port attributes")?;
            parse_response(WHAT, resp.bytes())
        }
    }
}

/// The QUERY_GID_TABLE buffer for up to `max_entries` entries.
pub fn encode_query_gid_table(driver_id: u32, max_entries: usize, entries_ptr: u64, num_ptr: u64) -> Result<Vec<u8>> {
    let mut b = IoctlBuilder::new(obj::DEVICE, method::QUERY_GID_TABLE, driver_id);
    let esz = core::mem::size_of::<sys::GidEntry>();
    b.const_in(attr::QUERY_GID_TABLE_ENTRY_SIZE, esz as u64);
    b.u32_in(attr::QUERY_GID_TABLE_FLAGS, 0);
    b.ptr_out(attr::QUERY_GID_TABLE_RESP_ENTRIES, entries_ptr, max_entries * esz);
    b.ptr_out(attr::QUERY_GID_TABLE_RESP_NUM_ENTRIES, num_ptr, 8);
    b.encode()
}

/// QUERY_GID_TABLE (ioctl only, kernel ≥ 5.10): the valid GIDs of every port. `max_entries`
/// bounds the answer (at most 2047 entries fit the 16-bit attribute length).
pub fn query_gid_table(c: &Cmd<'_>, max_entries: usize) -> Result<Vec<sys::GidEntry>> {
    const WHAT: &str = "QUERY_GID_TABLE";
    let esz = core::mem::size_of::<sys::GidEntry>();
    let max_entries = max_entries.clamp(1, u16::MAX as usize / esz);
    let mut entries = AlignedBuf::zeroed(max_entries * esz);
    let mut num = AlignedBuf::zeroed(8);
    let bytes = encode_query_gid_table(c.driver_id, max_entries, entries.addr(), num.addr())?;
    let mut buf = AlignedBuf::from_bytes(&bytes);
    // SAFETY: RESP_ENTRIES points into `entries` (max_entries * 32 bytes), RESP_NUM_ENTRIES into
    // `num` (8 bytes), both live to the end of this function.
    unsafe { ioctl::execute(c.fd, buf.bytes_mut()) }.map_err(|e| command_error(WHAT, e))?;
    let n = parse_response::<u64>(WHAT, num.bytes())?;
    if n > max_entries as u64 {
        return Err(bad_response(WHAT, format!("kernel reports {n} entries in a buffer of {max_entries}")));
    }
    entries.bytes()[..n as usize * esz]
        .chunks_exact(esz)
        .map(|ch| parse_response::<sys::GidEntry>(WHAT, ch))
        .collect()
}

/// The QUERY_GID_ENTRY buffer (rdma-core's order).
pub fn encode_query_gid_entry(driver_id: u32, port: u32, index: u32, resp_ptr: u64) -> Result<Vec<u8>> {
    let mut b = IoctlBuilder::new(obj::DEVICE, method::QUERY_GID_ENTRY, driver_id);
    b.const_in(attr::QUERY_GID_ENTRY_PORT, port as u64);
    b.const_in(attr::QUERY_GID_ENTRY_GID_INDEX, index as u64);
    b.u32_in(attr::QUERY_GID_ENTRY_FLAGS, 0);
    b.ptr_out(attr::QUERY_GID_ENTRY_RESP_ENTRY, resp_ptr, core::mem::size_of::<sys::GidEntry>());
    b.encode()
}

/// QUERY_GID_ENTRY (ioctl only). An empty slot fails with ENODATA.
pub fn query_gid_entry(c: &Cmd<'_>, port: u32, index: u32) -> Result<sys::GidEntry> {
    const WHAT: &str = "QUERY_GID_ENTRY";
    let mut resp = AlignedBuf::zeroed(core::mem::size_of::<sys::GidEntry>());
    let mut buf = AlignedBuf::from_bytes(&encode_query_gid_entry(c.driver_id, port, index, resp.addr())?);
    // SAFETY: RESP_ENTRY points into `resp` (32 bytes), live to the end of this function.
    unsafe { ioctl::execute(c.fd, buf.bytes_mut()) }.map_err(|e| command_error(WHAT, e))?;
    parse_response(WHAT, resp.bytes())
}
