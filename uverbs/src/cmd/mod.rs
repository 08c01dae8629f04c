//! One function per kernel command, over either transport:
//!
//! - **write**: the legacy `write()` framing (`ib_uverbs_cmd_hdr`, and for extended commands
//!   `ib_uverbs_ex_cmd_hdr`), driver data appended after the core request and expected after the
//!   core response. Works from 4.x kernels on; the default.
//! - **ioctl**: `RDMA_VERBS_IOCTL`, the way rdma-core ≥ 22 talks to 5.x+ kernels: native methods
//!   where they exist (GET_CONTEXT, QUERY_PORT, CQ/QP create/destroy, PD/MR/AH destroy, GID
//!   table) and `DEVICE.INVOKE_WRITE` carrying the legacy struct for the rest.
//!
//! Every command is split into a pure encoder (`encode_*`, explicit pointer values in, exact
//! bytes out; tested against captures of rdma-core on a real kernel) and a thin executor that
//! allocates the response buffers, encodes with their addresses and makes the syscall. Every
//! failure names the command, the errno and a hint ([`command_error`]).
//!
//! Kernel output is untrusted: response lengths are fixed by us and checked, handles and fds are
//! range-checked, and no kernel value can cause a panic.
//!
//! This module holds the transport choice, errors, buffers and the legacy framing (and the
//! destroy helpers every object shares); the commands live by object in `device`, `mr` (PD, MR,
//! completion channel), `cq`, `qp` (with AH and multicast), `srq` (with XRCD), the rxe
//! `doorbell` and the driver-namespace (DEVX) methods in `devx`, all re-exported here.

use crate::knob::{self, Knob};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use zerocopy::{FromBytes, Immutable, IntoBytes};

use crate::error::{Error, Result};
use crate::ioctl::{self, IoctlBuilder, IoctlReply};
use crate::provider::Udata;
use crate::sys::{self, attr, method, obj};

mod cq;
mod device;
mod devx;
mod doorbell;
#[forbid(unsafe_code)]
mod mr;
mod qp;
#[forbid(unsafe_code)]
mod srq;
#[cfg(test)]
mod tests;

pub use cq::{
    CqCreatePtrs, CreateCqArgs, create_cq, create_cq_req, destroy_cq, encode_cq_create,
    encode_req_notify_cq, req_notify_cq, CQ_CREATE_HANDLE_INDEX, CQ_CREATE_RESP_CQE_INDEX,
};
pub use device::{
    ContextCreated, async_event_alloc, encode_async_event_alloc, encode_get_context_ioctl,
    encode_query_gid_entry, encode_query_gid_table, encode_query_port_ioctl, get_context,
    query_device, query_device_ex, query_device_ex_drv, query_gid_entry, query_gid_table, query_port,
};
pub use devx::{DriverMethod, DriverReply, driver_method, encode_driver_method};
pub use doorbell::{encode_post_send_doorbell, post_send_doorbell};
pub use mr::{
    DmabufMrArgs, alloc_pd, create_comp_channel, dealloc_pd, dereg_mr, encode_reg_dmabuf_mr, reg_dmabuf_mr, reg_mr, reg_mr_req,
};
pub use qp::{
    CreateQpArgs, QpCreatePtrs, attach_mcast, attach_mcast_req, create_ah, create_ah_req, create_qp,
    create_qp_req, destroy_ah, destroy_qp, detach_mcast, encode_qp_create, modify_qp, modify_qp_ex,
    query_qp,
};
pub use srq::{
    CreateXrcSrqArgs, close_xrcd, create_srq, create_xrc_srq, create_xrc_srq_req, destroy_srq,
    open_xrcd, open_xrcd_req,
};
// ================================================================================================
// Transport choice
// ================================================================================================

/// How commands reach the kernel. See the module documentation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Transport {
    /// Legacy `write()` for every command (the default).
    #[default]
    Write,
    /// `RDMA_VERBS_IOCTL`: native methods, INVOKE_WRITE for the rest.
    Ioctl,
}

