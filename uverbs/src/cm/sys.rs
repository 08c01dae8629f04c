//! The raw rdma_ucm ABI (`<rdma/rdma_user_cm.h>`, `<rdma/ib_user_sa.h>`; INIT_QP_ATTR answers with
//! `struct ib_uverbs_qp_attr`, which lives with the verbs structs in `crate::sys`): hand-written `#[repr(C)]` mirrors,
//! command/event/option numbers. No logic lives here.
//!
//! Naming follows `crate::sys`: `struct rdma_ucm_create_id` is [`CreateId`], its response
//! [`CreateIdResp`]. The event's parameter union is one byte array ([`EventResp::param`]) with
//! one struct per arm ([`ConnParam`], [`UdParam`]). Every size and offset is checked against the
//! installed headers by `tests/cm_layout.rs`.

use zerocopy::byteorder::{BigEndian, U64};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

use crate::sys::AhAttr;
pub use crate::sys::QpAttrResp;

// ABI structs are declared like `crate::sys`' (repr(C), zerocopy traits, zeroed Default).
use crate::sys::abi;

/// `RDMA_USER_CM_ABI_VERSION`: what `/sys/class/misc/rdma_cm/abi_version` says on every kernel
/// since 2.6.x. librdmacm accepts 3..=4; the commands used here exist in 4.
pub const RDMA_USER_CM_ABI_VERSION: u32 = 4;
/// Oldest ABI librdmacm (and we) accept.
pub const RDMA_USER_CM_MIN_ABI_VERSION: u32 = 3;
/// `RDMA_MAX_PRIVATE_DATA`: the size of the private-data arrays in the ABI (not what the wire
/// allows; see `crate::cm::limits`).
pub const RDMA_MAX_PRIVATE_DATA: usize = 256;

// Commands (the anonymous enum `RDMA_USER_CM_CMD_*`).
pub const CMD_CREATE_ID: u32 = 0;
pub const CMD_DESTROY_ID: u32 = 1;
pub const CMD_BIND_IP: u32 = 2;
pub const CMD_RESOLVE_IP: u32 = 3;
pub const CMD_RESOLVE_ROUTE: u32 = 4;
pub const CMD_QUERY_ROUTE: u32 = 5;
pub const CMD_CONNECT: u32 = 6;
pub const CMD_LISTEN: u32 = 7;
pub const CMD_ACCEPT: u32 = 8;
pub const CMD_REJECT: u32 = 9;
pub const CMD_DISCONNECT: u32 = 10;
pub const CMD_INIT_QP_ATTR: u32 = 11;
pub const CMD_GET_EVENT: u32 = 12;
pub const CMD_GET_OPTION: u32 = 13;
pub const CMD_SET_OPTION: u32 = 14;
pub const CMD_NOTIFY: u32 = 15;
pub const CMD_JOIN_IP_MCAST: u32 = 16;
pub const CMD_LEAVE_MCAST: u32 = 17;
pub const CMD_MIGRATE_ID: u32 = 18;
pub const CMD_QUERY: u32 = 19;
pub const CMD_BIND: u32 = 20;
pub const CMD_RESOLVE_ADDR: u32 = 21;
pub const CMD_JOIN_MCAST: u32 = 22;

// Port spaces (`enum rdma_ucm_port_space`).
pub const RDMA_PS_IPOIB: u16 = 0x0002;
pub const RDMA_PS_IB: u16 = 0x013f;
pub const RDMA_PS_TCP: u16 = 0x0106;
pub const RDMA_PS_UDP: u16 = 0x0111;

// QUERY options.
pub const QUERY_ADDR: u32 = 0;
pub const QUERY_PATH: u32 = 1;
pub const QUERY_GID: u32 = 2;

// Options (SET_OPTION level / name).
pub const RDMA_OPTION_ID: u32 = 0;
pub const RDMA_OPTION_IB: u32 = 1;
pub const RDMA_OPTION_ID_TOS: u32 = 0;
pub const RDMA_OPTION_ID_REUSEADDR: u32 = 1;
pub const RDMA_OPTION_ID_AFONLY: u32 = 2;
pub const RDMA_OPTION_ID_ACK_TIMEOUT: u32 = 3;
pub const RDMA_OPTION_IB_PATH: u32 = 1;

