//! Pure encode/decode for the rdma_ucm ABI: the exact `write()` buffer of each command (header
//! plus command struct), socket addresses in and out of the kernel's sockaddr forms, events and
//! query answers decoded into plain values, and INIT_QP_ATTR's answer converted into the verbs
//! layer's [`QpAttr`]/[`QpAttrMask`]. No I/O, no unsafe: everything here is tested against
//! captured bytes (`tests/cm_golden.rs`).
//!
//! Response pointers are plain `u64` arguments: the caller ([`super::CmId`]) passes the address
//! of its response buffer, the golden tests pass the captured one.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use zerocopy::{FromBytes, Immutable, IntoBytes};

use super::sys;
use crate::error::{Error, Result};
use crate::objects::{ah_from_uverbs, qp_attr_from_kernel, QpAttr, QpAttrMask};
use crate::provider::{AhAttr, QpState, QpType};

// ================================================================================================
// Framing
// ================================================================================================

/// `rdma_ucm_cmd_hdr` + `body`: one write() buffer. `out` is the response size the kernel may
/// write at the body's `response` pointer (0 when the command has none).
pub fn frame<T: IntoBytes + Immutable>(cmd: u32, body: &T, out: usize) -> Vec<u8> {
    let b = body.as_bytes();
    let hdr = sys::CmdHdr { cmd, in_len: b.len() as u16, out_len: out as u16 };
    let mut v = Vec::with_capacity(8 + b.len());
    v.extend_from_slice(hdr.as_bytes());
    v.extend_from_slice(b);
    v
}

// ================================================================================================
// Port spaces
// ================================================================================================

/// The port space of an id (`enum rdma_ucm_port_space`): it decides the transport the
/// connection manager speaks for IP-addressed ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PortSpace {
    /// RC/UC connections (`RDMA_PS_TCP`), what perftest uses for everything but UD.
    Tcp,
    /// UD (`RDMA_PS_UDP`).
    Udp,
    /// IPoIB (`RDMA_PS_IPOIB`).
    Ipoib,
    /// Native IB addressing (`RDMA_PS_IB`, AF_IB).
    Ib,
}

impl PortSpace {
    pub fn raw(self) -> u16 {
        match self {
            PortSpace::Tcp => sys::RDMA_PS_TCP,
            PortSpace::Udp => sys::RDMA_PS_UDP,
            PortSpace::Ipoib => sys::RDMA_PS_IPOIB,
            PortSpace::Ib => sys::RDMA_PS_IB,
        }
    }
    /// The port space librdmacm picks for a QP type over IP (`rdma_getaddrinfo`).
    pub fn for_qp_type(t: QpType) -> PortSpace {
        match t {
            QpType::Ud | QpType::Srd => PortSpace::Udp,
            // DC never goes through rdma_cm (perftest refuses it); TCP is the connected space.
            QpType::Rc | QpType::Uc | QpType::Dci | QpType::Dct | QpType::XrcIni | QpType::XrcTgt => PortSpace::Tcp,
        }
    }
}

// ================================================================================================
// Private-data limits (what fits in the IB CM MADs after the 36-byte rdma_cm header)
// ================================================================================================

/// Limits on private data for IP-addressed ids (k: drivers/infiniband/core/cma.c; IB CM MAD
/// sizes minus the rdma_cm header the kernel prepends to REQ and SIDR REQ).
pub mod limits {
    /// The rdma_cm header the kernel puts in front of the user's REQ private data.
    pub const CMA_HDR: usize = 36;
    /// CONNECT (IB CM REQ: 92 − 36).
    pub const CONNECT: usize = 92 - CMA_HDR;
    /// ACCEPT (IB CM REP).
    pub const ACCEPT: usize = 196;
    /// REJECT (IB CM REJ).
    pub const REJECT: usize = 148;
    /// UD CONNECT (SIDR REQ: 216 − 36).
    pub const UD_CONNECT: usize = 216 - CMA_HDR;
    /// UD ACCEPT (SIDR REP).
    pub const UD_ACCEPT: usize = 136;
}