impl Transport {
    /// `write` or `ioctl` (any case, surrounding blanks ignored); the program maps its own flag or
    /// environment variable through this and opens contexts with the result
    /// ([`crate::objects::Context::open_with`]).
    pub fn parse(s: &str) -> Option<Transport> {
        match s.trim().to_ascii_lowercase().as_str() {
            "write" => Some(Transport::Write),
            "ioctl" => Some(Transport::Ioctl),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Transport::Write => "write",
            Transport::Ioctl => "ioctl",
        }
    }
}

/// Where and how to send a command: the uverbs fd, the transport, and the driver id that every
/// ioctl header must carry (the kernel rejects a mismatch with EINVAL).
#[derive(Clone, Copy, Debug)]
pub struct Cmd<'a> {
    pub fd: BorrowedFd<'a>,
    pub transport: Transport,
    pub driver_id: u32,
}

// ================================================================================================
// Errors
// ================================================================================================

/// A hint the user can act on for `errno` from command `what` (knobs named as in [`knob`]).
pub fn hint(what: &str, errno: i32) -> Option<String> {
    let cmd = what.split_whitespace().next().unwrap_or(what);
    Some(match (cmd, errno) {
        (_, libc::EACCES) | (_, libc::EPERM) => {
            "check the permissions on /dev/infiniband/uverbsN (group rdma or a udev rule), and that the process did not change credentials after opening it"
        }
        ("REG_MR", libc::ENOMEM) | ("REG_MR", libc::EAGAIN) => {
            "the locked-memory limit is too low: raise RLIMIT_MEMLOCK (ulimit -l unlimited, or memlock in /etc/security/limits.conf)"
        }
        ("MODIFY_QP", libc::EINVAL) => {
            return Some(format!(
                "check the QP attributes: {} and {}, path MTU, destination QPN, timeout <= 31, and that the state change is allowed",
                knob::named(Knob::GidIndex),
                knob::named(Knob::IbPort)
            ))
        }
        ("MODIFY_QP", libc::ENODATA) => {
            return Some(format!(
                "the GID index points at an empty GID table slot: pick a populated index{}",
                knob::flag(Knob::GidIndex)
            ))
        }
        ("POST_SEND", libc::EINVAL) => "the doorbell needs the QP in RTS (and wqe_size >= 56)",
        ("POST_SEND", libc::EFAULT) => "the response pointer was refused, but the send queue has probably already been processed",
        ("DESTROY_CQ", libc::EBUSY) => "the CQ still has QPs attached: destroy the QPs first",
        ("DEALLOC_PD", libc::EBUSY) => "the PD still has MRs, QPs or AHs: destroy them first",
        ("CREATE_CQ", libc::EINVAL) => "the CQ size is beyond the device's max_cqe, or the completion vector is out of range",
        ("CREATE_QP", libc::EINVAL) => "the QP capacities exceed the device limits (max_qp_wr, max_sge, max_inline), or the QP type is not supported",
        (_, libc::EOPNOTSUPP) => "the command is not supported by this driver or kernel",
        (_, libc::EPROTONOSUPPORT) => {
            return Some(format!(
                "this kernel does not know the ioctl method or attribute; try the {}",
                knob::named(Knob::WriteTransport)
            ))
        }
        (_, libc::ENOTTY) => {
            return Some(format!("this kernel has no uverbs ioctl interface; use the {}", knob::named(Knob::WriteTransport)))
        }
        (_, libc::ENOSPC) => "the kernel expected a larger command or response buffer (kernel/ABI mismatch)",
        (_, libc::ENOMEM) => "the kernel or device ran out of resources (too many objects, or queues too large)",
        (_, libc::EIO) => "the device was removed or reset (device disassociated)",
        (_, libc::ENODEV) | (_, libc::ENXIO) => "the device is gone; check that the RDMA driver is loaded (e.g. rdma link show)",
        _ => return None,
    }
    .to_string())
}