// Event numbers (`enum rdma_cm_event_type`, librdmacm's rdma_cma.h; the kernel's
// `enum rdma_cm_event_type` in rdma_cm.h has the same values).
pub const EVENT_ADDR_RESOLVED: u32 = 0;
pub const EVENT_ADDR_ERROR: u32 = 1;
pub const EVENT_ROUTE_RESOLVED: u32 = 2;
pub const EVENT_ROUTE_ERROR: u32 = 3;
pub const EVENT_CONNECT_REQUEST: u32 = 4;
pub const EVENT_CONNECT_RESPONSE: u32 = 5;
pub const EVENT_CONNECT_ERROR: u32 = 6;
pub const EVENT_UNREACHABLE: u32 = 7;
pub const EVENT_REJECTED: u32 = 8;
pub const EVENT_ESTABLISHED: u32 = 9;
pub const EVENT_DISCONNECTED: u32 = 10;
pub const EVENT_DEVICE_REMOVAL: u32 = 11;
pub const EVENT_MULTICAST_JOIN: u32 = 12;
pub const EVENT_MULTICAST_ERROR: u32 = 13;
pub const EVENT_ADDR_CHANGE: u32 = 14;
pub const EVENT_TIMEWAIT_EXIT: u32 = 15;

// Address families the kernel reports.
pub const AF_INET: u16 = 2;
pub const AF_INET6: u16 = 10;
pub const AF_IB: u16 = 27;