// ================================================================================================
// Socket addresses
// ================================================================================================

/// An `AF_IB` address (`struct sockaddr_ib`): a GID plus a service id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IbAddr {
    pub pkey: u16,
    pub gid: [u8; 16],
    pub sid: u64,
}

/// A socket address as the kernel reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmAddr {
    None,
    Ip(SocketAddr),
    Ib(IbAddr),
    Other(u16),
}

impl CmAddr {
    pub fn ip(&self) -> Option<SocketAddr> {
        match self {
            CmAddr::Ip(a) => Some(*a),
            _ => None,
        }
    }
}

impl std::fmt::Display for CmAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CmAddr::None => write!(f, "(none)"),
            CmAddr::Ip(a) => write!(f, "{a}"),
            CmAddr::Ib(a) => write!(f, "ib:{}/sid {:#x}", crate::discovery::format_ipv6(&a.gid), a.sid),
            CmAddr::Other(fam) => write!(f, "(family {fam})"),
        }
    }
}

/// The bytes of `struct sockaddr_in` (16) or `struct sockaddr_in6` (28) for `a`.
pub fn sockaddr_bytes(a: &SocketAddr) -> Vec<u8> {
    match a {
        SocketAddr::V4(v4) => {
            let mut b = vec![0u8; 16];
            b[0..2].copy_from_slice(&sys::AF_INET.to_ne_bytes());
            b[2..4].copy_from_slice(&v4.port().to_be_bytes());
            b[4..8].copy_from_slice(&v4.ip().octets());
            b
        }
        SocketAddr::V6(v6) => {
            let s = sys::SockaddrIn6 {
                family: sys::AF_INET6,
                port: v6.port().to_be(),
                flowinfo: v6.flowinfo().to_be(),
                addr: v6.ip().octets(),
                scope_id: v6.scope_id(),
            };
            s.as_bytes().to_vec()
        }
    }
}

/// `a` in a `__kernel_sockaddr_storage`, with its size.
pub fn storage(a: &SocketAddr) -> (sys::SockaddrStorage, u16) {
    let b = sockaddr_bytes(a);
    let mut st = sys::SockaddrStorage::default();
    st.as_mut_bytes()[..b.len()].copy_from_slice(&b);
    (st, b.len() as u16)
}

/// `a` in a `struct sockaddr_in6` (the legacy commands' form; IPv4 goes in as sockaddr_in).
pub fn in6(a: &SocketAddr) -> sys::SockaddrIn6 {
    let b = sockaddr_bytes(a);
    let mut s = sys::SockaddrIn6::default();
    s.as_mut_bytes()[..b.len()].copy_from_slice(&b);
    s
}

/// Decode a sockaddr (`AF_INET`, `AF_INET6`, `AF_IB`) from the kernel's bytes.
pub fn decode_sockaddr(b: &[u8]) -> CmAddr {
    if b.len() < 2 {
        return CmAddr::None;
    }
    let fam = u16::from_ne_bytes([b[0], b[1]]);
    let be16 = |o: usize| u16::from_be_bytes([b[o], b[o + 1]]);
    match fam {
        0 => CmAddr::None,
        sys::AF_INET if b.len() >= 8 => {
            let ip = Ipv4Addr::new(b[4], b[5], b[6], b[7]);
            CmAddr::Ip(SocketAddr::V4(SocketAddrV4::new(ip, be16(2))))
        }
        sys::AF_INET6 if b.len() >= 28 => {
            let mut a = [0u8; 16];
            a.copy_from_slice(&b[8..24]);
            let flow = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
            let scope = u32::from_ne_bytes([b[24], b[25], b[26], b[27]]);
            CmAddr::Ip(SocketAddr::V6(SocketAddrV6::new(Ipv6Addr::from(a), be16(2), flow, scope)))
        }
        sys::AF_IB if b.len() >= 32 => {
            // struct sockaddr_ib: family, pkey (be16), flowinfo (be32), gid @8, sid (be64) @24.
            let mut gid = [0u8; 16];
            gid.copy_from_slice(&b[8..24]);
            let mut sid = [0u8; 8];
            sid.copy_from_slice(&b[24..32]);
            CmAddr::Ib(IbAddr { pkey: be16(2), gid, sid: u64::from_be_bytes(sid) })
        }
        f => CmAddr::Other(f),
    }
}