/// The error for command `what` failing with `errno`, with a hint where one applies.
pub fn command_error(what: &str, errno: i32) -> Error {
    let e = Error::errno(what, errno);
    match hint(what, errno) {
        Some(h) => e.with_hint(h),
        None => e,
    }
}

fn bad_response(what: &str, detail: impl Into<String>) -> Error {
    Error::msg(what, detail).with_hint("the kernel's answer does not match the expected ABI (kernel/driver version mismatch?)")
}

/// Read `T` from the front of a response, which must be long enough.
pub fn parse_response<T: FromBytes>(what: &str, bytes: &[u8]) -> Result<T> {
    T::read_from_prefix(bytes)
        .map(|(t, _)| t)
        .map_err(|_| bad_response(what, format!("response of {} bytes, expected at least {}", bytes.len(), core::mem::size_of::<T>())))
}

// ================================================================================================
// Buffers
// ================================================================================================

/// A zeroed, 8-byte aligned byte buffer whose address can be handed to the kernel.
struct AlignedBuf {
    words: Vec<u64>,
    len: usize,
}

impl AlignedBuf {
    fn zeroed(len: usize) -> Self {
        AlignedBuf { words: vec![0u64; len.div_ceil(8)], len }
    }
    fn from_bytes(b: &[u8]) -> Self {
        let mut a = AlignedBuf::zeroed(b.len());
        a.bytes_mut().copy_from_slice(b);
        a
    }
    fn bytes(&self) -> &[u8] {
        &self.words.as_bytes()[..self.len]
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        let len = self.len;
        &mut self.words.as_mut_bytes()[..len]
    }
    /// The address for the kernel (0 for an empty buffer).
    fn addr(&mut self) -> u64 {
        if self.len == 0 {
            0
        } else {
            self.words.as_mut_ptr() as u64
        }
    }
}

fn sys_write(fd: BorrowedFd<'_>, buf: &[u8]) -> std::result::Result<(), i32> {
    // SAFETY: `buf` is a live byte slice of `buf.len()` bytes; write(2) only reads it. Any
    // response pointer inside it refers to a buffer the caller keeps alive across this call.
    let n = unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO))
    } else if n as usize != buf.len() {
        Err(libc::EIO)
    } else {
        Ok(())
    }
}

fn run_ioctl(what: &str, fd: BorrowedFd<'_>, b: &IoctlBuilder) -> Result<IoctlReply> {
    let mut buf = AlignedBuf::from_bytes(&b.encode().map_err(|e| Error::msg(what, e.detail.unwrap_or_default()))?);
    // SAFETY: every pointer attribute in `b` was built by this module from an `AlignedBuf` (or a
    // plain value) that the calling function keeps alive until this returns, sized as declared.
    unsafe { ioctl::execute(fd, buf.bytes_mut()) }.map_err(|e| command_error(what, e))?;
    IoctlReply::parse(buf.bytes())
}

fn require_output(what: &str, r: &IoctlReply, index: usize, name: &str) -> Result<()> {
    if r.valid_output(index) {
        Ok(())
    } else {
        Err(bad_response(what, format!("the kernel did not fill {name}")))
    }
}

fn owned_fd(what: &str, fd: i64) -> Result<OwnedFd> {
    if !(0..=i32::MAX as i64).contains(&fd) {
        return Err(bad_response(what, format!("kernel returned fd {fd}")));
    }
    // SAFETY: the kernel just created this descriptor for us and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

// ================================================================================================
// Legacy commands: framing over write() and INVOKE_WRITE
// ================================================================================================

/// A legacy (write-table) command, independent of transport.
#[derive(Clone, Copy, Debug)]
pub struct Legacy<'a> {
    /// Name for messages (`"REG_MR"`).
    pub name: &'static str,
    /// Command number; extended commands include [`sys::IB_USER_VERBS_CMD_FLAG_EXTENDED`].
    pub command: u32,
    /// The core request. For non-extended commands with a response, it starts with the
    /// `response` u64, which the encoders overwrite. Extended core requests have no `response`.
    pub core_in: &'a [u8],
    /// Driver request bytes.
    pub drv_in: &'a [u8],
    /// Core response size (0: the command has no response).
    pub core_out_len: usize,
    /// Driver response size.
    pub drv_out_len: usize,
}

