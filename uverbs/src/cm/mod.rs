//! The RDMA connection manager spoken directly: the kernel's rdma_ucm ABI on
//! `/dev/infiniband/rdma_cm`, no librdmacm.
//!
//! - [`sys`]: the raw ABI structs and numbers.
//! - [`wire`]: pure encode/decode (command buffers, sockaddrs, events, query answers,
//!   INIT_QP_ATTR → [`QpAttr`]); golden-tested against captured bytes.
//! - [`CmChannel`]: one opened `rdma_cm` fd (librdmacm's "event channel"); every id created on it
//!   reports its events there. [`CmChannel::get_event`] waits with poll(2), always bounded.
//! - [`CmId`]: one connection-manager id, destroyed on drop; the commands as methods, plus
//!   helpers for the usual sequences ([`CmId::resolve`], [`CmId::complete_connect`],
//!   [`CmId::accept_qp`]).
//!
//! The QP is the caller's: created with the verbs objects on the device the id is bound to
//! ([`CmId::device`]), moved through INIT/RTR/RTS with the attributes the kernel computes
//! ([`CmId::qp_attr`], [`CmId::modify_qp`]), as librdmacm does for a user QP.
//!
//! Event routing: GET_EVENT returns the oldest event of *any* id on the channel. Waiting on one
//! id ([`CmId::wait_event`]) keeps events of other ids in a queue on the channel, so several ids
//! may share a channel. Nothing needs acknowledging to the kernel: it counts an event as
//! reported once GET_EVENT has copied it out (DESTROY_ID returns that count), and frees the
//! ones never fetched when the id is destroyed.

#[forbid(unsafe_code)]
pub mod sys;
#[forbid(unsafe_code)]
pub mod wire;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zerocopy::{FromZeros, IntoBytes};

use crate::discovery::{self, DeviceInfo};
use crate::error::{Error, Result};
use crate::objects::{Qp, QpAttr, QpAttrMask};
use crate::provider::{Provider, QpState, QpType};

pub use wire::{
    limits, reject_reason_name, AddrInfo, CmAddr, CmEvent, CmEventKind, ConnParam, EventConnParam, EventUdParam,
    IbAddr, PathRecord, PortSpace, RouteInfo,
};

/// The rdma_cm character device.
pub const RDMA_CM_PATH: &str = "/dev/infiniband/rdma_cm";
/// Where the kernel publishes the rdma_ucm ABI version (misc device; older kernels used
/// `/sys/class/infiniband_ucma/abi_version`).
pub const ABI_PATHS: [&str; 2] = ["/sys/class/misc/rdma_cm/abi_version", "/sys/class/infiniband_ucma/abi_version"];

/// The hint for an address that maps to no RDMA device.
pub fn hint_addr(dst: &str) -> String {
    format!(
        "address {dst} does not resolve to an RDMA device: use the IP of the RDMA netdev, e.g. rxe's parent \
         (rdma link show; ip -br addr)"
    )
}

/// The hint for a route failure; special-cases loopback, which rdma_cm cannot route.
pub fn hint_route(dst: &SocketAddr) -> String {
    if dst.ip().is_loopback() {
        format!("rdma_cm cannot route to {}; give the RDMA interface's address", dst.ip())
    } else {
        format!("no RDMA route to {}: check that it is reachable through the RDMA netdev (ip route get {})", dst.ip(), dst.ip())
    }
}

/// The error for an event that ended a wait unsuccessfully (ADDR_ERROR, ROUTE_ERROR,
/// CONNECT_ERROR, UNREACHABLE, REJECTED, DEVICE_REMOVAL, an early DISCONNECTED), or `None` for
/// events that are not failures. `peer` names the other side in messages.
pub fn event_error(ev: &CmEvent, waiting_for: &str, peer: Option<&SocketAddr>) -> Option<Error> {
    let who = peer.map(|p| p.to_string()).unwrap_or_else(|| "the peer".into());
    let errno = (ev.status < 0).then_some(-ev.status);
    let with_errno = |mut e: Error| {
        e.errno = errno;
        e
    };
    let e = match ev.kind {
        CmEventKind::AddrError => with_errno(Error::msg(format!("rdma_cm resolve address {who}"), "RDMA_CM_EVENT_ADDR_ERROR"))
            .with_hint(hint_addr(&peer.map(|p| p.ip().to_string()).unwrap_or(who.clone()))),
        CmEventKind::RouteError => {
            let e = with_errno(Error::msg(format!("rdma_cm resolve route to {who}"), "RDMA_CM_EVENT_ROUTE_ERROR"));
            match peer {
                Some(p) => e.with_hint(hint_route(p)),
                None => e,
            }
        }
        CmEventKind::Rejected => {
            let r = ev.status;
            let mut e = Error::msg(
                format!("rdma_cm connect to {who}"),
                format!("connection rejected (RDMA_CM_EVENT_REJECTED, reason {r} {})", reject_reason_name(r)),
            );
            e = match r {
                8 => e.with_hint(format!(
                    "nobody listens on that address and port: start the server first, or check the {}",
                    crate::knob::named(crate::knob::Knob::ServerPort)
                )),
                28 => e.with_hint("the server refused the connection"),
                _ => e,
            };
            e
        }
        CmEventKind::Unreachable => with_errno(Error::msg(
            format!("rdma_cm connect to {who}"),
            "peer unreachable (RDMA_CM_EVENT_UNREACHABLE)",
        ))
        .with_hint("the connection request got no answer: is the server running, and is its address the RDMA interface's?"),
        CmEventKind::ConnectError => with_errno(Error::msg(
            format!("rdma_cm connect to {who}"),
            "connection failed (RDMA_CM_EVENT_CONNECT_ERROR)",
        )),
        CmEventKind::DeviceRemoval => Error::msg(format!("rdma_cm {waiting_for}"), "the RDMA device was removed (RDMA_CM_EVENT_DEVICE_REMOVAL)"),
        CmEventKind::Disconnected if waiting_for != "DISCONNECTED" => {
            Error::msg(format!("rdma_cm {waiting_for}"), format!("{who} disconnected (RDMA_CM_EVENT_DISCONNECTED)"))
        }
        CmEventKind::AddrChange => Error::msg(format!("rdma_cm {waiting_for}"), "the local address changed (RDMA_CM_EVENT_ADDR_CHANGE)"),
        _ => return None,
    };
    Some(e)
}

