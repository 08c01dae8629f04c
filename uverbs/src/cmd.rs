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

use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use zerocopy::{FromBytes, Immutable, IntoBytes};

use crate::error::{Error, Result};
use crate::ioctl::{self, IoctlBuilder, IoctlReply};
use crate::provider::Udata;
use crate::sys::{self, attr, method, obj};

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

/// The environment variable that selects the transport (`write` or `ioctl`).
pub const TRANSPORT_ENV: &str = "RPERFTEST_VERBS_TRANSPORT";

impl Transport {
    /// `RPERFTEST_VERBS_TRANSPORT=ioctl` selects [`Transport::Ioctl`]; anything else (or unset)
    /// gives [`Transport::Write`].
    pub fn from_env() -> Transport {
        match std::env::var(TRANSPORT_ENV) {
            Ok(v) => Transport::parse(&v).unwrap_or_default(),
            Err(_) => Transport::Write,
        }
    }
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

/// A hint the user can act on for `errno` from command `what`.
pub fn hint(what: &str, errno: i32) -> Option<&'static str> {
    let cmd = what.split_whitespace().next().unwrap_or(what);
    Some(match (cmd, errno) {
        (_, libc::EACCES) | (_, libc::EPERM) => {
            "check the permissions on /dev/infiniband/uverbsN (group rdma or a udev rule), and that the process did not change credentials after opening it"
        }
        ("REG_MR", libc::ENOMEM) | ("REG_MR", libc::EAGAIN) => {
            "the locked-memory limit is too low: raise RLIMIT_MEMLOCK (ulimit -l unlimited, or memlock in /etc/security/limits.conf)"
        }
        ("MODIFY_QP", libc::EINVAL) => {
            "check the QP attributes: GID index (-x) and port (-i), path MTU, destination QPN, timeout <= 31, and that the state change is allowed"
        }
        ("MODIFY_QP", libc::ENODATA) => "the GID index points at an empty GID table slot: pick a populated index (-x)",
        ("POST_SEND", libc::EINVAL) => "the doorbell needs the QP in RTS (and wqe_size >= 56)",
        ("POST_SEND", libc::EFAULT) => "the response pointer was refused, but the send queue has probably already been processed",
        ("DESTROY_CQ", libc::EBUSY) => "the CQ still has QPs attached: destroy the QPs first",
        ("DEALLOC_PD", libc::EBUSY) => "the PD still has MRs, QPs or AHs: destroy them first",
        ("CREATE_CQ", libc::EINVAL) => "the CQ size is beyond the device's max_cqe, or the completion vector is out of range",
        ("CREATE_QP", libc::EINVAL) => "the QP capacities exceed the device limits (max_qp_wr, max_sge, max_inline), or the QP type is not supported",
        (_, libc::EOPNOTSUPP) => "the command is not supported by this driver or kernel",
        (_, libc::EPROTONOSUPPORT) => {
            "this kernel does not know the ioctl method or attribute; try the write transport (RPERFTEST_VERBS_TRANSPORT=write)"
        }
        (_, libc::ENOTTY) => "this kernel has no uverbs ioctl interface; use the write transport (RPERFTEST_VERBS_TRANSPORT=write)",
        (_, libc::ENOSPC) => "the kernel expected a larger command or response buffer (kernel/ABI mismatch)",
        (_, libc::ENOMEM) => "the kernel or device ran out of resources (too many objects, or queues too large)",
        (_, libc::EIO) => "the device was removed or reset (device disassociated)",
        (_, libc::ENODEV) | (_, libc::ENXIO) => "the device is gone; check that the RDMA driver is loaded (e.g. rdma link show)",
        _ => return None,
    })
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
// Context and device queries
// ================================================================================================

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
    let (r, _): (sys::ExQueryDeviceResp, _) = legacy_typed(
        c,
        "EX_QUERY_DEVICE",
        sys::IB_USER_VERBS_CMD_FLAG_EXTENDED | sys::CMD_EX_QUERY_DEVICE,
        &sys::ExQueryDevice::default(),
        &Udata::none(),
    )?;
    Ok(r)
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

// ================================================================================================
// PD, MR, completion channel
// ================================================================================================

/// ALLOC_PD → (pd handle, driver response).
pub fn alloc_pd(c: &Cmd<'_>, drv: &Udata) -> Result<(u32, Vec<u8>)> {
    let (r, d): (sys::AllocPdResp, _) = legacy_typed(c, "ALLOC_PD", sys::CMD_ALLOC_PD, &sys::AllocPd::default(), drv)?;
    Ok((r.pd_handle, d))
}

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

// ================================================================================================
// CQ
// ================================================================================================

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

// ================================================================================================
// QP
// ================================================================================================

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

/// The rxe doorbell: POST_SEND with zero work requests, response at `resp_ptr` (a u32).
/// hdr {28, in_words 8, out_words 1}, body {response, qp_handle, 0, 0, wqe_size 128}.
#[inline]
pub fn encode_post_send_doorbell(resp_ptr: u64, qp_handle: u32) -> [u8; 32] {
    let hdr = sys::CmdHdr { command: sys::CMD_POST_SEND, in_words: 8, out_words: 1 };
    // 128 = sizeof(struct ibv_send_wr), what rdma-core passes; kernels with the 2026 check
    // refuse anything below 56 even with no work requests.
    let body = sys::PostSend { response: resp_ptr, qp_handle, wr_count: 0, sge_count: 0, wqe_size: 128 };
    let mut out = [0u8; 32];
    out[..8].copy_from_slice(hdr.as_bytes());
    out[8..].copy_from_slice(body.as_bytes());
    out
}

/// Ring the rxe doorbell for `qp_handle` (always plain `write()`, as rdma-core does).
#[inline(always)]
pub fn post_send_doorbell(fd: BorrowedFd<'_>, qp_handle: u32) -> Result<()> {
    let mut resp = 0u32;
    let buf = encode_post_send_doorbell(&mut resp as *mut u32 as u64, qp_handle);
    if let Err(e) = doorbell_write(fd, &buf) {
        return Err(doorbell_error(e));
    }
    // With no work requests the kernel reports bad_wr 0; anything else is nonsense.
    if resp != 0 {
        return Err(doorbell_bad_wr(resp));
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn doorbell_error(e: i32) -> Error {
    command_error("POST_SEND", e)
}

#[cold]
#[inline(never)]
fn doorbell_bad_wr(resp: u32) -> Error {
    bad_response("POST_SEND", format!("bad_wr = {resp} with no work requests"))
}

/// write(2) for the doorbell, the one system call on the rxe send path, issued inline on
/// x86_64: libc's wrapper is an indirect call (through the GOT in a static PIE) and, in musl,
/// three more calls for its cancellation point, each of which every post pays.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn doorbell_write(fd: BorrowedFd<'_>, buf: &[u8]) -> std::result::Result<(), i32> {
    let ret: isize;
    // SAFETY: write(2) reads `buf.len()` bytes at `buf`, a live slice, and writes only the
    // response word whose address the command carries (the caller keeps it alive across the
    // call). The asm names the syscall ABI's clobbers (rcx, r11; rax holds the result), and
    // without `nomem` the compiler keeps `buf` and the response in memory around it.
    unsafe {
        core::arch::asm!(
            "syscall",
            inlateout("rax") libc::SYS_write as isize => ret,
            in("rdi") fd.as_raw_fd(),
            in("rsi") buf.as_ptr(),
            in("rdx") buf.len(),
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack, preserves_flags),
        );
    }
    if ret < 0 {
        // The kernel returns -errno.
        Err(-ret as i32)
    } else if ret as usize != buf.len() {
        Err(libc::EIO)
    } else {
        Ok(())
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn doorbell_write(fd: BorrowedFd<'_>, buf: &[u8]) -> std::result::Result<(), i32> {
    sys_write(fd, buf)
}

// ================================================================================================
// SRQ, AH
// ================================================================================================

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

// ================================================================================================
// Driver-namespace methods (mlx5 DEVX)
// ================================================================================================

/// One call of a driver-namespace method (`UVERBS_ID_NS` object/method/attribute ids), e.g.
/// mlx5's DEVX_OBJ_CREATE. Attributes go in rdma-core's order: the new handle, the existing
/// handle, the inputs, then the outputs.
#[derive(Clone, Debug, Default)]
pub struct DriverMethod<'a> {
    /// Name for messages (`"DEVX_OBJ_CREATE"`).
    pub name: &'a str,
    pub object: u16,
    pub method: u16,
    /// IDR_NEW attribute: the kernel writes a new object handle there.
    pub idr_new: Option<u16>,
    /// IDR attribute naming an existing object.
    pub idr_in: Option<(u16, u32)>,
    /// PTR_IN attributes (inline when at most 8 bytes).
    pub ins: Vec<(u16, &'a [u8])>,
    /// PTR_OUT attributes and their sizes.
    pub outs: Vec<(u16, usize)>,
}

/// What a driver method left behind. A driver may fail the call and still fill its outputs
/// (mlx5 DEVX answers `EREMOTEIO` with the device's status in the output mailbox), so the
/// outputs come back with the errno.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DriverReply {
    /// The errno of a failed call; `None` on success.
    pub errno: Option<i32>,
    /// The new handle (`idr_new`), on success.
    pub handle: Option<u32>,
    /// The output buffers, in the order of [`DriverMethod::outs`] (zeros where not written).
    pub outs: Vec<Vec<u8>>,
}

/// Encode `m` with explicit buffer addresses: `in_ptrs[i]` for `m.ins[i]` (unused when inline)
/// and `out_ptrs[i]` for `m.outs[i]`.
pub fn encode_driver_method(driver_id: u32, m: &DriverMethod<'_>, in_ptrs: &[u64], out_ptrs: &[u64]) -> Result<Vec<u8>> {
    let mut b = IoctlBuilder::new(m.object, m.method, driver_id);
    if let Some(id) = m.idr_new {
        b.idr_new(id);
    }
    if let Some((id, h)) = m.idr_in {
        b.idr_in(id, h);
    }
    for (i, (id, bytes)) in m.ins.iter().enumerate() {
        b.ptr_in(*id, bytes, in_ptrs.get(i).copied().unwrap_or(0));
    }
    for (i, (id, len)) in m.outs.iter().enumerate() {
        b.ptr_out(*id, out_ptrs.get(i).copied().unwrap_or(0), *len);
    }
    b.encode().map_err(|e| Error::msg(m.name.to_string(), e.detail.unwrap_or_default()))
}

/// Run a driver-namespace method. `Err` only when the call cannot be encoded or the reply
/// cannot be read; a kernel refusal comes back as [`DriverReply::errno`].
pub fn driver_method(fd: BorrowedFd<'_>, driver_id: u32, m: &DriverMethod<'_>) -> Result<DriverReply> {
    let mut ins: Vec<AlignedBuf> = m.ins.iter().map(|(_, b)| AlignedBuf::from_bytes(b)).collect();
    let mut outs: Vec<AlignedBuf> = m.outs.iter().map(|(_, l)| AlignedBuf::zeroed(*l)).collect();
    let in_ptrs: Vec<u64> = ins.iter_mut().map(|b| b.addr()).collect();
    let out_ptrs: Vec<u64> = outs.iter_mut().map(|b| b.addr()).collect();
    let mut buf = AlignedBuf::from_bytes(&encode_driver_method(driver_id, m, &in_ptrs, &out_ptrs)?);
    // SAFETY: every pointer attribute was encoded from `ins`/`outs`, which live until this
    // function returns, are sized as declared and are not otherwise borrowed during the call.
    let r = unsafe { ioctl::execute(fd, buf.bytes_mut()) };
    let errno = r.err();
    let handle = match (errno, m.idr_new) {
        (None, Some(_)) => Some(IoctlReply::parse(buf.bytes())?.handle(m.name, 0)?),
        _ => None,
    };
    Ok(DriverReply { errno, handle, outs: outs.iter().map(|b| b.bytes().to_vec()).collect() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doorbell_write_delivers_the_bytes_and_reports_errno() {
        use std::io::Read;
        use std::os::fd::AsFd;
        let (mut rd, wr) = std::io::pipe().unwrap();
        let mut resp = 0u32;
        let buf = encode_post_send_doorbell(&mut resp as *mut u32 as u64, 7);
        assert_eq!(doorbell_write(wr.as_fd(), &buf), Ok(()));
        let mut got = [0u8; 32];
        rd.read_exact(&mut got).unwrap();
        assert_eq!(got, buf);
        // The read end refuses writes: the kernel's -EBADF comes back as EBADF.
        assert_eq!(doorbell_write(rd.as_fd(), &buf), Err(libc::EBADF));
        // The same through post_send_doorbell: a one-line error naming the command.
        let e = post_send_doorbell(rd.as_fd(), 7).unwrap_err().to_string();
        assert!(e.contains("POST_SEND") && !e.contains('\n'), "{e}");
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    /// The attribute ids of an encoded ioctl buffer, in order (24-byte header, 16-byte attrs).
    fn ioctl_attr_ids(b: &[u8]) -> Vec<u16> {
        let n = u16::from_le_bytes([b[6], b[7]]) as usize;
        (0..n).map(|i| u16::from_le_bytes([b[24 + 16 * i], b[25 + 16 * i]])).collect()
    }

    fn xrc_qp_args(qp_type: u8, xrcd: Option<u32>) -> CreateQpArgs {
        CreateQpArgs {
            user_handle: 0x1122,
            pd: 3,
            send_cq: 4,
            recv_cq: 5,
            srq: None,
            xrcd,
            qp_type,
            caps: sys::QpCap { max_send_wr: 64, max_recv_wr: 32, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 16 },
            sq_sig_all: false,
            event_fd: None,
        }
    }

    #[test]
    fn open_and_close_xrcd_bytes() {
        // OPEN_XRCD 37: 8 + 16 bytes in (6 words), 4 bytes out (1 word); fd -1, no oflags.
        let req = open_xrcd_req(-1, 0);
        let l = Legacy { name: "OPEN_XRCD", command: sys::CMD_OPEN_XRCD, core_in: req.as_bytes(), drv_in: &[], core_out_len: 4, drv_out_len: 0 };
        let b = encode_write(&l, 0x7000).unwrap();
        assert_eq!(hex(&b), "2500000006000100".to_string() + "0070000000000000" + "ffffffff" + "00000000");
        // A shared domain: the file's fd and O_CREAT.
        let req = open_xrcd_req(7, libc::O_CREAT as u32);
        assert_eq!((req.fd, req.oflags), (7, 0o100));
        // CLOSE_XRCD 38: the handle only, no response.
        let c = sys::CloseXrcd { xrcd_handle: 9 };
        let l = Legacy { name: "CLOSE_XRCD", command: sys::CMD_CLOSE_XRCD, core_in: c.as_bytes(), drv_in: &[], core_out_len: 0, drv_out_len: 0 };
        assert_eq!(hex(&encode_write(&l, 0x7000).unwrap()), "260000000300000009000000");
        // Over ioctl: XRCD.DESTROY with the handle.
        let b = encode_destroy_handle(1, obj::XRCD, method::XRCD_DESTROY, 9).unwrap();
        assert_eq!(u16::from_le_bytes([b[2], b[3]]), 10, "UVERBS_OBJECT_XRCD");
        assert_eq!(ioctl_attr_ids(&b), vec![attr::DESTROY_XRCD_HANDLE]);
    }

    #[test]
    fn create_xsrq_request_carries_type_domain_and_cq() {
        let a = CreateXrcSrqArgs { user_handle: 0xabc, pd: 1, xrcd: 2, cq: 3, max_wr: 512, max_sge: 1, srq_limit: 0 };
        let req = create_xrc_srq_req(&a);
        let mlx5_drv = [0xeeu8; 32];
        let l = Legacy { name: "CREATE_XSRQ", command: sys::CMD_CREATE_XSRQ, core_in: req.as_bytes(), drv_in: &mlx5_drv, core_out_len: 16, drv_out_len: 8 };
        let b = encode_write(&l, 0x8000).unwrap();
        // 8 + 48 + 32 = 88 bytes = 22 words in; 16 + 8 = 24 bytes = 6 words out.
        assert_eq!(&b[..8], &[39, 0, 0, 0, 22, 0, 6, 0]);
        let words: Vec<u32> = b[24..56].chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
        // srq_type XRC, pd, max_wr, max_sge, srq_limit, max_num_tags, xrcd, cq.
        assert_eq!(words, vec![1, 1, 512, 1, 0, 0, 2, 3]);
        assert_eq!(&b[56..], &mlx5_drv);
    }

    #[test]
    fn xrc_target_qp_names_the_domain_not_pd_or_cqs() {
        // write: pd_handle carries the XRC domain; both CQ handles 0.
        let a = xrc_qp_args(sys::IB_UVERBS_QPT_XRC_TGT, Some(8));
        let r = create_qp_req(&a);
        assert_eq!((r.pd_handle, r.send_cq_handle, r.recv_cq_handle, r.qp_type), (8, 0, 0, 10));
        assert_eq!((r.max_recv_wr, r.max_recv_sge), (32, 1));
        // ioctl: the XRCD attribute, no PD / SEND_CQ / RECV_CQ.
        let p = QpCreatePtrs::default();
        let (b, _) = encode_qp_create(1, &a, &[], 0, &p).unwrap();
        let ids = ioctl_attr_ids(&b);
        assert!(ids.contains(&attr::CREATE_QP_XRCD_HANDLE));
        for no in [attr::CREATE_QP_PD_HANDLE, attr::CREATE_QP_SEND_CQ_HANDLE, attr::CREATE_QP_RECV_CQ_HANDLE] {
            assert!(!ids.contains(&no), "attribute {no} in an XRC_TGT create: {ids:?}");
        }
        // Without a domain it is refused before reaching the kernel.
        let bad = xrc_qp_args(sys::IB_UVERBS_QPT_XRC_TGT, None);
        assert!(encode_qp_create(1, &bad, &[], 0, &p).is_err());
    }

    #[test]
    fn xrc_initiator_qp_has_a_send_side_only() {
        let a = xrc_qp_args(sys::IB_UVERBS_QPT_XRC_INI, None);
        let r = create_qp_req(&a);
        assert_eq!((r.pd_handle, r.send_cq_handle, r.recv_cq_handle, r.qp_type), (3, 4, 0, 9));
        assert_eq!((r.max_send_wr, r.max_recv_wr, r.max_recv_sge, r.max_inline_data), (64, 0, 0, 16));
        let p = QpCreatePtrs::default();
        let (b, _) = encode_qp_create(1, &a, &[], 0, &p).unwrap();
        let ids = ioctl_attr_ids(&b);
        assert!(ids.contains(&attr::CREATE_QP_PD_HANDLE) && ids.contains(&attr::CREATE_QP_SEND_CQ_HANDLE));
        assert!(!ids.contains(&attr::CREATE_QP_RECV_CQ_HANDLE) && !ids.contains(&attr::CREATE_QP_XRCD_HANDLE));
        // An RC QP is unchanged: both CQs, its receive capacities.
        let rc = create_qp_req(&xrc_qp_args(sys::IB_UVERBS_QPT_RC, None));
        assert_eq!((rc.recv_cq_handle, rc.max_recv_wr), (5, 32));
    }

    #[test]
    fn doorbell_bytes() {
        // Captured from rdma-core 44 on 6.1 (ib_write_bw client, every doorbell identical).
        let b = encode_post_send_doorbell(0x7fff622c55ac, 3);
        assert_eq!(hex(&b), "1c00000008000100ac552c62ff7f000003000000000000000000000080000000");
    }

    #[test]
    fn req_notify_bytes() {
        let b = encode_req_notify_cq(2, true);
        assert_eq!(hex(&b), "170000000400000002000000" .to_string() + "01000000");
    }

    #[test]
    fn write_framing_words() {
        // REG_MR: 8 + 40 bytes in (12 words), 12 bytes out (3 words).
        let req = reg_mr_req(0x1000, 0x2000, 0x1000, 0, 7);
        let l = Legacy { name: "REG_MR", command: sys::CMD_REG_MR, core_in: req.as_bytes(), drv_in: &[], core_out_len: 12, drv_out_len: 0 };
        let b = encode_write(&l, 0xabcdef).unwrap();
        assert_eq!(b.len(), 48);
        assert_eq!(&b[..8], &[9, 0, 0, 0, 12, 0, 3, 0]);
        assert_eq!(&b[8..16], &0xabcdefu64.to_le_bytes());
        // Driver data appended after the core request, driver response counted in out_words.
        let drv = [1u8; 8];
        let l = Legacy { drv_in: &drv, drv_out_len: 16, ..l };
        let b = encode_write(&l, 0).unwrap();
        assert_eq!(b.len(), 56);
        assert_eq!(&b[4..8], &[14, 0, 7, 0]);
        assert_eq!(&b[48..], &drv);
        // Not a multiple of 4.
        let odd = [0u8; 3];
        assert!(encode_write(&Legacy { drv_in: &odd, ..l }, 0).is_err());
        // No response field: MODIFY_QP 8 + 112 = 120 bytes = 30 words, out 0.
        let m = sys::ModifyQp::default();
        let l = Legacy { name: "MODIFY_QP", command: sys::CMD_MODIFY_QP, core_in: m.as_bytes(), drv_in: &[], core_out_len: 0, drv_out_len: 0 };
        let b = encode_write(&l, 0x1234).unwrap();
        assert_eq!(&b[..8], &[26, 0, 0, 0, 30, 0, 0, 0]);
        assert!(b[8..].iter().all(|&x| x == 0), "no response pointer patched into MODIFY_QP");
    }

    #[test]
    fn query_qp_framing() {
        // QUERY_QP: 8 + 16 bytes in (6 words), the 128-byte response (32 words); the response
        // pointer goes into the request's first field, handle and IBV_QP_AV (0x80) follow.
        let req = sys::QueryQp { response: 0, qp_handle: 5, attr_mask: 0x80 };
        let l = Legacy {
            name: "QUERY_QP",
            command: sys::CMD_QUERY_QP,
            core_in: req.as_bytes(),
            drv_in: &[],
            core_out_len: std::mem::size_of::<sys::QueryQpResp>(),
            drv_out_len: 0,
        };
        let b = encode_write(&l, 0x7000).unwrap();
        assert_eq!(b.len(), 24);
        assert_eq!(&b[..8], &[25, 0, 0, 0, 6, 0, 32, 0]);
        assert_eq!(&b[8..16], &0x7000u64.to_le_bytes());
        assert_eq!(&b[16..24], &[5, 0, 0, 0, 0x80, 0, 0, 0]);
    }

    #[test]
    fn ex_write_framing() {
        let req = sys::ExQueryDevice::default();
        let l = Legacy {
            name: "EX_QUERY_DEVICE",
            command: sys::IB_USER_VERBS_CMD_FLAG_EXTENDED | 1,
            core_in: req.as_bytes(),
            drv_in: &[],
            core_out_len: 304,
            drv_out_len: 0,
        };
        let b = encode_write(&l, 0x5000).unwrap();
        assert_eq!(b.len(), 8 + 16 + 8);
        assert_eq!(&b[..8], &[1, 0, 0, 0x80, 1, 0, 38, 0]);
        assert_eq!(&b[8..16], &0x5000u64.to_le_bytes());
        assert_eq!(&b[16..24], &[0u8; 8]);
        // Driver data: 8-byte units in provider_in/out_words.
        let drv = [0u8; 16];
        let b = encode_write(&Legacy { drv_in: &drv, drv_out_len: 8, ..l }, 0x5000).unwrap();
        assert_eq!(&b[16..20], &[2, 0, 1, 0]);
        assert!(encode_write(&Legacy { drv_in: &[0u8; 4], ..l }, 0).is_err());
        // No output at all: response must be 0.
        let b = encode_write(&Legacy { core_out_len: 0, ..l }, 0x5000).unwrap();
        assert_eq!(&b[8..16], &[0u8; 8]);
    }

    #[test]
    fn ex_modify_qp_framing_with_driver_data() {
        // The mlx5 DCT's modify to RTR: ib_uverbs_ex_modify_qp (120 B) + mlx5_ib_modify_qp (16 B),
        // answered by ib_uverbs_ex_modify_qp_resp (8 B) + mlx5_ib_modify_qp_resp (16 B).
        let mut req = sys::ExModifyQp::default();
        req.base.qp_handle = 7;
        req.base.attr_mask = 0x8181;
        req.base.qp_state = 2;
        let drv = [0u8; 16];
        let l = Legacy {
            name: "EX_MODIFY_QP",
            command: sys::IB_USER_VERBS_CMD_FLAG_EXTENDED | sys::CMD_EX_MODIFY_QP,
            core_in: req.as_bytes(),
            drv_in: &drv,
            core_out_len: core::mem::size_of::<sys::ExModifyQpResp>(),
            drv_out_len: 16,
        };
        let b = encode_write(&l, 0x7000).unwrap();
        assert_eq!(b.len(), 8 + 16 + 120 + 16);
        // command 26 | EXTENDED; in_words = 120/8, out_words = 8/8 (8-byte units, headers excluded)
        assert_eq!(&b[..8], &[26, 0, 0, 0x80, 15, 0, 1, 0]);
        assert_eq!(&b[8..16], &0x7000u64.to_le_bytes());
        assert_eq!(&b[16..20], &[2, 0, 2, 0], "provider in/out words");
        assert_eq!(&b[24..24 + 120], req.as_bytes());
    }

    #[test]
    fn invoke_write_patches_response_and_inlines() {
        let req = sys::AllocPd::default();
        let l = Legacy { name: "ALLOC_PD", command: 3, core_in: req.as_bytes(), drv_in: &[], core_out_len: 4, drv_out_len: 0 };
        let (b, core) = encode_invoke_write(&l, 14, &InvokePtrs { core_out: 0x7fff622c557c, ..Default::default() }).unwrap();
        assert_eq!(core, 0x7fff622c557cu64.to_le_bytes());
        assert_eq!(
            hex(&b),
            "480000000000030000000000000000000e000000000000000200080001000000030000000000000000000800010000007c552c62ff7f000001000400010000007c552c62ff7f0000"
        );
    }

    #[test]
    fn hints() {
        assert!(command_error("REG_MR", libc::ENOMEM).to_string().contains("ulimit -l"));
        assert!(command_error("GET_CONTEXT", libc::EACCES).to_string().contains("/dev/infiniband/uverbs"));
        assert!(command_error("MODIFY_QP", libc::EINVAL).to_string().contains("GID index"));
        assert!(command_error("CREATE_CQ", libc::EOPNOTSUPP).to_string().contains("not supported"));
        assert!(command_error("QUERY_PORT", libc::EPROTONOSUPPORT).to_string().contains("write transport"));
        assert!(command_error("X", 9999).hint.is_none());
    }

    #[test]
    fn transport_parse() {
        assert_eq!(Transport::parse("IOCTL"), Some(Transport::Ioctl));
        assert_eq!(Transport::parse(" write "), Some(Transport::Write));
        assert_eq!(Transport::parse("x"), None);
        assert_eq!(Transport::default(), Transport::Write);
    }

    #[test]
    fn parse_response_checks_length() {
        assert!(parse_response::<sys::RegMrResp>("REG_MR", &[0u8; 11]).is_err());
        let r = parse_response::<sys::RegMrResp>("REG_MR", &[1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 9]).unwrap();
        assert_eq!((r.mr_handle, r.lkey, r.rkey), (1, 2, 3));
    }

    #[test]
    fn attach_detach_mcast_bytes() {
        // write(): header (command 30/31, in_words (8 + 24) / 4 = 8, out_words 0), then the
        // kernel struct: gid[16], qp_handle, mlid, reserved. perftest's default MGID
        // ff01:0:0:2:c985:: on QP handle 3, MLID 0 (RoCE).
        let gid = [0xff, 1, 0, 0, 0, 2, 0xc9, 0x85, 0, 0, 0, 0, 0, 0, 0, 0];
        let req = attach_mcast_req(3, gid, 0);
        let l = Legacy { name: "ATTACH_MCAST", command: sys::CMD_ATTACH_MCAST, core_in: req.as_bytes(), drv_in: &[], core_out_len: 0, drv_out_len: 0 };
        let b = encode_write(&l, 0).unwrap();
        assert_eq!(hex(&b), "1e00000008000000ff0100000002c9850000000000000000030000000000" .to_string() + "0000");
        let req = sys::DetachMcast { gid, qp_handle: 0x11, mlid: 0xc001, reserved: 0 };
        let l = Legacy { name: "DETACH_MCAST", command: sys::CMD_DETACH_MCAST, core_in: req.as_bytes(), drv_in: &[], core_out_len: 0, drv_out_len: 0 };
        let b = encode_write(&l, 0).unwrap();
        assert_eq!(hex(&b), "1f00000008000000ff0100000002c98500000000000000001100000001c0" .to_string() + "0000");
    }

    #[test]
    fn driver_method_encoding_and_refusal() {
        // mlx5 DEVX_OBJ_DESTROY: object 0x1001, method 0x1001, one IDR attribute 0x1000.
        let m = DriverMethod { name: "DEVX_OBJ_DESTROY", object: 0x1001, method: 0x1001, idr_in: Some((0x1000, 7)), ..Default::default() };
        let b = encode_driver_method(1, &m, &[], &[]).unwrap();
        assert_eq!(hex(&b), "280001100110010000000000000000000100000000000000".to_string() + "00100000010000000700000000000000");
        // DEVX_OTHER: inputs before outputs; a short input travels inline.
        let m = DriverMethod { name: "X", object: 0x1000, method: 0x1000, ins: vec![(0x1000, &[1, 2][..])], outs: vec![(0x1001, 16)], ..Default::default() };
        let b = encode_driver_method(1, &m, &[0xdead], &[0x2000]).unwrap();
        assert_eq!(&b[24..40], &[0x00, 0x10, 2, 0, 1, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&b[40..56], &[0x01, 0x10, 16, 0, 1, 0, 0, 0, 0, 0x20, 0, 0, 0, 0, 0, 0]);
        // On a fd that is not uverbs the call fails with the errno and zeroed outputs.
        // SAFETY: memfd_create with a valid C string; the descriptor is ours alone.
        let fd = unsafe { libc::memfd_create(c"drv-mock".as_ptr(), libc::MFD_CLOEXEC) };
        assert!(fd >= 0);
        // SAFETY: `fd` was just created and nothing else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let m = DriverMethod { name: "X", object: 0x1001, method: 0x1000, idr_new: Some(0x1000), ins: vec![(0x1001, &[0u8; 16][..])], outs: vec![(0x1002, 16)], ..Default::default() };
        let r = driver_method(std::os::fd::AsFd::as_fd(&fd), 1, &m).unwrap();
        assert_eq!(r.errno, Some(libc::ENOTTY));
        assert_eq!((r.handle, r.outs), (None, vec![vec![0u8; 16]]));
    }
}