impl Legacy<'_> {
    pub fn is_ex(&self) -> bool {
        self.command & sys::IB_USER_VERBS_CMD_FLAG_EXTENDED != 0
    }
    fn has_response_field(&self) -> bool {
        !self.is_ex() && self.core_out_len > 0
    }
    fn core_in_patched(&self, resp: u64) -> Result<Vec<u8>> {
        let mut core = self.core_in.to_vec();
        if self.has_response_field() {
            if core.len() < 8 {
                return Err(Error::msg(self.name, "core request too short for its response field"));
            }
            core[..8].copy_from_slice(&resp.to_le_bytes());
        }
        Ok(core)
    }
}

/// The exact `write()` buffer for a legacy command whose response lands at `resp_ptr`.
pub fn encode_write(l: &Legacy<'_>, resp_ptr: u64) -> Result<Vec<u8>> {
    let what = l.name;
    let core = l.core_in_patched(resp_ptr)?;
    if !l.is_ex() {
        let total = 8 + core.len() + l.drv_in.len();
        let out = l.core_out_len + l.drv_out_len;
        if !total.is_multiple_of(4) || !out.is_multiple_of(4) {
            return Err(Error::msg(what, format!("sizes {total}/{out} are not multiples of 4 bytes")));
        }
        let in_words = u16::try_from(total / 4).map_err(|_| Error::msg(what, "request too large"))?;
        let out_words = u16::try_from(out / 4).map_err(|_| Error::msg(what, "response too large"))?;
        let hdr = sys::CmdHdr { command: l.command, in_words, out_words };
        let mut buf = Vec::with_capacity(total);
        buf.extend_from_slice(hdr.as_bytes());
        buf.extend_from_slice(&core);
        buf.extend_from_slice(l.drv_in);
        Ok(buf)
    } else {
        for (n, v) in [("core request", core.len()), ("driver request", l.drv_in.len()), ("core response", l.core_out_len), ("driver response", l.drv_out_len)] {
            if v % 8 != 0 {
                return Err(Error::msg(what, format!("{n} of {v} bytes is not a multiple of 8 (extended command)")));
            }
        }
        let w = |v: usize| u16::try_from(v / 8).map_err(|_| Error::msg(what, "too large"));
        let has_out = l.core_out_len + l.drv_out_len > 0;
        let hdr = sys::CmdHdr { command: l.command, in_words: w(core.len())?, out_words: w(l.core_out_len)? };
        let ex = sys::ExCmdHdr {
            response: if has_out { resp_ptr } else { 0 },
            provider_in_words: w(l.drv_in.len())?,
            provider_out_words: w(l.drv_out_len)?,
            cmd_hdr_reserved: 0,
        };
        let mut buf = Vec::with_capacity(24 + core.len() + l.drv_in.len());
        buf.extend_from_slice(hdr.as_bytes());
        buf.extend_from_slice(ex.as_bytes());
        buf.extend_from_slice(&core);
        buf.extend_from_slice(l.drv_in);
        Ok(buf)
    }
}

/// Pointer values for an INVOKE_WRITE encoding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InvokePtrs {
    /// Where the (patched) core request lives, if longer than 8 bytes.
    pub core_in: u64,
    /// The core response buffer (also written into the request's `response` field, as rdma-core does).
    pub core_out: u64,
    /// Where the driver request lives, if longer than 8 bytes.
    pub drv_in: u64,
    /// The driver response buffer.
    pub drv_out: u64,
}