// ================================================================================================
// Channel
// ================================================================================================

/// An opened `/dev/infiniband/rdma_cm` (librdmacm's event channel).
pub struct CmChannel {
    fd: OwnedFd,
    /// Events fetched while waiting for another id.
    pending: Mutex<VecDeque<CmEvent>>,
    next_uid: AtomicU64,
}

impl std::fmt::Debug for CmChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CmChannel").field("fd", &self.fd.as_raw_fd()).finish()
    }
}

/// The rdma_ucm ABI the kernel reports, if it publishes one.
pub fn kernel_abi_version() -> Option<u32> {
    ABI_PATHS.iter().find_map(|p| discovery::sysfs::read_attr(std::path::Path::new(p)).ok()).and_then(|t| t.trim().parse().ok())
}

impl CmChannel {
    /// Open the rdma_cm device (O_RDWR | O_CLOEXEC | O_NONBLOCK: GET_EVENT then never sleeps in
    /// the kernel; waits are poll(2) with a timeout) after checking the ABI version.
    pub fn open() -> Result<Arc<Self>> {
        if let Some(v) = kernel_abi_version() {
            if !(sys::RDMA_USER_CM_MIN_ABI_VERSION..=sys::RDMA_USER_CM_ABI_VERSION).contains(&v) {
                return Err(Error::msg("open rdma_cm", format!("kernel rdma_ucm ABI {v}, this build speaks {}..={}", sys::RDMA_USER_CM_MIN_ABI_VERSION, sys::RDMA_USER_CM_ABI_VERSION)));
            }
        }
        let path = std::ffi::CString::new(RDMA_CM_PATH).expect("no NUL");
        // SAFETY: a NUL-terminated path; the returned fd (if any) is owned below.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC | libc::O_NONBLOCK) };
        if fd < 0 {
            let e = Error::last_os(format!("open {RDMA_CM_PATH}"));
            let hint = match e.errno {
                Some(libc::ENOENT) | Some(libc::ENODEV) | Some(libc::ENXIO) => {
                    "load the RDMA connection manager (modprobe rdma_ucm) and an RDMA driver"
                }
                Some(libc::EACCES) | Some(libc::EPERM) => "no permission on /dev/infiniband/rdma_cm (run as root or fix the udev rules)",
                _ => "",
            };
            return Err(if hint.is_empty() { e } else { e.with_hint(hint) });
        }
        // SAFETY: `fd` is a freshly opened descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Arc::new(CmChannel { fd, pending: Mutex::new(VecDeque::new()), next_uid: AtomicU64::new(1) }))
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// A fresh cookie for an id (echoed by the kernel in the id's events).
    pub fn next_uid(&self) -> u64 {
        self.next_uid.fetch_add(1, Ordering::Relaxed)
    }

    /// One command: `write(fd, buf)`. The kernel answers with the full length or an errno.
    ///
    /// # Safety
    /// Every pointer inside `buf` (a `response` or `optval`) must be valid for the kernel to
    /// write (response: `out` bytes) or read (optval: `optlen` bytes) for the call's duration.
    unsafe fn write_cmd(&self, what: &str, buf: &[u8]) -> Result<()> {
        loop {
            // SAFETY: `buf` is a valid readable slice; embedded pointers are the caller's
            // contract.
            let n = unsafe { libc::write(self.fd.as_raw_fd(), buf.as_ptr().cast(), buf.len()) };
            if n < 0 {
                let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
                if e == libc::EINTR {
                    continue;
                }
                return Err(Error::errno(format!("rdma_cm {what}"), e));
            }
            if n as usize != buf.len() {
                return Err(Error::msg(format!("rdma_cm {what}"), format!("short write: {n} of {} bytes", buf.len())));
            }
            return Ok(());
        }
    }

    /// Create an id in port space `ps` for QPs of `qp_type`.
    pub fn create_id(self: &Arc<Self>, ps: PortSpace, qp_type: QpType) -> Result<CmId> {
        let uid = self.next_uid();
        let mut resp = sys::CreateIdResp::new_zeroed();
        let buf = wire::create_id(uid, resp.as_mut_bytes().as_mut_ptr() as u64, ps, qp_type);
        // SAFETY: `resp` is 4 writable bytes (= out) alive across the call.
        unsafe { self.write_cmd("CREATE_ID", &buf)? };
        Ok(CmId { chan: self.clone(), id: resp.id, uid, qp_type, peer: None })
    }

    /// GET_EVENT once without waiting (the fd is non-blocking): `None` if no event is queued.
    fn fetch_event(&self) -> Result<Option<CmEvent>> {
        let mut resp = sys::EventResp::new_zeroed();
        let buf = wire::get_event(resp.as_mut_bytes().as_mut_ptr() as u64);
        // SAFETY: `resp` is 336 writable bytes (= out) alive across the call.
        match unsafe { self.write_cmd("GET_EVENT", &buf) } {
            Ok(()) => Ok(Some(wire::decode_event(resp.as_bytes())?)),
            Err(e) if e.errno == Some(libc::EAGAIN) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The next event of any id on this channel, waiting up to `timeout`; `None` on timeout.
    /// Events queued while waiting on a particular id come first.
    pub fn get_event(&self, timeout: Duration) -> Result<Option<CmEvent>> {
        if let Some(ev) = self.pending.lock().unwrap_or_else(|p| p.into_inner()).pop_front() {
            return Ok(Some(ev));
        }
        self.next_from_kernel(Instant::now() + timeout)
    }

    fn next_from_kernel(&self, deadline: Instant) -> Result<Option<CmEvent>> {
        loop {
            if let Some(ev) = self.fetch_event()? {
                return Ok(Some(ev));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
            let mut pfd = libc::pollfd { fd: self.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
            // SAFETY: one valid pollfd, alive for the call.
            let r = unsafe { libc::poll(&mut pfd, 1, ms) };
            if r < 0 {
                let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
                if e != libc::EINTR {
                    return Err(Error::errno("poll rdma_cm channel", e));
                }
            }
        }
    }

    /// The next event for kernel id `id`, keeping other ids' events queued.
    fn event_for(&self, id: u32, deadline: Instant) -> Result<Option<CmEvent>> {
        {
            let mut q = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(i) = q.iter().position(|e| e.id == id && e.kind != CmEventKind::ConnectRequest) {
                return Ok(q.remove(i));
            }
        }
        loop {
            match self.next_from_kernel(deadline)? {
                None => return Ok(None),
                // A CONNECT_REQUEST's `id` is the new connection's; it belongs to the listener,
                // which the event names by uid.
                Some(ev) if ev.id == id && ev.kind != CmEventKind::ConnectRequest => return Ok(Some(ev)),
                Some(ev) => self.pending.lock().unwrap_or_else(|p| p.into_inner()).push_back(ev),
            }
        }
    }

    /// The next CONNECT_REQUEST for the listener with cookie `uid`.
    fn request_for(&self, uid: u64, deadline: Instant) -> Result<Option<CmEvent>> {
        {
            let mut q = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(i) = q.iter().position(|e| e.uid == uid && e.kind == CmEventKind::ConnectRequest) {
                return Ok(q.remove(i));
            }
        }
        loop {
            match self.next_from_kernel(deadline)? {
                None => return Ok(None),
                Some(ev) if ev.uid == uid && ev.kind == CmEventKind::ConnectRequest => return Ok(Some(ev)),
                Some(ev) => self.pending.lock().unwrap_or_else(|p| p.into_inner()).push_back(ev),
            }
        }
    }

    /// Take ownership of the new id a CONNECT_REQUEST carries (call once per request; dropping
    /// the returned id destroys it, which rejects the connection if not yet accepted).
    pub fn adopt_request(self: &Arc<Self>, ev: &CmEvent) -> Result<CmId> {
        if ev.kind != CmEventKind::ConnectRequest {
            return Err(Error::msg("rdma_cm adopt connection", format!("{} is not a connect request", ev.kind.name())));
        }
        Ok(CmId { chan: self.clone(), id: ev.id, uid: self.next_uid(), qp_type: QpType::Rc, peer: None })
    }
}

// ================================================================================================
// Ids
// ================================================================================================

/// The device and port an id is bound to, as the verbs layer knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CmDevice {
    pub info: DeviceInfo,
    pub port: u8,
    pub addr: AddrInfo,
}

/// One rdma_cm id. Destroyed (DESTROY_ID) on drop.
pub struct CmId {
    chan: Arc<CmChannel>,
    id: u32,
    uid: u64,
    qp_type: QpType,
    /// The remote address, once known (resolve or connect request), for messages.
    peer: Option<SocketAddr>,
}

impl std::fmt::Debug for CmId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CmId").field("id", &self.id).field("uid", &self.uid).field("peer", &self.peer).finish()
    }
}

impl CmId {
    pub fn handle(&self) -> u32 {
        self.id
    }
    pub fn uid(&self) -> u64 {
        self.uid
    }
    pub fn channel(&self) -> &Arc<CmChannel> {
        &self.chan
    }
    /// The peer address learnt from resolve or the connect request.
    pub fn peer(&self) -> Option<SocketAddr> {
        self.peer
    }
    pub fn set_qp_type(&mut self, t: QpType) {
        self.qp_type = t;
    }

    fn cmd(&self, what: &str, buf: &[u8]) -> Result<()> {
        // SAFETY: only for commands without embedded pointers (response 0, no optval).
        unsafe { self.chan.write_cmd(what, buf) }
    }

    /// BIND to a local address (port 0: the kernel picks one).
    pub fn bind(&self, addr: &SocketAddr) -> Result<()> {
        self.cmd("BIND", &wire::bind(self.id, addr)).map_err(|e| match e.errno {
            Some(libc::EADDRINUSE) => e.with_hint(format!("port {} is taken by another rdma_cm listener", addr.port())),
            Some(libc::EADDRNOTAVAIL) | Some(libc::ENODEV) => e.with_hint(hint_addr(&addr.ip().to_string())),
            _ => e,
        })
    }

    pub fn listen(&self, backlog: u32) -> Result<()> {
        self.cmd("LISTEN", &wire::listen(self.id, backlog))
    }

    /// RESOLVE_ADDR (asynchronous: ADDR_RESOLVED or ADDR_ERROR follows).
    pub fn resolve_addr(&mut self, src: Option<&SocketAddr>, dst: &SocketAddr, timeout: Duration) -> Result<()> {
        self.peer = Some(*dst);
        let ms = timeout.as_millis().min(u32::MAX as u128) as u32;
        self.cmd(&format!("RESOLVE_ADDR {dst}"), &wire::resolve_addr(self.id, src, dst, ms)).map_err(|e| match e.errno {
            Some(libc::EADDRNOTAVAIL) | Some(libc::ENODEV) | Some(libc::ENETUNREACH) => e.with_hint(hint_addr(&dst.ip().to_string())),
            _ => e,
        })
    }

    /// RESOLVE_ROUTE (asynchronous: ROUTE_RESOLVED or ROUTE_ERROR follows).
    pub fn resolve_route(&self, timeout: Duration) -> Result<()> {
        let ms = timeout.as_millis().min(u32::MAX as u128) as u32;
        let to = self.peer.map(|p| format!(" to {p}")).unwrap_or_default();
        self.cmd(&format!("RESOLVE_ROUTE{to}"), &wire::resolve_route(self.id, ms)).map_err(|e| match self.peer {
            Some(p) if matches!(e.errno, Some(libc::ENODEV) | Some(libc::EINVAL) | Some(libc::ENETUNREACH) | Some(libc::EHOSTUNREACH)) => {
                e.with_hint(hint_route(&p))
            }
            _ => e,
        })
    }

    /// Client side of address and route resolution: RESOLVE_ADDR → ADDR_RESOLVED →
    /// RESOLVE_ROUTE → ROUTE_RESOLVED, each wait bounded by `timeout`.
    pub fn resolve(&mut self, dst: &SocketAddr, timeout: Duration) -> Result<()> {
        self.resolve_addr(None, dst, timeout)?;
        self.expect(CmEventKind::AddrResolved, timeout)?;
        self.resolve_route(timeout)?;
        self.expect(CmEventKind::RouteResolved, timeout)?;
        Ok(())
    }

    fn query_raw(&self, option: u32, out: &mut [u8]) -> Result<()> {
        let name = match option {
            sys::QUERY_ADDR => "QUERY(ADDR)",
            sys::QUERY_PATH => "QUERY(PATH)",
            _ => "QUERY(GID)",
        };
        let buf = wire::query(out.as_mut_ptr() as u64, self.id, option, out.len());
        // SAFETY: `out` is `out.len()` writable bytes (= out) alive across the call.
        unsafe { self.chan.write_cmd(name, &buf) }
    }

    /// QUERY(ADDR): the device (node GUID, device index), port and both addresses.
    pub fn query_addr(&self) -> Result<AddrInfo> {
        let mut b = [0u8; size_of::<sys::QueryAddrResp>()];
        self.query_raw(sys::QUERY_ADDR, &mut b)?;
        wire::decode_query_addr(&b)
    }

    /// QUERY(GID): as [`CmId::query_addr`] but the addresses are AF_IB: the source and
    /// destination GIDs.
    pub fn query_gid(&self) -> Result<AddrInfo> {
        let mut b = [0u8; size_of::<sys::QueryAddrResp>()];
        self.query_raw(sys::QUERY_GID, &mut b)?;
        wire::decode_query_addr(&b)
    }

    /// QUERY(PATH): the resolved path records (after ROUTE_RESOLVED, or on a connected id).
    pub fn query_path(&self) -> Result<Vec<PathRecord>> {
        // Room for 6 paths, as librdmacm asks.
        let mut b = [0u8; size_of::<sys::QueryPathResp>() + 6 * size_of::<sys::PathRecData>()];
        self.query_raw(sys::QUERY_PATH, &mut b)?;
        wire::decode_query_path(&b)
    }

    /// QUERY_ROUTE (legacy single answer: addresses, node GUID, port and the first path's GIDs).
    pub fn query_route(&self) -> Result<RouteInfo> {
        let mut b = [0u8; size_of::<sys::QueryRouteResp>()];
        let buf = wire::query_route(b.as_mut_ptr() as u64, self.id);
        // SAFETY: `b` is 208 writable bytes (= out) alive across the call.
        unsafe { self.chan.write_cmd("QUERY_ROUTE", &buf)? };
        wire::decode_query_route(&b)
    }

    /// The verbs device and port the id is bound to (after ADDR_RESOLVED, or on the id of a
    /// connect request): QUERY(ADDR), then the device with that node GUID (and, if several
    /// share it, that kernel index).
    pub fn device(&self) -> Result<CmDevice> {
        let addr = self.query_addr()?;
        let devs = discovery::list_devices()?;
        let info = pick_device(&devs, &addr).ok_or_else(|| {
            let names: Vec<String> = devs.iter().map(|d| format!("{} {:016x}", d.ibdev, d.node_guid)).collect();
            Error::msg(
                "rdma_cm map id to a device",
                format!("no uverbs device has node GUID {:016x} (index {}); devices: {}", addr.node_guid, addr.ibdev_index, names.join(", ")),
            )
            .with_hint("the rdma_cm id is bound to a device userspace cannot open (missing uverbs char device?)")
        })?;
        Ok(CmDevice { info: info.clone(), port: addr.port_num, addr })
    }

    /// INIT_QP_ATTR: the attributes and mask the kernel computes for moving a QP to `state`.
    pub fn qp_attr(&self, state: QpState) -> Result<(QpAttr, QpAttrMask)> {
        let mut r = sys::QpAttrResp::new_zeroed();
        let buf = wire::init_qp_attr(r.as_mut_bytes().as_mut_ptr() as u64, self.id, state);
        // SAFETY: `r` is 144 writable bytes (= out) alive across the call.
        unsafe { self.chan.write_cmd(&format!("INIT_QP_ATTR({state:?})"), &buf)? };
        Ok(wire::qp_attr_from_kernel(&r))
    }

    /// Move `qp` to `state` with the kernel's attributes.
    pub fn modify_qp<P: Provider>(&self, qp: &mut Qp<P>, state: QpState) -> Result<()> {
        self.modify_qp_with(qp, state, |_, _| {})
    }

    /// Move `qp` to `state` with the kernel's attributes, adjusted by `f` first.
    pub fn modify_qp_with<P: Provider>(&self, qp: &mut Qp<P>, state: QpState, f: impl FnOnce(&mut QpAttr, &mut QpAttrMask)) -> Result<()> {
        let (mut a, mut m) = self.qp_attr(state)?;
        f(&mut a, &mut m);
        qp.modify(&a, m)
    }

    /// CONNECT (RC/UC: ≤ 56 bytes of private data).
    pub fn connect(&self, p: &ConnParam) -> Result<()> {
        let max = if self.qp_type == QpType::Ud { limits::UD_CONNECT } else { limits::CONNECT };
        check_private("CONNECT", p.private_data.len(), max)?;
        let to = self.peer.map(|p| format!(" to {p}")).unwrap_or_default();
        self.cmd(&format!("CONNECT{to}"), &wire::connect(self.id, p))
    }

    /// ACCEPT on the passive side (≤ 196 bytes of private data). Future events of this id
    /// carry this id's uid.
    pub fn accept(&self, p: &ConnParam) -> Result<()> {
        let max = if self.qp_type == QpType::Ud { limits::UD_ACCEPT } else { limits::ACCEPT };
        check_private("ACCEPT", p.private_data.len(), max)?;
        self.cmd("ACCEPT", &wire::accept(self.uid, self.id, Some(p)))
    }

    /// The active side's ACCEPT after CONNECT_RESPONSE (no parameters): the kernel sends the
    /// RTU; the connection is established (librdmacm reports ESTABLISHED here).
    pub fn accept_active(&self) -> Result<()> {
        self.cmd("ACCEPT (RTU)", &wire::accept(0, self.id, None))
    }

    /// The active side once CONNECT was answered: INIT again (the kernel now adds the access
    /// flags the answer allows), RTR and RTS with the kernel's attributes, then the RTU. A
    /// failure rejects the connection and is returned. (librdmacm's `rdma_connect` with a QP
    /// takes the same steps; perftest's and qperf's clients both end their connect here.)
    pub fn finish_active_connect<P: Provider>(&self, qp: &mut Qp<P>) -> Result<()> {
        let r = (|| {
            self.modify_qp(qp, QpState::Init)?;
            self.modify_qp(qp, QpState::Rtr)?;
            self.modify_qp(qp, QpState::Rts)?;
            self.accept_active()
        })();
        if r.is_err() {
            let _ = self.reject(0, &[]);
        }
        r
    }

    /// REJECT a connect request (reason 0: consumer defined; ≤ 148 bytes of private data).
    pub fn reject(&self, reason: u8, private_data: &[u8]) -> Result<()> {
        check_private("REJECT", private_data.len(), limits::REJECT)?;
        self.cmd("REJECT", &wire::reject(self.id, reason, private_data))
    }

    /// DISCONNECT: sends a DREQ (or the DREP to the peer's DREQ); DISCONNECTED follows on both
    /// sides. Move the QP to ERR first if outstanding work should flush.
    pub fn disconnect(&self) -> Result<()> {
        self.cmd("DISCONNECT", &wire::disconnect(self.id))
    }

    /// SET_OPTION with raw bytes.
    pub fn set_option(&self, level: u32, name: u32, val: &[u8]) -> Result<()> {
        let buf = wire::set_option(val.as_ptr() as u64, self.id, level, name, val.len() as u32);
        // SAFETY: `val` is `optlen` readable bytes alive across the call.
        unsafe { self.chan.write_cmd(&format!("SET_OPTION({level},{name})"), &buf) }
    }

    /// The IP type of service for the connection (perftest `-T`); set before RESOLVE_ROUTE.
    pub fn set_tos(&self, tos: u8) -> Result<()> {
        self.set_option(sys::RDMA_OPTION_ID, sys::RDMA_OPTION_ID_TOS, &[tos])
    }

    /// The local ACK timeout code (perftest `-u`), used for the QP's RTS `timeout`.
    pub fn set_ack_timeout(&self, t: u8) -> Result<()> {
        self.set_option(sys::RDMA_OPTION_ID, sys::RDMA_OPTION_ID_ACK_TIMEOUT, &[t])
    }

    /// Allow binding a port still in TIME_WAIT (listeners restarted quickly).
    pub fn set_reuseaddr(&self, on: bool) -> Result<()> {
        self.set_option(sys::RDMA_OPTION_ID, sys::RDMA_OPTION_ID_REUSEADDR, &(on as i32).to_ne_bytes())
    }

    /// MIGRATE_ID: move this id to another channel; returns how many events it had reported.
    pub fn migrate(&mut self, to: &Arc<CmChannel>) -> Result<u32> {
        let mut r = sys::MigrateResp::new_zeroed();
        let buf = wire::migrate_id(r.as_mut_bytes().as_mut_ptr() as u64, self.id, to.fd.as_raw_fd() as u32);
        // SAFETY: `r` is 4 writable bytes (= out) alive across the call.
        unsafe { self.chan.write_cmd("MIGRATE_ID", &buf)? };
        // Events of this id already fetched into the old channel's queue move along.
        let moved: Vec<CmEvent> = {
            let mut q = self.chan.pending.lock().unwrap_or_else(|p| p.into_inner());
            let (mine, rest): (Vec<_>, Vec<_>) = q.drain(..).partition(|e| e.id == self.id);
            q.extend(rest);
            mine
        };
        to.pending.lock().unwrap_or_else(|p| p.into_inner()).extend(moved);
        self.chan = to.clone();
        Ok(r.events_reported)
    }

    /// The next event of this id within `timeout` (events of other ids stay queued).
    pub fn wait_event(&self, timeout: Duration) -> Result<Option<CmEvent>> {
        self.chan.event_for(self.id, Instant::now() + timeout)
    }

    /// Wait for `kind`: a failure event becomes its error (with a hint), a timeout becomes
    /// "no rdma_cm event within N s while waiting for X", any other event is an error too.
    pub fn expect(&self, kind: CmEventKind, timeout: Duration) -> Result<CmEvent> {
        let what = kind.name();
        let short = what.trim_start_matches("RDMA_CM_EVENT_").to_string();
        let ev = match self.wait_event(timeout)? {
            Some(ev) => ev,
            None => return Err(timeout_error(&what, timeout, self.peer.as_ref())),
        };
        if ev.kind == kind {
            return Ok(ev);
        }
        Err(event_error(&ev, &short, self.peer.as_ref()).unwrap_or_else(|| {
            Error::msg(format!("rdma_cm wait for {what}"), format!("got {} (status {})", ev.kind.name(), ev.status))
        }))
    }

    /// A listener's next connect request within `timeout` (`None` on timeout). Adopt the new
    /// id with [`CmChannel::adopt_request`] (or [`CmId::get_request`], which does both).
    pub fn wait_request(&self, timeout: Duration) -> Result<Option<CmEvent>> {
        self.chan.request_for(self.uid, Instant::now() + timeout)
    }

    /// A listener's next connect request and its new id; a timeout is an error.
    pub fn get_request(&self, timeout: Duration) -> Result<(CmId, CmEvent)> {
        let ev = self
            .wait_request(timeout)?
            .ok_or_else(|| timeout_error("RDMA_CM_EVENT_CONNECT_REQUEST", timeout, None).with_hint("no client connected; start the client with this host's RDMA address"))?;
        let mut id = self.chan.adopt_request(&ev)?;
        id.qp_type = self.qp_type;
        id.peer = id.query_addr().ok().and_then(|a| a.dst.ip());
        Ok((id, ev))
    }

    /// Active side after CONNECT: wait for CONNECT_RESPONSE (or the failure), move `qp` INIT →
    /// INIT (the kernel adds the access flags the peer's answer allows) → RTR → RTS, then
    /// [`CmId::accept_active`]. Returns the response (the server's private data). A failure
    /// after the response sends a REJECT so that the server does not wait for the RTU.
    pub fn complete_connect<P: Provider>(&self, qp: &mut Qp<P>, timeout: Duration) -> Result<CmEvent> {
        let ev = self.expect(CmEventKind::ConnectResponse, timeout)?;
        let r = (|| {
            self.modify_qp(qp, QpState::Init)?;
            self.modify_qp(qp, QpState::Rtr)?;
            self.modify_qp(qp, QpState::Rts)?;
            self.accept_active()
        })();
        if let Err(e) = r {
            // Tell the server (REJ) rather than leave it waiting for the RTU.
            let _ = self.reject(0, &[]);
            return Err(e);
        }
        Ok(ev)
    }

    /// Passive side: move `qp` (RESET or INIT) to INIT → RTR → RTS with the kernel's attributes,
    /// the READ depths set to what `p` accepts (as librdmacm does), then ACCEPT with `p`
    /// (`p.qp_num` is filled from `qp`). ESTABLISHED follows when the client's RTU arrives.
    pub fn accept_qp<P: Provider>(&self, qp: &mut Qp<P>, p: &ConnParam) -> Result<()> {
        let r = (|| {
            self.modify_qp(qp, QpState::Init)?;
            self.modify_qp_with(qp, QpState::Rtr, |a, m| {
                if m.contains(QpAttrMask::MAX_DEST_RD_ATOMIC) {
                    a.max_dest_rd_atomic = p.responder_resources;
                }
            })?;
            self.modify_qp_with(qp, QpState::Rts, |a, m| {
                if m.contains(QpAttrMask::MAX_QP_RD_ATOMIC) {
                    a.max_rd_atomic = p.initiator_depth;
                }
            })?;
            let mut p = p.clone();
            p.qp_num = qp.qpn();
            self.accept(&p)
        })();
        if let Err(e) = r {
            let _ = self.reject(0, &[]);
            return Err(e);
        }
        Ok(())
    }
}

impl Drop for CmId {
    fn drop(&mut self) {
        let mut r = sys::DestroyIdResp::new_zeroed();
        let buf = wire::destroy_id(r.as_mut_bytes().as_mut_ptr() as u64, self.id);
        // SAFETY: `r` is 4 writable bytes (= out) alive across the call.
        let res = unsafe { self.chan.write_cmd("DESTROY_ID", &buf) };
        if let Err(e) = res {
            if e.errno != Some(libc::EIO) && e.errno != Some(libc::EINVAL) {
                crate::settings::warn(e.to_string());
            }
        }
        // Fetched events of this id can no longer be consumed.
        self.chan.pending.lock().unwrap_or_else(|p| p.into_inner()).retain(|e| e.id != self.id || e.kind == CmEventKind::ConnectRequest);
    }
}

fn check_private(what: &str, len: usize, max: usize) -> Result<()> {
    if len > max {
        return Err(Error::msg(format!("rdma_cm {what}"), format!("{len} bytes of private data, the kernel allows at most {max}")));
    }
    Ok(())
}

/// "no rdma_cm event within N s while waiting for X".
pub fn timeout_error(what: &str, timeout: Duration, peer: Option<&SocketAddr>) -> Error {
    let secs = timeout.as_secs_f64();
    let n = if secs.fract() == 0.0 { format!("{}", secs as u64) } else { format!("{secs:.1}") };
    let e = Error::msg("rdma_cm wait", format!("no rdma_cm event within {n} s while waiting for {what}"));
    match (what, peer) {
        ("RDMA_CM_EVENT_ADDR_RESOLVED", Some(p)) => e.with_hint(hint_addr(&p.ip().to_string())),
        ("RDMA_CM_EVENT_CONNECT_RESPONSE", Some(p)) => e.with_hint(format!("is a server listening at {p}?")),
        _ => e,
    }
}

/// The device an rdma_cm id is bound to among `devs`: by node GUID; several with that GUID
/// (or a GUID of 0) are told apart by the kernel index.
pub fn pick_device<'a>(devs: &'a [DeviceInfo], a: &AddrInfo) -> Option<&'a DeviceInfo> {
    let by_guid: Vec<&DeviceInfo> = devs.iter().filter(|d| a.node_guid != 0 && d.node_guid == a.node_guid).collect();
    match by_guid.len() {
        1 => Some(by_guid[0]),
        0 => devs.iter().find(|d| d.index == Some(a.ibdev_index)).filter(|_| a.node_guid == 0),
        _ => by_guid.iter().copied().find(|d| d.index == Some(a.ibdev_index)).or(Some(by_guid[0])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(kind: u32, status: i32) -> CmEvent {
        let mut b = [0u8; 336];
        b[12..16].copy_from_slice(&kind.to_ne_bytes());
        b[16..20].copy_from_slice(&status.to_ne_bytes());
        wire::decode_event(&b).unwrap()
    }

    #[test]
    fn error_messages_are_one_line_with_hints() {
        let lo: SocketAddr = "127.0.0.1:18516".parse().unwrap();
        let e = event_error(&ev(sys::EVENT_ROUTE_ERROR, -19), "ROUTE_RESOLVED", Some(&lo)).unwrap().to_string();
        assert!(e.contains("rdma_cm cannot route to 127.0.0.1; give the RDMA interface's address"), "{e}");
        assert!(e.contains("ENODEV"), "{e}");
        let peer: SocketAddr = "10.99.0.1:18517".parse().unwrap();
        let e = event_error(&ev(sys::EVENT_REJECTED, 8), "CONNECT_RESPONSE", Some(&peer)).unwrap().to_string();
        assert!(e.contains("rejected") && e.contains("INVALID_SERVICE_ID") && e.contains("nobody listens"), "{e}");
        let e = event_error(&ev(sys::EVENT_ADDR_ERROR, -110), "ADDR_RESOLVED", Some(&peer)).unwrap().to_string();
        assert!(e.contains("address 10.99.0.1 does not resolve to an RDMA device: use the IP of the RDMA netdev"), "{e}");
        assert!(e.contains("ETIMEDOUT"), "{e}");
        let e = event_error(&ev(sys::EVENT_UNREACHABLE, -110), "CONNECT_RESPONSE", Some(&peer)).unwrap().to_string();
        assert!(e.contains("UNREACHABLE"), "{e}");
        let e = event_error(&ev(sys::EVENT_CONNECT_ERROR, -22), "CONNECT_RESPONSE", None).unwrap().to_string();
        assert!(e.contains("CONNECT_ERROR"), "{e}");
        assert!(event_error(&ev(sys::EVENT_ESTABLISHED, 0), "x", None).is_none());
        assert!(event_error(&ev(sys::EVENT_DISCONNECTED, 0), "DISCONNECTED", None).is_none());
        assert!(!e.contains('\n'));
    }

    #[test]
    fn timeout_message() {
        let e = timeout_error("RDMA_CM_EVENT_ESTABLISHED", Duration::from_secs(5), None).to_string();
        assert_eq!(e, "rdma_cm wait failed: no rdma_cm event within 5 s while waiting for RDMA_CM_EVENT_ESTABLISHED");
    }

    #[test]
    fn device_by_guid_then_index() {
        let d = |name: &str, guid: u64, idx: u32| DeviceInfo {
            index: Some(idx),
            ibdev: name.into(),
            uverbs: "uverbs0".into(),
            uverbs_dev: None,
            driver_id: crate::sys::RDMA_DRIVER_RXE,
            driver_abi: 2,
            node_guid: guid,
            sys_image_guid: 0,
            node_type: crate::attr::NodeType::Ca,
            fw_ver: String::new(),
            board_id: None,
            port_count: 1,
            source: discovery::Source::Netlink,
        };
        let devs = vec![d("a", 1, 0), d("b", 2, 1), d("c", 2, 2)];
        let a = |guid, idx| AddrInfo { node_guid: guid, port_num: 1, pkey: 0, src: CmAddr::None, dst: CmAddr::None, ibdev_index: idx };
        assert_eq!(pick_device(&devs, &a(1, 9)).unwrap().ibdev, "a");
        assert_eq!(pick_device(&devs, &a(2, 2)).unwrap().ibdev, "c");
        assert_eq!(pick_device(&devs, &a(2, 7)).unwrap().ibdev, "b");
        assert!(pick_device(&devs, &a(3, 0)).is_none());
    }
}