abi! {
    /// `struct rdma_ucm_cmd_hdr`: `in` and `out` are byte counts (not words).
    pub struct CmdHdr { pub cmd: u32, pub in_len: u16, pub out_len: u16 }

    /// `struct sockaddr_in6` (28 bytes; also holds a `sockaddr_in` in its first 16).
    pub struct SockaddrIn6 {
        pub family: u16,
        /// Big-endian.
        pub port: u16,
        pub flowinfo: u32,
        pub addr: [u8; 16],
        pub scope_id: u32,
    }

    /// `struct __kernel_sockaddr_storage` (128 bytes, 8-aligned).
    #[repr(align(8))]
    pub struct SockaddrStorage { pub family: u16, pub data: [u8; 126] }

    /// `struct rdma_ucm_create_id`.
    pub struct CreateId { pub uid: u64, pub response: u64, pub ps: u16, pub qp_type: u8, pub reserved: [u8; 5] }
    /// `struct rdma_ucm_create_id_resp`.
    pub struct CreateIdResp { pub id: u32 }

    /// `struct rdma_ucm_destroy_id`.
    pub struct DestroyId { pub response: u64, pub id: u32, pub reserved: u32 }
    /// `struct rdma_ucm_destroy_id_resp`.
    pub struct DestroyIdResp { pub events_reported: u32 }

    /// `struct rdma_ucm_bind_ip` (legacy).
    pub struct BindIp { pub response: u64, pub addr: SockaddrIn6, pub id: u32 }

    /// `struct rdma_ucm_bind`.
    pub struct Bind { pub id: u32, pub addr_size: u16, pub reserved: u16, pub addr: SockaddrStorage }

    /// `struct rdma_ucm_resolve_ip` (legacy).
    pub struct ResolveIp { pub src_addr: SockaddrIn6, pub dst_addr: SockaddrIn6, pub id: u32, pub timeout_ms: u32 }

    /// `struct rdma_ucm_resolve_addr`.
    pub struct ResolveAddr {
        pub id: u32,
        pub timeout_ms: u32,
        pub src_size: u16,
        pub dst_size: u16,
        pub reserved: u32,
        pub src_addr: SockaddrStorage,
        pub dst_addr: SockaddrStorage,
    }

    /// `struct rdma_ucm_resolve_route`.
    pub struct ResolveRoute { pub id: u32, pub timeout_ms: u32 }

    /// `struct rdma_ucm_query` (QUERY and QUERY_ROUTE).
    pub struct Query { pub response: u64, pub id: u32, pub option: u32 }

    /// `struct ib_user_path_rec` (64 bytes; `__be` fields are big-endian).
    pub struct UserPathRec {
        pub dgid: [u8; 16],
        pub sgid: [u8; 16],
        pub dlid: u16,
        pub slid: u16,
        pub raw_traffic: u32,
        pub flow_label: u32,
        pub reversible: u32,
        pub mtu: u32,
        pub pkey: u16,
        pub hop_limit: u8,
        pub traffic_class: u8,
        pub numb_path: u8,
        pub sl: u8,
        pub mtu_selector: u8,
        pub rate_selector: u8,
        pub rate: u8,
        pub packet_life_time_selector: u8,
        pub packet_life_time: u8,
        pub preference: u8,
    }

    /// `struct rdma_ucm_query_route_resp` (208 bytes; 8-byte aligned like its `__be64`, which
    /// the byte-order type is not).
    #[repr(align(8))]
    pub struct QueryRouteResp {
        /// `__be64`.
        pub node_guid: U64<BigEndian>,
        pub ib_route: [UserPathRec; 2],
        pub src_addr: SockaddrIn6,
        pub dst_addr: SockaddrIn6,
        pub num_paths: u32,
        pub port_num: u8,
        pub reserved: [u8; 3],
        pub ibdev_index: u32,
        pub reserved1: u32,
    }

    /// `struct rdma_ucm_query_addr_resp` (280 bytes).
    pub struct QueryAddrResp {
        /// `__be64`.
        pub node_guid: U64<BigEndian>,
        pub port_num: u8,
        pub reserved: u8,
        pub pkey: u16,
        pub src_size: u16,
        pub dst_size: u16,
        pub src_addr: SockaddrStorage,
        pub dst_addr: SockaddrStorage,
        pub ibdev_index: u32,
        pub reserved1: u32,
    }

    /// `struct ib_path_rec_data` (72 bytes): `path_rec` is the IB SA PathRecord in wire format.
    pub struct PathRecData { pub flags: u32, pub reserved: u32, pub path_rec: [u32; 16] }

    /// `struct rdma_ucm_query_path_resp` header; `path_data[]` follows.
    pub struct QueryPathResp { pub num_paths: u32, pub reserved: u32 }

    /// `struct rdma_ucm_conn_param` (272 bytes).
    pub struct ConnParam {
        pub qp_num: u32,
        pub qkey: u32,
        pub private_data: [u8; 256],
        pub private_data_len: u8,
        pub srq: u8,
        pub responder_resources: u8,
        pub initiator_depth: u8,
        pub flow_control: u8,
        pub retry_count: u8,
        pub rnr_retry_count: u8,
        pub valid: u8,
    }

    /// `struct rdma_ucm_ud_param` (304 bytes).
    pub struct UdParam {
        pub qp_num: u32,
        pub qkey: u32,
        pub ah_attr: AhAttr,
        pub private_data: [u8; 256],
        pub private_data_len: u8,
        pub reserved: [u8; 7],
    }

    /// `struct rdma_ucm_ece`.
    pub struct Ece { pub vendor_id: u32, pub attr_mod: u32 }

    /// `struct rdma_ucm_connect` (288 bytes).
    pub struct Connect { pub conn_param: ConnParam, pub id: u32, pub reserved: u32, pub ece: Ece }

    /// `struct rdma_ucm_listen`.
    pub struct Listen { pub id: u32, pub backlog: u32 }

    /// `struct rdma_ucm_accept` (296 bytes).
    pub struct Accept { pub uid: u64, pub conn_param: ConnParam, pub id: u32, pub reserved: u32, pub ece: Ece }

    /// `struct rdma_ucm_reject` (264 bytes).
    pub struct Reject { pub id: u32, pub private_data_len: u8, pub reason: u8, pub reserved: [u8; 2], pub private_data: [u8; 256] }

    /// `struct rdma_ucm_disconnect`.
    pub struct Disconnect { pub id: u32 }

    /// `struct rdma_ucm_init_qp_attr`.
    pub struct InitQpAttr { pub response: u64, pub id: u32, pub qp_state: u32 }

    /// `struct rdma_ucm_notify`.
    pub struct Notify { pub id: u32, pub event: u32 }

    /// `struct rdma_ucm_get_event`.
    pub struct GetEvent { pub response: u64 }

    /// `struct rdma_ucm_event_resp` (336 bytes). `param` is the union of [`ConnParam`] (272)
    /// and [`UdParam`] (304), 4-aligned at offset 20.
    pub struct EventResp {
        pub uid: u64,
        pub id: u32,
        pub event: u32,
        /// `__u32` in the header; negative errno for the error events, an IB CM reject reason
        /// for REJECTED.
        pub status: u32,
        pub param: [u8; 304],
        pub reserved: u32,
        pub ece: Ece,
    }

    /// `struct rdma_ucm_set_option`.
    pub struct SetOption { pub optval: u64, pub id: u32, pub level: u32, pub optname: u32, pub optlen: u32 }

    /// `struct rdma_ucm_migrate_id`.
    pub struct MigrateId { pub response: u64, pub id: u32, pub fd: u32 }
    /// `struct rdma_ucm_migrate_resp`.
    pub struct MigrateResp { pub events_reported: u32 }
}