// ================================================================================================
// Command buffers
// ================================================================================================

pub fn create_id(uid: u64, response: u64, ps: PortSpace, qp_type: QpType) -> Vec<u8> {
    let b = sys::CreateId { uid, response, ps: ps.raw(), qp_type: qp_type.uverbs_type(), reserved: [0; 5] };
    frame(sys::CMD_CREATE_ID, &b, size_of::<sys::CreateIdResp>())
}

pub fn destroy_id(response: u64, id: u32) -> Vec<u8> {
    frame(sys::CMD_DESTROY_ID, &sys::DestroyId { response, id, reserved: 0 }, size_of::<sys::DestroyIdResp>())
}

/// BIND (the sockaddr_storage form librdmacm uses on kernels that have it).
pub fn bind(id: u32, addr: &SocketAddr) -> Vec<u8> {
    let (st, size) = storage(addr);
    frame(sys::CMD_BIND, &sys::Bind { id, addr_size: size, reserved: 0, addr: st }, 0)
}

/// BIND_IP (legacy form, for kernels before BIND).
pub fn bind_ip(id: u32, addr: &SocketAddr) -> Vec<u8> {
    frame(sys::CMD_BIND_IP, &sys::BindIp { response: 0, addr: in6(addr), id }, 0)
}

pub fn resolve_addr(id: u32, src: Option<&SocketAddr>, dst: &SocketAddr, timeout_ms: u32) -> Vec<u8> {
    let mut b = sys::ResolveAddr { id, timeout_ms, ..Default::default() };
    if let Some(s) = src {
        (b.src_addr, b.src_size) = storage(s);
    }
    (b.dst_addr, b.dst_size) = storage(dst);
    frame(sys::CMD_RESOLVE_ADDR, &b, 0)
}

/// RESOLVE_IP (legacy form).
pub fn resolve_ip(id: u32, src: Option<&SocketAddr>, dst: &SocketAddr, timeout_ms: u32) -> Vec<u8> {
    let b = sys::ResolveIp { src_addr: src.map(in6).unwrap_or_default(), dst_addr: in6(dst), id, timeout_ms };
    frame(sys::CMD_RESOLVE_IP, &b, 0)
}

pub fn resolve_route(id: u32, timeout_ms: u32) -> Vec<u8> {
    frame(sys::CMD_RESOLVE_ROUTE, &sys::ResolveRoute { id, timeout_ms }, 0)
}

/// QUERY with `option` (ADDR / PATH / GID); `out` is the response buffer size.
pub fn query(response: u64, id: u32, option: u32, out: usize) -> Vec<u8> {
    frame(sys::CMD_QUERY, &sys::Query { response, id, option }, out)
}

/// QUERY_ROUTE (legacy: one answer with addresses and up to two IB path records).
pub fn query_route(response: u64, id: u32) -> Vec<u8> {
    frame(sys::CMD_QUERY_ROUTE, &sys::Query { response, id, option: 0 }, size_of::<sys::QueryRouteResp>())
}

pub fn listen(id: u32, backlog: u32) -> Vec<u8> {
    frame(sys::CMD_LISTEN, &sys::Listen { id, backlog }, 0)
}

/// Connection parameters for CONNECT and ACCEPT (`struct rdma_conn_param`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConnParam {
    pub qp_num: u32,
    /// UD only.
    pub qkey: u32,
    /// ≤ [`limits::CONNECT`] on CONNECT, ≤ [`limits::ACCEPT`] on ACCEPT.
    pub private_data: Vec<u8>,
    pub srq: bool,
    /// Incoming RDMA READ / atomic depth this side offers.
    pub responder_resources: u8,
    /// Outgoing RDMA READ / atomic depth this side wants.
    pub initiator_depth: u8,
    pub flow_control: u8,
    /// Transport retries (≤ 7); ignored on ACCEPT.
    pub retry_count: u8,
    /// RNR retries (7 = infinite).
    pub rnr_retry_count: u8,
}