/// The ioctl buffer for `DEVICE.INVOKE_WRITE` carrying `l`, and the core request bytes that
/// CORE_IN refers to (with `response` = `p.core_out`).
pub fn encode_invoke_write(l: &Legacy<'_>, driver_id: u32, p: &InvokePtrs) -> Result<(Vec<u8>, Vec<u8>)> {
    let core = l.core_in_patched(p.core_out)?;
    let mut b = IoctlBuilder::new(obj::DEVICE, method::INVOKE_WRITE, driver_id);
    b.const_in(attr::WRITE_CMD, l.command as u64);
    b.ptr_in(attr::CORE_IN, &core, p.core_in);
    if l.core_out_len > 0 {
        b.ptr_out(attr::CORE_OUT, p.core_out, l.core_out_len);
    }
    b.uhw_in(l.drv_in, p.drv_in);
    b.uhw_out(p.drv_out, l.drv_out_len);
    Ok((b.encode()?, core))
}

/// The INVOKE_WRITE probe rdma-core sends first: WRITE_CMD = QUERY_DEVICE and nothing else.
pub fn encode_invoke_write_probe(driver_id: u32) -> Result<Vec<u8>> {
    let mut b = IoctlBuilder::new(obj::DEVICE, method::INVOKE_WRITE, driver_id);
    b.const_in(attr::WRITE_CMD, sys::CMD_QUERY_DEVICE as u64);
    b.encode()
}

/// Does the kernel support INVOKE_WRITE (and so the ioctl path with this driver id)? The
/// kernel answers the probe with ENOSPC when it does; ENOTTY / EPROTONOSUPPORT mean no.
pub fn invoke_write_probe(fd: BorrowedFd<'_>, driver_id: u32) -> Result<bool> {
    let mut buf = AlignedBuf::from_bytes(&encode_invoke_write_probe(driver_id)?);
    // SAFETY: the probe has no pointer attributes.
    match unsafe { ioctl::execute(fd, buf.bytes_mut()) } {
        Err(libc::ENOSPC) | Ok(()) => Ok(true),
        Err(libc::ENOTTY) | Err(libc::EPROTONOSUPPORT) => Ok(false),
        Err(e) => Err(command_error("INVOKE_WRITE probe", e)
            .with_detail("EINVAL here usually means the driver id does not match the device")),
    }
}

/// Run a legacy command on either transport. Returns (core response, driver response).
pub fn exec_legacy(c: &Cmd<'_>, l: &Legacy<'_>) -> Result<(Vec<u8>, Vec<u8>)> {
    match c.transport {
        Transport::Write => {
            // One buffer: core response then driver response (for ex commands the driver part
            // starts at out_words*8, which is core_out_len since both are multiples of 8).
            let mut out = AlignedBuf::zeroed(l.core_out_len + l.drv_out_len);
            let resp = out.addr();
            let buf = encode_write(l, resp)?;
            sys_write(c.fd, &buf).map_err(|e| command_error(l.name, e))?;
            let bytes = out.bytes();
            Ok((bytes[..l.core_out_len].to_vec(), bytes[l.core_out_len..].to_vec()))
        }
        Transport::Ioctl => {
            let mut core_out = AlignedBuf::zeroed(l.core_out_len);
            let mut drv_out = AlignedBuf::zeroed(l.drv_out_len);
            let mut drv_in = AlignedBuf::from_bytes(l.drv_in);
            let core_out_addr = core_out.addr();
            let mut core_in = AlignedBuf::from_bytes(&l.core_in_patched(core_out_addr)?);
            let p = InvokePtrs { core_in: core_in.addr(), core_out: core_out_addr, drv_in: drv_in.addr(), drv_out: drv_out.addr() };
            let (bytes, _) = encode_invoke_write(l, c.driver_id, &p)?;
            let mut buf = AlignedBuf::from_bytes(&bytes);
            // SAFETY: CORE_IN/CORE_OUT/UHW_IN/UHW_OUT point into `core_in`, `core_out`,
            // `drv_in`, `drv_out`, live until the end of this block and sized as declared.
            unsafe { ioctl::execute(c.fd, buf.bytes_mut()) }.map_err(|e| command_error(l.name, e))?;
            let reply = IoctlReply::parse(buf.bytes())?;
            if l.core_out_len > 0 {
                require_output(l.name, &reply, 2, "the core response")?;
            }
            Ok((core_out.bytes().to_vec(), drv_out.bytes().to_vec()))
        }
    }
}