impl ConnParam {
    /// The kernel struct with `valid = 1`. Private data beyond 256 bytes is cut (callers check
    /// the real limits first).
    pub fn to_sys(&self) -> sys::ConnParam {
        let mut c = sys::ConnParam {
            qp_num: self.qp_num,
            qkey: self.qkey,
            srq: self.srq as u8,
            responder_resources: self.responder_resources,
            initiator_depth: self.initiator_depth,
            flow_control: self.flow_control,
            retry_count: self.retry_count,
            rnr_retry_count: self.rnr_retry_count,
            valid: 1,
            ..Default::default()
        };
        let n = self.private_data.len().min(sys::RDMA_MAX_PRIVATE_DATA);
        c.private_data[..n].copy_from_slice(&self.private_data[..n]);
        c.private_data_len = n as u8;
        c
    }
}

pub fn connect(id: u32, p: &ConnParam) -> Vec<u8> {
    frame(sys::CMD_CONNECT, &sys::Connect { conn_param: p.to_sys(), id, reserved: 0, ece: sys::Ece::default() }, 0)
}

/// ACCEPT. Passive side: `uid` becomes the cookie of the new id's later events and `p` is the
/// answer. Active side after CONNECT_RESPONSE: `p = None` (conn_param.valid = 0), which makes
/// the kernel send the RTU.
pub fn accept(uid: u64, id: u32, p: Option<&ConnParam>) -> Vec<u8> {
    let conn_param = p.map(|p| p.to_sys()).unwrap_or_default();
    frame(sys::CMD_ACCEPT, &sys::Accept { uid, conn_param, id, reserved: 0, ece: sys::Ece::default() }, 0)
}

/// REJECT with `reason` (0: the kernel uses IB_CM_REJ_CONSUMER_DEFINED).
pub fn reject(id: u32, reason: u8, private_data: &[u8]) -> Vec<u8> {
    let mut b = sys::Reject { id, reason, ..Default::default() };
    let n = private_data.len().min(sys::RDMA_MAX_PRIVATE_DATA);
    b.private_data[..n].copy_from_slice(&private_data[..n]);
    b.private_data_len = n as u8;
    frame(sys::CMD_REJECT, &b, 0)
}

pub fn disconnect(id: u32) -> Vec<u8> {
    frame(sys::CMD_DISCONNECT, &sys::Disconnect { id }, 0)
}

pub fn init_qp_attr(response: u64, id: u32, state: QpState) -> Vec<u8> {
    frame(sys::CMD_INIT_QP_ATTR, &sys::InitQpAttr { response, id, qp_state: state as u32 }, size_of::<sys::QpAttrResp>())
}

pub fn get_event(response: u64) -> Vec<u8> {
    frame(sys::CMD_GET_EVENT, &sys::GetEvent { response }, size_of::<sys::EventResp>())
}

pub fn set_option(optval: u64, id: u32, level: u32, optname: u32, optlen: u32) -> Vec<u8> {
    frame(sys::CMD_SET_OPTION, &sys::SetOption { optval, id, level, optname, optlen }, 0)
}

pub fn migrate_id(response: u64, id: u32, fd: u32) -> Vec<u8> {
    frame(sys::CMD_MIGRATE_ID, &sys::MigrateId { response, id, fd }, size_of::<sys::MigrateResp>())
}

// ================================================================================================
// Events
// ================================================================================================

/// Event types (`enum rdma_cm_event_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmEventKind {
    AddrResolved,
    AddrError,
    RouteResolved,
    RouteError,
    ConnectRequest,
    ConnectResponse,
    ConnectError,
    Unreachable,
    Rejected,
    Established,
    Disconnected,
    DeviceRemoval,
    MulticastJoin,
    MulticastError,
    AddrChange,
    TimewaitExit,
    Unknown(u32),
}

impl CmEventKind {
    pub fn from_raw(v: u32) -> Self {
        use CmEventKind::*;
        match v {
            sys::EVENT_ADDR_RESOLVED => AddrResolved,
            sys::EVENT_ADDR_ERROR => AddrError,
            sys::EVENT_ROUTE_RESOLVED => RouteResolved,
            sys::EVENT_ROUTE_ERROR => RouteError,
            sys::EVENT_CONNECT_REQUEST => ConnectRequest,
            sys::EVENT_CONNECT_RESPONSE => ConnectResponse,
            sys::EVENT_CONNECT_ERROR => ConnectError,
            sys::EVENT_UNREACHABLE => Unreachable,
            sys::EVENT_REJECTED => Rejected,
            sys::EVENT_ESTABLISHED => Established,
            sys::EVENT_DISCONNECTED => Disconnected,
            sys::EVENT_DEVICE_REMOVAL => DeviceRemoval,
            sys::EVENT_MULTICAST_JOIN => MulticastJoin,
            sys::EVENT_MULTICAST_ERROR => MulticastError,
            sys::EVENT_ADDR_CHANGE => AddrChange,
            sys::EVENT_TIMEWAIT_EXIT => TimewaitExit,
            other => Unknown(other),
        }
    }
    /// librdmacm's name (`rdma_event_str`), e.g. `RDMA_CM_EVENT_ESTABLISHED`.
    pub fn name(self) -> String {
        use CmEventKind::*;
        let s = match self {
            AddrResolved => "ADDR_RESOLVED",
            AddrError => "ADDR_ERROR",
            RouteResolved => "ROUTE_RESOLVED",
            RouteError => "ROUTE_ERROR",
            ConnectRequest => "CONNECT_REQUEST",
            ConnectResponse => "CONNECT_RESPONSE",
            ConnectError => "CONNECT_ERROR",
            Unreachable => "UNREACHABLE",
            Rejected => "REJECTED",
            Established => "ESTABLISHED",
            Disconnected => "DISCONNECTED",
            DeviceRemoval => "DEVICE_REMOVAL",
            MulticastJoin => "MULTICAST_JOIN",
            MulticastError => "MULTICAST_ERROR",
            AddrChange => "ADDR_CHANGE",
            TimewaitExit => "TIMEWAIT_EXIT",
            Unknown(v) => return format!("RDMA_CM_EVENT_{v}"),
        };
        format!("RDMA_CM_EVENT_{s}")
    }
}

/// The connection parameters an event carries (CONNECT_REQUEST: the peer's REQ;
/// CONNECT_RESPONSE: the REP; REJECTED: the REJ's private data; ESTABLISHED): the fields of
/// [`ConnParam`], read back. `private_data` is what the kernel reports: for IP ids the whole
/// remaining MAD space, zero padded (56 bytes in a REQ, 196 in a REP), not just what the peer
/// wrote.
pub type EventConnParam = ConnParam;

/// The UD arm of the parameter union (events on UDP/IPoIB ids).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventUdParam {
    pub qp_num: u32,
    pub qkey: u32,
    pub ah: AhAttr,
    pub private_data: Vec<u8>,
}

/// One event from GET_EVENT.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CmEvent {
    pub kind: CmEventKind,
    /// The cookie of the id the event is for (CONNECT_REQUEST: the listener's).
    pub uid: u64,
    /// The kernel id (CONNECT_REQUEST: the **new** id of the incoming connection).
    pub id: u32,
    /// Negative errno for ADDR/ROUTE/CONNECT errors and UNREACHABLE; the IB CM reject reason for
    /// REJECTED; 0 otherwise.
    pub status: i32,
    /// The parameter union read as connection parameters.
    pub conn: EventConnParam,
    /// The ECE (enhanced connection establishment) values.
    pub ece: (u32, u32),
    raw_param: Vec<u8>,
}