fn legacy_typed<Req: IntoBytes + Immutable, Resp: FromBytes>(
    c: &Cmd<'_>,
    name: &'static str,
    command: u32,
    req: &Req,
    drv: &Udata,
) -> Result<(Resp, Vec<u8>)> {
    let l = Legacy {
        name,
        command,
        core_in: req.as_bytes(),
        drv_in: &drv.req,
        core_out_len: core::mem::size_of::<Resp>(),
        drv_out_len: drv.resp_len,
    };
    let (core, drv_out) = exec_legacy(c, &l)?;
    Ok((parse_response(name, &core)?, drv_out))
}

fn legacy_no_resp<Req: IntoBytes + Immutable>(c: &Cmd<'_>, name: &'static str, command: u32, req: &Req) -> Result<()> {
    let l = Legacy { name, command, core_in: req.as_bytes(), drv_in: &[], core_out_len: 0, drv_out_len: 0 };
    exec_legacy(c, &l).map(|_| ())
}

// ================================================================================================
// Destroy helpers shared by the objects
// ================================================================================================

/// A single-handle destroy over ioctl (PD, MR, AH).
pub fn encode_destroy_handle(driver_id: u32, object: u16, method_id: u16, handle: u32) -> Result<Vec<u8>> {
    let mut b = IoctlBuilder::new(object, method_id, driver_id);
    b.idr_in(0, handle);
    b.encode()
}

fn destroy_handle_ioctl(c: &Cmd<'_>, what: &str, object: u16, method_id: u16, handle: u32) -> Result<()> {
    let mut b = IoctlBuilder::new(object, method_id, c.driver_id);
    b.idr_in(0, handle);
    run_ioctl(what, c.fd, &b).map(|_| ())
}

/// The ioctl CQ.DESTROY / QP.DESTROY / SRQ.DESTROY buffer (RESP first, as rdma-core).
pub fn encode_destroy_with_resp(driver_id: u32, object: u16, method_id: u16, handle: u32, resp_ptr: u64, resp_len: usize) -> Result<Vec<u8>> {
    let mut b = IoctlBuilder::new(object, method_id, driver_id);
    b.ptr_out(1, resp_ptr, resp_len);
    b.idr_in(0, handle);
    b.encode()
}

fn destroy_with_resp<R: FromBytes + IntoBytes + Immutable, Req: IntoBytes + Immutable>(
    c: &Cmd<'_>,
    what: &'static str,
    command: u32,
    req: &Req,
    object: u16,
    method_id: u16,
    handle: u32,
) -> Result<R> {
    match c.transport {
        Transport::Write => legacy_typed(c, what, command, req, &Udata::none()).map(|(r, _)| r),
        Transport::Ioctl => {
            let mut resp = AlignedBuf::zeroed(core::mem::size_of::<R>());
            let mut buf = AlignedBuf::from_bytes(&encode_destroy_with_resp(c.driver_id, object, method_id, handle, resp.addr(), core::mem::size_of::<R>())?);
            // SAFETY: RESP points into `resp`, live and sized as declared.
            unsafe { ioctl::execute(c.fd, buf.bytes_mut()) }.map_err(|e| command_error(what, e))?;
            parse_response(what, resp.bytes())
        }
    }
}