impl CmEvent {
    /// The parameter union read as UD parameters (meaningful on UDP/IPoIB ids only).
    pub fn ud(&self) -> EventUdParam {
        let u = sys::UdParam::read_from_bytes(&self.raw_param[..]).unwrap_or_default();
        let n = (u.private_data_len as usize).min(sys::RDMA_MAX_PRIVATE_DATA);
        EventUdParam { qp_num: u.qp_num, qkey: u.qkey, ah: ah_from_uverbs(&u.ah_attr), private_data: u.private_data[..n].to_vec() }
    }
    pub fn private_data(&self) -> &[u8] {
        &self.conn.private_data
    }
}

/// Decode a GET_EVENT answer (the kernel writes up to 336 bytes; old kernels leave out the
/// trailing `reserved`/`ece`, which then read as zero).
pub fn decode_event(b: &[u8]) -> Result<CmEvent> {
    const MIN: usize = 20 + 304;
    if b.len() < MIN {
        return Err(Error::msg("decode rdma_cm event", format!("{} bytes, expected at least {MIN}", b.len())));
    }
    let mut full = [0u8; size_of::<sys::EventResp>()];
    let n = b.len().min(full.len());
    full[..n].copy_from_slice(&b[..n]);
    let r = sys::EventResp::read_from_bytes(&full[..]).expect("exact size");
    let c = sys::ConnParam::read_from_bytes(&r.param[..size_of::<sys::ConnParam>()]).expect("exact size");
    let pn = (c.private_data_len as usize).min(sys::RDMA_MAX_PRIVATE_DATA);
    Ok(CmEvent {
        kind: CmEventKind::from_raw(r.event),
        uid: r.uid,
        id: r.id,
        status: r.status as i32,
        conn: EventConnParam {
            qp_num: c.qp_num,
            qkey: c.qkey,
            private_data: c.private_data[..pn].to_vec(),
            srq: c.srq != 0,
            responder_resources: c.responder_resources,
            initiator_depth: c.initiator_depth,
            flow_control: c.flow_control,
            retry_count: c.retry_count,
            rnr_retry_count: c.rnr_retry_count,
        },
        ece: (r.ece.vendor_id, r.ece.attr_mod),
        raw_param: r.param.to_vec(),
    })
}

/// The name of an IB CM reject reason (the status of a REJECTED event; IBTA CM REJ reasons).
pub fn reject_reason_name(r: i32) -> &'static str {
    match r {
        1 => "NO_QP",
        2 => "NO_EEC",
        3 => "NO_RESOURCES",
        4 => "TIMEOUT",
        5 => "UNSUPPORTED",
        6 => "INVALID_COMM_ID",
        7 => "INVALID_COMM_INSTANCE",
        8 => "INVALID_SERVICE_ID",
        9 => "INVALID_TRANSPORT_TYPE",
        10 => "STALE_CONN",
        11 => "RDC_NOT_EXIST",
        12 => "INVALID_GID",
        13 => "INVALID_LID",
        14 => "INVALID_SL",
        15 => "INVALID_TRAFFIC_CLASS",
        16 => "INVALID_HOP_LIMIT",
        17 => "INVALID_PACKET_RATE",
        18 => "INVALID_ALT_GID",
        19 => "INVALID_ALT_LID",
        20 => "INVALID_ALT_SL",
        21 => "INVALID_ALT_TRAFFIC_CLASS",
        22 => "INVALID_ALT_HOP_LIMIT",
        23 => "INVALID_ALT_PACKET_RATE",
        24 => "PORT_CM_REDIRECT",
        25 => "PORT_REDIRECT",
        26 => "INVALID_MTU",
        27 => "INSUFFICIENT_RESP_RESOURCES",
        28 => "CONSUMER_DEFINED",
        29 => "INVALID_RNR_RETRY",
        30 => "DUPLICATE_LOCAL_COMM_ID",
        31 => "INVALID_CLASS_VERSION",
        32 => "INVALID_FLOW_LABEL",
        33 => "INVALID_ALT_FLOW_LABEL",
        35 => "VENDOR_OPTION_NOT_SUPPORTED",
        _ => "unknown reason",
    }
}

// ================================================================================================
// Query answers
// ================================================================================================

/// QUERY(ADDR) / QUERY(GID): the device, port and the two addresses of an id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddrInfo {
    /// Host-order node GUID (as `DeviceInfo::node_guid`); 0 while the id is not bound to a device.
    pub node_guid: u64,
    pub port_num: u8,
    pub pkey: u16,
    pub src: CmAddr,
    pub dst: CmAddr,
    /// The kernel's device index (as netlink's); 0 on kernels that predate the field.
    pub ibdev_index: u32,
}

pub fn decode_query_addr(b: &[u8]) -> Result<AddrInfo> {
    let r = sys::QueryAddrResp::read_from_prefix(b)
        .map(|(r, _)| r)
        .map_err(|_| Error::msg("decode rdma_cm QUERY(ADDR)", format!("{} bytes, expected 280", b.len())))?;
    let src = &r.src_addr.as_bytes()[..(r.src_size as usize).min(128)];
    let dst = &r.dst_addr.as_bytes()[..(r.dst_size as usize).min(128)];
    Ok(AddrInfo {
        node_guid: r.node_guid.get(),
        port_num: r.port_num,
        pkey: r.pkey,
        src: decode_sockaddr(src),
        dst: decode_sockaddr(dst),
        ibdev_index: r.ibdev_index,
    })
}

/// One path from QUERY(PATH): the SA PathRecord in IB wire format (64 bytes) and its flags
/// (`IB_PATH_*`: 0x1 GMP, 0x2 PRIMARY, 0x4 ALTERNATE, 0x8 OUTBOUND, 0x10 INBOUND, 0x20
/// INBOUND_REVERSE, 0x3c BIDIRECTIONAL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathRecord {
    pub flags: u32,
    pub rec: [u8; 64],
}

impl PathRecord {
    /// DGID (wire offset 8).
    pub fn dgid(&self) -> [u8; 16] {
        self.rec[8..24].try_into().expect("16 bytes")
    }
    /// SGID (wire offset 24).
    pub fn sgid(&self) -> [u8; 16] {
        self.rec[24..40].try_into().expect("16 bytes")
    }
    /// Hop limit (wire byte 47, after RawTraffic/FlowLabel).
    pub fn hop_limit(&self) -> u8 {
        self.rec[47]
    }
    /// Traffic class (wire byte 48).
    pub fn traffic_class(&self) -> u8 {
        self.rec[48]
    }
    /// P_Key (wire bytes 50–51).
    pub fn pkey(&self) -> u16 {
        u16::from_be_bytes([self.rec[50], self.rec[51]])
    }
    /// Path MTU code (`enum ibv_mtu`, wire byte 54, low 6 bits).
    pub fn mtu(&self) -> u8 {
        self.rec[54] & 0x3f
    }
}

pub fn decode_query_path(b: &[u8]) -> Result<Vec<PathRecord>> {
    let (h, rest) = sys::QueryPathResp::read_from_prefix(b)
        .map_err(|_| Error::msg("decode rdma_cm QUERY(PATH)", format!("{} bytes", b.len())))?;
    let per = size_of::<sys::PathRecData>();
    let n = (h.num_paths as usize).min(rest.len() / per);
    Ok((0..n)
        .map(|i| {
            let d = sys::PathRecData::read_from_bytes(&rest[i * per..(i + 1) * per]).expect("exact size");
            let mut rec = [0u8; 64];
            rec.copy_from_slice(d.path_rec.as_bytes());
            PathRecord { flags: d.flags, rec }
        })
        .collect())
}

/// QUERY_ROUTE's answer, the parts that matter for RoCE/IB.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RouteInfo {
    pub node_guid: u64,
    pub port_num: u8,
    pub num_paths: u32,
    pub sgid: [u8; 16],
    pub dgid: [u8; 16],
    pub traffic_class: u8,
    pub hop_limit: u8,
    pub src: CmAddr,
    pub dst: CmAddr,
    pub ibdev_index: u32,
}

pub fn decode_query_route(b: &[u8]) -> Result<RouteInfo> {
    let r = sys::QueryRouteResp::read_from_prefix(b)
        .map(|(r, _)| r)
        .map_err(|_| Error::msg("decode rdma_cm QUERY_ROUTE", format!("{} bytes, expected 208", b.len())))?;
    let p = &r.ib_route[0];
    Ok(RouteInfo {
        node_guid: r.node_guid.get(),
        port_num: r.port_num,
        num_paths: r.num_paths,
        sgid: p.sgid,
        dgid: p.dgid,
        traffic_class: p.traffic_class,
        hop_limit: p.hop_limit,
        src: decode_sockaddr(r.src_addr.as_bytes()),
        dst: decode_sockaddr(r.dst_addr.as_bytes()),
        ibdev_index: r.ibdev_index,
    })
}

// ================================================================================================
// INIT_QP_ATTR → QpAttr
// ================================================================================================

/// The verbs-layer attributes and mask from INIT_QP_ATTR's answer, ready for `Qp::modify`.
///
/// Mask bits beyond the standard ones (21+: rate limit and other extended attributes, which the
/// kernel may report on IB link layers) are dropped, as rdma-core does: a non-extended
/// MODIFY_QP refuses them. `static_rate` and `src_path_bits` of the AV are not carried by the
/// verbs layer's AhAttr (0 = port rate, as perftest uses).
pub fn qp_attr_from_kernel(r: &sys::QpAttrResp) -> (QpAttr, QpAttrMask) {
    let mask = QpAttrMask::from_bits_truncate(r.qp_attr_mask & crate::sys::qp_attr::ALL_STANDARD);
    let a = qp_attr_from_kernel!(
        r,
        en_sqd_async_notify: r.en_sqd_async_notify,
        ah_attr: ah_from_uverbs(&r.ah_attr),
        alt_ah_attr: ah_from_uverbs(&r.alt_ah_attr)
    );
    (a, mask)
}

pub fn decode_qp_attr(b: &[u8]) -> Result<(QpAttr, QpAttrMask)> {
    let r = sys::QpAttrResp::read_from_prefix(b)
        .map(|(r, _)| r)
        .map_err(|_| Error::msg("decode rdma_cm INIT_QP_ATTR", format!("{} bytes, expected 144", b.len())))?;
    Ok(qp_attr_from_kernel(&r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockaddr_roundtrip() {
        for a in ["10.99.0.1:18515", "[fe80::1]:7", "0.0.0.0:0"] {
            let a: SocketAddr = a.parse().unwrap();
            assert_eq!(decode_sockaddr(&sockaddr_bytes(&a)), CmAddr::Ip(a));
            let (st, n) = storage(&a);
            assert_eq!(decode_sockaddr(&st.as_bytes()[..n as usize]), CmAddr::Ip(a));
        }
        assert_eq!(decode_sockaddr(&[0u8; 16]), CmAddr::None);
        assert_eq!(decode_sockaddr(&[1]), CmAddr::None);
    }

    #[test]
    fn private_data_limits() {
        assert_eq!(limits::CONNECT, 56);
        assert_eq!(limits::ACCEPT, 196);
        assert_eq!(limits::REJECT, 148);
    }

    #[test]
    fn short_event_is_an_error_not_a_panic() {
        assert!(decode_event(&[0u8; 100]).is_err());
        let e = decode_event(&[0u8; 324]).unwrap();
        assert_eq!(e.kind, CmEventKind::AddrResolved);
        let mut b = [0xffu8; 336];
        b[12..16].copy_from_slice(&99u32.to_ne_bytes());
        let e = decode_event(&b).unwrap();
        assert_eq!(e.kind, CmEventKind::Unknown(99));
        assert_eq!(e.conn.private_data.len(), 255);
        assert_eq!(e.ud().private_data.len(), 255);
    }

    #[test]
    fn event_names() {
        assert_eq!(CmEventKind::from_raw(9).name(), "RDMA_CM_EVENT_ESTABLISHED");
        assert_eq!(reject_reason_name(28), "CONSUMER_DEFINED");
    }
}
