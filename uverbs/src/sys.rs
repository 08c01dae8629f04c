//! The raw kernel ABI: hand-written `#[repr(C)]` mirrors of the uAPI structs in
//! `<rdma/ib_user_verbs.h>`, `<rdma/ib_user_ioctl_verbs.h>`, `<rdma/rdma_user_ioctl_cmds.h>`,
//! `<rdma/ib_user_ioctl_cmds.h>`, `<rdma/rdma_user_rxe.h>` and `<rdma/mlx5-abi.h>`, and the
//! command, object, method and attribute numbers. No logic lives here.
//!
//! Naming: `struct ib_uverbs_reg_mr` is [`RegMr`], `struct rxe_send_wqe` is [`rxe::SendWqe`],
//! `struct mlx5_ib_create_qp` is [`mlx5::CreateQp`]. Unions become one field holding the
//! union's bytes (or its only integer), with one struct per member where the members are
//! structured. Flexible array members (`driver_data[]`, `data[]`) are not fields; their offset
//! is the struct size or a named constant. Implicit C padding is spelled out as `_padN` fields so
//! that every struct can be `IntoBytes`.
//!
//! Every size, alignment and field offset is checked against the installed kernel headers by
//! `tests/layout.rs` (compiled with gcc at test time).

use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

/// Declares ABI structs: `#[repr(C)]`, the zerocopy traits, `Clone`, `Copy`, `Debug`,
/// `PartialEq`, `Eq`, and a zeroed `Default`.
macro_rules! abi {
    ($(
        $(#[$m:meta])*
        pub struct $name:ident { $( $(#[$fm:meta])* pub $f:ident : $t:ty ),* $(,)? }
    )*) => {$(
        $(#[$m])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
        pub struct $name { $( $(#[$fm])* pub $f : $t ),* }

        impl Default for $name {
            fn default() -> Self {
                <Self as FromZeros>::new_zeroed()
            }
        }
    )*};
}
// Also declares the rdma_cm ABI structs (`crate::cm::sys`).
pub(crate) use abi;

// ================================================================================================
// Legacy write() commands (enum ib_uverbs_write_cmds) and framing
// ================================================================================================

pub const IB_USER_VERBS_ABI_VERSION: u32 = 6;
pub const IB_USER_VERBS_CMD_COMMAND_MASK: u32 = 0xff;
pub const IB_USER_VERBS_CMD_FLAG_EXTENDED: u32 = 0x8000_0000;

pub const CMD_GET_CONTEXT: u32 = 0;
pub const CMD_QUERY_DEVICE: u32 = 1;
pub const CMD_QUERY_PORT: u32 = 2;
pub const CMD_ALLOC_PD: u32 = 3;
pub const CMD_DEALLOC_PD: u32 = 4;
pub const CMD_CREATE_AH: u32 = 5;
pub const CMD_DESTROY_AH: u32 = 8;
pub const CMD_REG_MR: u32 = 9;
pub const CMD_DEREG_MR: u32 = 13;
pub const CMD_CREATE_COMP_CHANNEL: u32 = 17;
pub const CMD_CREATE_CQ: u32 = 18;
pub const CMD_DESTROY_CQ: u32 = 20;
pub const CMD_POLL_CQ: u32 = 21;
pub const CMD_REQ_NOTIFY_CQ: u32 = 23;
pub const CMD_CREATE_QP: u32 = 24;
pub const CMD_QUERY_QP: u32 = 25;
pub const CMD_MODIFY_QP: u32 = 26;
pub const CMD_DESTROY_QP: u32 = 27;
pub const CMD_POST_SEND: u32 = 28;
pub const CMD_POST_RECV: u32 = 29;
pub const CMD_ATTACH_MCAST: u32 = 30;
pub const CMD_DETACH_MCAST: u32 = 31;
pub const CMD_CREATE_SRQ: u32 = 32;
pub const CMD_MODIFY_SRQ: u32 = 33;
pub const CMD_DESTROY_SRQ: u32 = 35;
pub const CMD_OPEN_XRCD: u32 = 37;
pub const CMD_CLOSE_XRCD: u32 = 38;
pub const CMD_CREATE_XSRQ: u32 = 39;

/// Extended commands (`enum ib_uverbs_ex_write_cmds`), without the EXTENDED flag.
pub const CMD_EX_QUERY_DEVICE: u32 = 1;
pub const CMD_EX_CREATE_CQ: u32 = 18;
pub const CMD_EX_CREATE_QP: u32 = 24;
pub const CMD_EX_MODIFY_QP: u32 = 26;

abi! {
    /// `struct ib_uverbs_cmd_hdr`: in/out words are 4-byte units, `in_words` includes this header.
    pub struct CmdHdr {
        pub command: u32,
        pub in_words: u16,
        pub out_words: u16,
    }

    /// `struct ib_uverbs_ex_cmd_hdr`: follows [`CmdHdr`] for extended commands; 8-byte units.
    pub struct ExCmdHdr {
        pub response: u64,
        pub provider_in_words: u16,
        pub provider_out_words: u16,
        pub cmd_hdr_reserved: u32,
    }

    /// `struct ib_uverbs_get_context`.
    pub struct GetContext { pub response: u64 }
    /// `struct ib_uverbs_get_context_resp`.
    #[repr(align(8))]
    pub struct GetContextResp { pub async_fd: u32, pub num_comp_vectors: u32 }

    /// `struct ib_uverbs_query_device`.
    pub struct QueryDevice { pub response: u64 }

    /// `struct ib_uverbs_query_device_resp` (176 bytes).
    pub struct QueryDeviceResp {
        pub fw_ver: u64,
        /// Big-endian on the wire (`__be64`), kept as raw.
        pub node_guid: u64,
        /// Big-endian on the wire (`__be64`), kept as raw.
        pub sys_image_guid: u64,
        pub max_mr_size: u64,
        pub page_size_cap: u64,
        pub vendor_id: u32,
        pub vendor_part_id: u32,
        pub hw_ver: u32,
        pub max_qp: u32,
        pub max_qp_wr: u32,
        pub device_cap_flags: u32,
        pub max_sge: u32,
        pub max_sge_rd: u32,
        pub max_cq: u32,
        pub max_cqe: u32,
        pub max_mr: u32,
        pub max_pd: u32,
        pub max_qp_rd_atom: u32,
        pub max_ee_rd_atom: u32,
        pub max_res_rd_atom: u32,
        pub max_qp_init_rd_atom: u32,
        pub max_ee_init_rd_atom: u32,
        pub atomic_cap: u32,
        pub max_ee: u32,
        pub max_rdd: u32,
        pub max_mw: u32,
        pub max_raw_ipv6_qp: u32,
        pub max_raw_ethy_qp: u32,
        pub max_mcast_grp: u32,
        pub max_mcast_qp_attach: u32,
        pub max_total_mcast_qp_attach: u32,
        pub max_ah: u32,
        pub max_fmr: u32,
        pub max_map_per_fmr: u32,
        pub max_srq: u32,
        pub max_srq_wr: u32,
        pub max_srq_sge: u32,
        pub max_pkeys: u16,
        pub local_ca_ack_delay: u8,
        pub phys_port_cnt: u8,
        pub reserved: [u8; 4],
    }

    /// `struct ib_uverbs_ex_query_device` (the core request of EX_QUERY_DEVICE).
    pub struct ExQueryDevice { pub comp_mask: u32, pub reserved: u32 }

    /// `struct ib_uverbs_odp_caps` (`per_transport_caps` flattened).
    pub struct OdpCaps {
        pub general_caps: u64,
        pub rc_odp_caps: u32,
        pub uc_odp_caps: u32,
        pub ud_odp_caps: u32,
        pub reserved: u32,
    }

    /// `struct ib_uverbs_rss_caps`.
    pub struct RssCaps {
        pub supported_qpts: u32,
        pub max_rwq_indirection_tables: u32,
        pub max_rwq_indirection_table_size: u32,
        pub reserved: u32,
    }

    /// `struct ib_uverbs_tm_caps`.
    pub struct TmCaps {
        pub max_rndv_hdr_size: u32,
        pub max_num_tags: u32,
        pub flags: u32,
        pub max_ops: u32,
        pub max_sge: u32,
        pub reserved: u32,
    }

    /// `struct ib_uverbs_cq_moderation_caps`.
    pub struct CqModerationCaps {
        pub max_cq_moderation_count: u16,
        pub max_cq_moderation_period: u16,
        pub reserved: u32,
    }

    /// `struct ib_uverbs_ex_query_device_resp` (304 bytes on 6.1).
    pub struct ExQueryDeviceResp {
        pub base: QueryDeviceResp,
        pub comp_mask: u32,
        pub response_length: u32,
        pub odp_caps: OdpCaps,
        pub timestamp_mask: u64,
        /// kHz.
        pub hca_core_clock: u64,
        pub device_cap_flags_ex: u64,
        pub rss_caps: RssCaps,
        pub max_wq_type_rq: u32,
        pub raw_packet_caps: u32,
        pub tm_caps: TmCaps,
        pub cq_moderation_caps: CqModerationCaps,
        pub max_dm_size: u64,
        pub xrc_odp_caps: u32,
        pub reserved: u32,
    }

    /// `struct ib_uverbs_query_port`.
    pub struct QueryPort { pub response: u64, pub port_num: u8, pub reserved: [u8; 7] }

    /// `struct ib_uverbs_query_port_resp` (40 bytes).
    pub struct QueryPortResp {
        pub port_cap_flags: u32,
        pub max_msg_sz: u32,
        pub bad_pkey_cntr: u32,
        pub qkey_viol_cntr: u32,
        pub gid_tbl_len: u32,
        pub pkey_tbl_len: u16,
        pub lid: u16,
        pub sm_lid: u16,
        pub state: u8,
        pub max_mtu: u8,
        pub active_mtu: u8,
        pub lmc: u8,
        pub max_vl_num: u8,
        pub sm_sl: u8,
        pub subnet_timeout: u8,
        pub init_type_reply: u8,
        pub active_width: u8,
        pub active_speed: u8,
        pub phys_state: u8,
        pub link_layer: u8,
        pub flags: u8,
        pub reserved: u8,
    }

    /// `struct ib_uverbs_query_port_resp_ex` (48 bytes; the ioctl QUERY_PORT answer).
    /// Newer headers split `reserved` into `reserved[2]` + `active_speed_ex` u32 @44.
    pub struct QueryPortRespEx {
        pub legacy_resp: QueryPortResp,
        pub port_cap_flags2: u16,
        pub reserved: [u8; 6],
    }

    /// `struct ib_uverbs_alloc_pd`.
    pub struct AllocPd { pub response: u64 }
    /// `struct ib_uverbs_alloc_pd_resp`.
    pub struct AllocPdResp { pub pd_handle: u32 }
    /// `struct ib_uverbs_dealloc_pd`.
    pub struct DeallocPd { pub pd_handle: u32 }

    /// `struct ib_uverbs_reg_mr`.
    pub struct RegMr {
        pub response: u64,
        pub start: u64,
        pub length: u64,
        pub hca_va: u64,
        pub pd_handle: u32,
        pub access_flags: u32,
    }
    /// `struct ib_uverbs_reg_mr_resp`.
    pub struct RegMrResp { pub mr_handle: u32, pub lkey: u32, pub rkey: u32 }
    /// `struct ib_uverbs_dereg_mr`.
    pub struct DeregMr { pub mr_handle: u32 }

    /// `struct ib_uverbs_create_comp_channel`.
    pub struct CreateCompChannel { pub response: u64 }
    /// `struct ib_uverbs_create_comp_channel_resp`.
    pub struct CreateCompChannelResp { pub fd: u32 }

    /// `struct ib_uverbs_create_cq`.
    pub struct CreateCq {
        pub response: u64,
        pub user_handle: u64,
        pub cqe: u32,
        pub comp_vector: u32,
        /// -1: no completion channel.
        pub comp_channel: i32,
        pub reserved: u32,
    }
    /// `struct ib_uverbs_create_cq_resp`.
    #[repr(align(8))]
    pub struct CreateCqResp { pub cq_handle: u32, pub cqe: u32 }

    /// `struct ib_uverbs_ex_create_cq`.
    pub struct ExCreateCq {
        pub user_handle: u64,
        pub cqe: u32,
        pub comp_vector: u32,
        pub comp_channel: i32,
        pub comp_mask: u32,
        pub flags: u32,
        pub reserved: u32,
    }
    /// `struct ib_uverbs_ex_create_cq_resp`.
    #[repr(align(8))]
    pub struct ExCreateCqResp { pub base: CreateCqResp, pub comp_mask: u32, pub response_length: u32 }

    /// `struct ib_uverbs_destroy_cq`.
    pub struct DestroyCq { pub response: u64, pub cq_handle: u32, pub reserved: u32 }
    /// `struct ib_uverbs_destroy_cq_resp`.
    pub struct DestroyCqResp { pub comp_events_reported: u32, pub async_events_reported: u32 }

    /// `struct ib_uverbs_req_notify_cq`.
    pub struct ReqNotifyCq { pub cq_handle: u32, pub solicited_only: u32 }

    /// `struct ib_uverbs_wc` (48 bytes; also the first 48 bytes of an rxe CQE slot).
    pub struct Wc {
        pub wr_id: u64,
        pub status: u32,
        pub opcode: u32,
        pub vendor_err: u32,
        pub byte_len: u32,
        /// `ex.imm_data` (big-endian as sent) / `ex.invalidate_rkey`.
        pub ex: u32,
        pub qp_num: u32,
        pub src_qp: u32,
        pub wc_flags: u32,
        pub pkey_index: u16,
        pub slid: u16,
        pub sl: u8,
        pub dlid_path_bits: u8,
        pub port_num: u8,
        pub reserved: u8,
    }

    /// `struct ib_uverbs_global_route`.
    pub struct GlobalRoute {
        pub dgid: [u8; 16],
        pub flow_label: u32,
        pub sgid_index: u8,
        pub hop_limit: u8,
        pub traffic_class: u8,
        pub reserved: u8,
    }

    /// `struct ib_uverbs_ah_attr` (32 bytes).
    pub struct AhAttr {
        pub grh: GlobalRoute,
        pub dlid: u16,
        pub sl: u8,
        pub src_path_bits: u8,
        pub static_rate: u8,
        pub is_global: u8,
        pub port_num: u8,
        pub reserved: u8,
    }

    /// `struct ib_uverbs_create_qp`.
    pub struct CreateQp {
        pub response: u64,
        pub user_handle: u64,
        pub pd_handle: u32,
        pub send_cq_handle: u32,
        pub recv_cq_handle: u32,
        pub srq_handle: u32,
        pub max_send_wr: u32,
        pub max_recv_wr: u32,
        pub max_send_sge: u32,
        pub max_recv_sge: u32,
        pub max_inline_data: u32,
        pub sq_sig_all: u8,
        pub qp_type: u8,
        pub is_srq: u8,
        pub reserved: u8,
    }

    /// `struct ib_uverbs_ex_create_qp`.
    pub struct ExCreateQp {
        pub user_handle: u64,
        pub pd_handle: u32,
        pub send_cq_handle: u32,
        pub recv_cq_handle: u32,
        pub srq_handle: u32,
        pub max_send_wr: u32,
        pub max_recv_wr: u32,
        pub max_send_sge: u32,
        pub max_recv_sge: u32,
        pub max_inline_data: u32,
        pub sq_sig_all: u8,
        pub qp_type: u8,
        pub is_srq: u8,
        pub reserved: u8,
        pub comp_mask: u32,
        pub create_flags: u32,
        pub rwq_ind_tbl_handle: u32,
        pub source_qpn: u32,
    }

    /// `struct ib_uverbs_create_qp_resp`.
    pub struct CreateQpResp {
        pub qp_handle: u32,
        pub qpn: u32,
        pub max_send_wr: u32,
        pub max_recv_wr: u32,
        pub max_send_sge: u32,
        pub max_recv_sge: u32,
        pub max_inline_data: u32,
        pub reserved: u32,
    }
    /// `struct ib_uverbs_ex_create_qp_resp`.
    pub struct ExCreateQpResp { pub base: CreateQpResp, pub comp_mask: u32, pub response_length: u32 }

    /// `struct ib_uverbs_qp_cap` (the ioctl QP_CREATE CAP / RESP_CAP attributes).
    pub struct QpCap {
        pub max_send_wr: u32,
        pub max_recv_wr: u32,
        pub max_send_sge: u32,
        pub max_recv_sge: u32,
        pub max_inline_data: u32,
    }

    /// `struct ib_uverbs_qp_dest` (32 bytes).
    pub struct QpDest {
        pub dgid: [u8; 16],
        pub flow_label: u32,
        pub dlid: u16,
        pub reserved: u16,
        pub sgid_index: u8,
        pub hop_limit: u8,
        pub traffic_class: u8,
        pub sl: u8,
        pub src_path_bits: u8,
        pub static_rate: u8,
        pub is_global: u8,
        pub port_num: u8,
    }

    /// `struct ib_uverbs_modify_qp` (112 bytes; no response).
    #[repr(align(8))]
    pub struct ModifyQp {
        pub dest: QpDest,
        pub alt_dest: QpDest,
        pub qp_handle: u32,
        pub attr_mask: u32,
        pub qkey: u32,
        pub rq_psn: u32,
        pub sq_psn: u32,
        pub dest_qp_num: u32,
        pub qp_access_flags: u32,
        pub pkey_index: u16,
        pub alt_pkey_index: u16,
        pub qp_state: u8,
        pub cur_qp_state: u8,
        pub path_mtu: u8,
        pub path_mig_state: u8,
        pub en_sqd_async_notify: u8,
        pub max_rd_atomic: u8,
        pub max_dest_rd_atomic: u8,
        pub min_rnr_timer: u8,
        pub port_num: u8,
        pub timeout: u8,
        pub retry_cnt: u8,
        pub rnr_retry: u8,
        pub alt_port_num: u8,
        pub alt_timeout: u8,
        pub reserved: [u8; 2],
    }

    /// `struct ib_uverbs_query_qp`.
    pub struct QueryQp { pub response: u64, pub qp_handle: u32, pub attr_mask: u32 }

    /// `struct ib_uverbs_query_qp_resp` (128 bytes).
    #[repr(align(8))]
    pub struct QueryQpResp {
        pub dest: QpDest,
        pub alt_dest: QpDest,
        pub max_send_wr: u32,
        pub max_recv_wr: u32,
        pub max_send_sge: u32,
        pub max_recv_sge: u32,
        pub max_inline_data: u32,
        pub qkey: u32,
        pub rq_psn: u32,
        pub sq_psn: u32,
        pub dest_qp_num: u32,
        pub qp_access_flags: u32,
        pub pkey_index: u16,
        pub alt_pkey_index: u16,
        pub qp_state: u8,
        pub cur_qp_state: u8,
        pub path_mtu: u8,
        pub path_mig_state: u8,
        pub sq_draining: u8,
        pub max_rd_atomic: u8,
        pub max_dest_rd_atomic: u8,
        pub min_rnr_timer: u8,
        pub port_num: u8,
        pub timeout: u8,
        pub retry_cnt: u8,
        pub rnr_retry: u8,
        pub alt_port_num: u8,
        pub alt_timeout: u8,
        pub sq_sig_all: u8,
        pub reserved: [u8; 5],
    }

    /// `struct ib_uverbs_destroy_qp`.
    pub struct DestroyQp { pub response: u64, pub qp_handle: u32, pub reserved: u32 }
    /// `struct ib_uverbs_destroy_qp_resp`.
    pub struct DestroyQpResp { pub events_reported: u32 }

    /// `struct ib_uverbs_sge`.
    pub struct UverbsSge { pub addr: u64, pub length: u32, pub lkey: u32 }

    /// `struct ib_uverbs_send_wr` (56 bytes); the `wr` union as raw bytes
    /// (rdma: remote_addr @24 rkey @32; atomic: remote_addr, compare_add, swap, rkey @48;
    /// ud: ah @24, remote_qpn @28, remote_qkey @32).
    pub struct UverbsSendWr {
        pub wr_id: u64,
        pub num_sge: u32,
        pub opcode: u32,
        pub send_flags: u32,
        pub ex: u32,
        pub wr: [u64; 4],
    }

    /// `struct ib_uverbs_post_send` (the 24-byte core; WRs and SGEs follow).
    pub struct PostSend {
        pub response: u64,
        pub qp_handle: u32,
        pub wr_count: u32,
        pub sge_count: u32,
        pub wqe_size: u32,
    }
    /// `struct ib_uverbs_post_send_resp`.
    pub struct PostSendResp { pub bad_wr: u32 }

    /// `struct ib_uverbs_create_ah`.
    pub struct CreateAh {
        pub response: u64,
        pub user_handle: u64,
        pub pd_handle: u32,
        pub reserved: u32,
        pub attr: AhAttr,
    }
    /// `struct ib_uverbs_create_ah_resp`.
    pub struct CreateAhResp { pub ah_handle: u32 }
    /// `struct ib_uverbs_destroy_ah`.
    pub struct DestroyAh { pub ah_handle: u32 }

    /// `struct ib_uverbs_attach_mcast` (no driver data follows for any provider here; the
    /// trailing `__aligned_u64 driver_data[]` makes it 8-aligned).
    #[repr(align(8))]
    pub struct AttachMcast { pub gid: [u8; 16], pub qp_handle: u32, pub mlid: u16, pub reserved: u16 }
    /// `struct ib_uverbs_detach_mcast` (same layout as attach).
    #[repr(align(8))]
    pub struct DetachMcast { pub gid: [u8; 16], pub qp_handle: u32, pub mlid: u16, pub reserved: u16 }

    /// `struct ib_uverbs_create_srq`.
    pub struct CreateSrq {
        pub response: u64,
        pub user_handle: u64,
        pub pd_handle: u32,
        pub max_wr: u32,
        pub max_sge: u32,
        pub srq_limit: u32,
    }
    /// `struct ib_uverbs_create_srq_resp`.
    pub struct CreateSrqResp { pub srq_handle: u32, pub max_wr: u32, pub max_sge: u32, pub srqn: u32 }
    /// `struct ib_uverbs_create_xsrq` (48 bytes; CREATE_XSRQ: an SRQ of any `srq_type`, for XRC
    /// with its XRC domain and completion queue).
    pub struct CreateXsrq {
        pub response: u64,
        pub user_handle: u64,
        /// `enum ib_uverbs_srq_type` ([`IB_UVERBS_SRQT_XRC`]).
        pub srq_type: u32,
        pub pd_handle: u32,
        pub max_wr: u32,
        pub max_sge: u32,
        pub srq_limit: u32,
        pub max_num_tags: u32,
        pub xrcd_handle: u32,
        pub cq_handle: u32,
    }

    /// `struct ib_uverbs_open_xrcd`: `fd` -1 opens a domain of this context only; a file's fd
    /// shares the domain between processes that open the same inode (with `O_CREAT` in `oflags`
    /// to create it).
    pub struct OpenXrcd { pub response: u64, pub fd: u32, pub oflags: u32 }
    /// `struct ib_uverbs_open_xrcd_resp`.
    pub struct OpenXrcdResp { pub xrcd_handle: u32 }
    /// `struct ib_uverbs_close_xrcd` (no response).
    pub struct CloseXrcd { pub xrcd_handle: u32 }

    /// `struct ib_uverbs_destroy_srq`.
    pub struct DestroySrq { pub response: u64, pub srq_handle: u32, pub reserved: u32 }
    /// `struct ib_uverbs_destroy_srq_resp`.
    pub struct DestroySrqResp { pub events_reported: u32 }

    /// `struct ib_uverbs_comp_event_desc`: read from a completion channel fd.
    pub struct CompEventDesc { pub cq_handle: u64 }
    /// `struct ib_uverbs_async_event_desc`: read from the async event fd.
    pub struct AsyncEventDesc { pub element: u64, pub event_type: u32, pub reserved: u32 }

    /// `struct ib_uverbs_gid_entry` (32 bytes; `gid` is `__aligned_u64[2]` in C).
    #[repr(align(8))]
    pub struct GidEntry {
        pub gid: [u8; 16],
        pub gid_index: u32,
        pub port_num: u32,
        pub gid_type: u32,
        pub netdev_ifindex: u32,
    }

    // ---- ioctl -------------------------------------------------------------------------------

    /// `struct ib_uverbs_attr` (16 bytes).
    pub struct IoctlAttr {
        pub attr_id: u16,
        pub len: u16,
        pub flags: u16,
        /// `attr_data` union (`enum_data.{elem_id, reserved}` or `reserved`).
        pub attr_data: u16,
        /// `data` / `data_s64`: pointer, inline bytes, handle or fd.
        pub data: u64,
    }

    /// `struct ib_uverbs_ioctl_hdr` (24 bytes; `attrs[]` follow).
    pub struct IoctlHdr {
        pub length: u16,
        pub object_id: u16,
        pub method_id: u16,
        pub num_attrs: u16,
        pub reserved1: u64,
        pub driver_id: u32,
        pub reserved2: u32,
    }
}

/// `RDMA_VERBS_IOCTL` = `_IOWR(0x1b, 1, struct ib_uverbs_ioctl_hdr)`.
pub const RDMA_VERBS_IOCTL: u64 = 0xC018_1B01;

pub const UVERBS_ATTR_F_MANDATORY: u16 = 1 << 0;
pub const UVERBS_ATTR_F_VALID_OUTPUT: u16 = 1 << 1;

pub const UVERBS_ID_NS_MASK: u16 = 0xF000;
pub const UVERBS_UDATA_DRIVER_DATA_FLAG: u16 = 1 << 12;
pub const UVERBS_ATTR_UHW_IN: u16 = 0x1000;
pub const UVERBS_ATTR_UHW_OUT: u16 = 0x1001;

/// `enum uverbs_default_objects`.
pub mod obj {
    pub const DEVICE: u16 = 0;
    pub const PD: u16 = 1;
    pub const COMP_CHANNEL: u16 = 2;
    pub const CQ: u16 = 3;
    pub const QP: u16 = 4;
    pub const SRQ: u16 = 5;
    pub const AH: u16 = 6;
    pub const MR: u16 = 7;
    pub const MW: u16 = 8;
    pub const XRCD: u16 = 10;
    pub const ASYNC_EVENT: u16 = 16;
}

/// Method ids per object.
pub mod method {
    // DEVICE
    pub const INVOKE_WRITE: u16 = 0;
    pub const INFO_HANDLES: u16 = 1;
    pub const QUERY_PORT: u16 = 2;
    pub const GET_CONTEXT: u16 = 3;
    pub const QUERY_CONTEXT: u16 = 4;
    pub const QUERY_GID_TABLE: u16 = 5;
    pub const QUERY_GID_ENTRY: u16 = 6;
    // CQ / QP / SRQ
    pub const CQ_CREATE: u16 = 0;
    pub const CQ_DESTROY: u16 = 1;
    pub const QP_CREATE: u16 = 0;
    pub const QP_DESTROY: u16 = 1;
    pub const SRQ_CREATE: u16 = 0;
    pub const SRQ_DESTROY: u16 = 1;
    // single-method objects
    pub const PD_DESTROY: u16 = 0;
    pub const AH_DESTROY: u16 = 0;
    pub const MR_DESTROY: u16 = 1;
    pub const XRCD_DESTROY: u16 = 0;
    pub const ASYNC_EVENT_ALLOC: u16 = 0;
}

/// Attribute ids per method.
pub mod attr {
    // DEVICE.INVOKE_WRITE
    pub const CORE_IN: u16 = 0;
    pub const CORE_OUT: u16 = 1;
    pub const WRITE_CMD: u16 = 2;
    // DEVICE.QUERY_PORT
    pub const QUERY_PORT_PORT_NUM: u16 = 0;
    pub const QUERY_PORT_RESP: u16 = 1;
    // DEVICE.GET_CONTEXT
    pub const GET_CONTEXT_NUM_COMP_VECTORS: u16 = 0;
    pub const GET_CONTEXT_CORE_SUPPORT: u16 = 1;
    // DEVICE.QUERY_GID_TABLE
    pub const QUERY_GID_TABLE_ENTRY_SIZE: u16 = 0;
    pub const QUERY_GID_TABLE_FLAGS: u16 = 1;
    pub const QUERY_GID_TABLE_RESP_ENTRIES: u16 = 2;
    pub const QUERY_GID_TABLE_RESP_NUM_ENTRIES: u16 = 3;
    // DEVICE.QUERY_GID_ENTRY
    pub const QUERY_GID_ENTRY_PORT: u16 = 0;
    pub const QUERY_GID_ENTRY_GID_INDEX: u16 = 1;
    pub const QUERY_GID_ENTRY_FLAGS: u16 = 2;
    pub const QUERY_GID_ENTRY_RESP_ENTRY: u16 = 3;
    // ASYNC_EVENT.ALLOC
    pub const ASYNC_EVENT_ALLOC_FD_HANDLE: u16 = 0;
    // CQ.CREATE
    pub const CREATE_CQ_HANDLE: u16 = 0;
    pub const CREATE_CQ_CQE: u16 = 1;
    pub const CREATE_CQ_USER_HANDLE: u16 = 2;
    pub const CREATE_CQ_COMP_CHANNEL: u16 = 3;
    pub const CREATE_CQ_COMP_VECTOR: u16 = 4;
    pub const CREATE_CQ_FLAGS: u16 = 5;
    pub const CREATE_CQ_RESP_CQE: u16 = 6;
    pub const CREATE_CQ_EVENT_FD: u16 = 7;
    // CQ.DESTROY
    pub const DESTROY_CQ_HANDLE: u16 = 0;
    pub const DESTROY_CQ_RESP: u16 = 1;
    // QP.CREATE
    pub const CREATE_QP_HANDLE: u16 = 0;
    pub const CREATE_QP_XRCD_HANDLE: u16 = 1;
    pub const CREATE_QP_PD_HANDLE: u16 = 2;
    pub const CREATE_QP_SRQ_HANDLE: u16 = 3;
    pub const CREATE_QP_SEND_CQ_HANDLE: u16 = 4;
    pub const CREATE_QP_RECV_CQ_HANDLE: u16 = 5;
    pub const CREATE_QP_IND_TABLE_HANDLE: u16 = 6;
    pub const CREATE_QP_USER_HANDLE: u16 = 7;
    pub const CREATE_QP_CAP: u16 = 8;
    pub const CREATE_QP_TYPE: u16 = 9;
    pub const CREATE_QP_FLAGS: u16 = 10;
    pub const CREATE_QP_SOURCE_QPN: u16 = 11;
    pub const CREATE_QP_EVENT_FD: u16 = 12;
    pub const CREATE_QP_RESP_CAP: u16 = 13;
    pub const CREATE_QP_RESP_QP_NUM: u16 = 14;
    // QP.DESTROY
    pub const DESTROY_QP_HANDLE: u16 = 0;
    pub const DESTROY_QP_RESP: u16 = 1;
    // single-handle destroys
    pub const DESTROY_PD_HANDLE: u16 = 0;
    pub const DESTROY_MR_HANDLE: u16 = 0;
    pub const DESTROY_AH_HANDLE: u16 = 0;
    pub const DESTROY_XRCD_HANDLE: u16 = 0;
}

/// `IB_UVERBS_QP_CREATE_SQ_SIG_ALL` (QP.CREATE FLAGS attribute).
pub const IB_UVERBS_QP_CREATE_SQ_SIG_ALL: u32 = 1 << 12;

/// `enum rdma_driver_id` values used here.
pub const RDMA_DRIVER_MLX5: u32 = 1;
pub const RDMA_DRIVER_RXE: u32 = 14;

/// `enum ib_uverbs_qp_type` values used here.
pub const IB_UVERBS_QPT_RC: u8 = 2;
pub const IB_UVERBS_QPT_UC: u8 = 3;
pub const IB_UVERBS_QPT_UD: u8 = 4;
/// XRC initiator (send side): a send queue only, sends name the target SRQ.
pub const IB_UVERBS_QPT_XRC_INI: u8 = 9;
/// XRC target (receive side): created on an XRC domain, no queues of its own.
pub const IB_UVERBS_QPT_XRC_TGT: u8 = 10;

/// `enum ib_uverbs_srq_type` values.
pub const IB_UVERBS_SRQT_BASIC: u32 = 0;
pub const IB_UVERBS_SRQT_XRC: u32 = 1;

/// `IB_UVERBS_DEVICE_XRC` in `device_cap_flags`: the device implements XRC domains, XRC SRQs
/// and the XRC QP types.
pub const IB_UVERBS_DEVICE_XRC: u32 = 1 << 20;

/// QP attribute mask bits (`enum ibv_qp_attr_mask`, same numbers as the kernel's `ib_qp_attr_mask`).
pub mod qp_attr {
    pub const STATE: u32 = 1 << 0;
    pub const CUR_STATE: u32 = 1 << 1;
    pub const EN_SQD_ASYNC_NOTIFY: u32 = 1 << 2;
    pub const ACCESS_FLAGS: u32 = 1 << 3;
    pub const PKEY_INDEX: u32 = 1 << 4;
    pub const PORT: u32 = 1 << 5;
    pub const QKEY: u32 = 1 << 6;
    pub const AV: u32 = 1 << 7;
    pub const PATH_MTU: u32 = 1 << 8;
    pub const TIMEOUT: u32 = 1 << 9;
    pub const RETRY_CNT: u32 = 1 << 10;
    pub const RNR_RETRY: u32 = 1 << 11;
    pub const RQ_PSN: u32 = 1 << 12;
    pub const MAX_QP_RD_ATOMIC: u32 = 1 << 13;
    pub const ALT_PATH: u32 = 1 << 14;
    pub const MIN_RNR_TIMER: u32 = 1 << 15;
    pub const SQ_PSN: u32 = 1 << 16;
    pub const MAX_DEST_RD_ATOMIC: u32 = 1 << 17;
    pub const PATH_MIG_STATE: u32 = 1 << 18;
    pub const CAP: u32 = 1 << 19;
    pub const DEST_QPN: u32 = 1 << 20;
    /// Every bit a non-ex MODIFY_QP accepts.
    pub const ALL_STANDARD: u32 = (1 << 21) - 1;
}

/// Access flags (`enum ib_uverbs_access_flags`).
pub mod access {
    pub const LOCAL_WRITE: u32 = 1 << 0;
    pub const REMOTE_WRITE: u32 = 1 << 1;
    pub const REMOTE_READ: u32 = 1 << 2;
    pub const REMOTE_ATOMIC: u32 = 1 << 3;
    pub const MW_BIND: u32 = 1 << 4;
    pub const ZERO_BASED: u32 = 1 << 5;
    pub const ON_DEMAND: u32 = 1 << 6;
    pub const HUGETLB: u32 = 1 << 7;
    pub const RELAXED_ORDERING: u32 = 1 << 20;
}

/// Port states and link layers (`enum ib_port_state`; `IB_LINK_LAYER_*`).
pub const IB_PORT_ACTIVE: u8 = 4;
pub const IB_LINK_LAYER_INFINIBAND: u8 = 1;
pub const IB_LINK_LAYER_ETHERNET: u8 = 2;

/// GID types (`enum ib_uverbs_gid_type`).
pub const IB_UVERBS_GID_TYPE_IB: u32 = 0;
pub const IB_UVERBS_GID_TYPE_ROCE_V1: u32 = 1;
pub const IB_UVERBS_GID_TYPE_ROCE_V2: u32 = 2;

// ================================================================================================
// rxe (rdma_user_rxe.h)
// ================================================================================================

/// `<rdma/rdma_user_rxe.h>`: Soft-RoCE driver data and shared-ring formats.
pub mod rxe {
    use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

    pub const RXE_NETWORK_TYPE_IPV4: u8 = 1;
    pub const RXE_NETWORK_TYPE_IPV6: u8 = 2;

    /// Offsets in the `rxe_queue_buf` header; `data[]` starts at [`QUEUE_DATA_OFFSET`].
    pub const QUEUE_LOG2_ELEM_SIZE_OFFSET: usize = 0;
    pub const QUEUE_INDEX_MASK_OFFSET: usize = 4;
    pub const QUEUE_PRODUCER_INDEX_OFFSET: usize = 128;
    pub const QUEUE_CONSUMER_INDEX_OFFSET: usize = 256;
    pub const QUEUE_DATA_OFFSET: usize = 384;
    /// Offset of the payload (SGE array or inline data) in a send WQE: `dma.sge` / `dma.inline_data`.
    pub const SEND_WQE_PAYLOAD_OFFSET: usize = 208;
    /// Offset of the SGE array in a receive WQE.
    pub const RECV_WQE_PAYLOAD_OFFSET: usize = 40;

    abi! {
        /// `struct rxe_global_route` (24 bytes incl. one byte of trailing padding).
        #[repr(align(8))]
        pub struct GlobalRoute {
            pub dgid: [u8; 16],
            pub flow_label: u32,
            pub sgid_index: u8,
            pub hop_limit: u8,
            pub traffic_class: u8,
            /// Implicit C padding.
            pub _pad: u8,
        }

        /// `struct rxe_av` (88 bytes). `sgid_addr`/`dgid_addr` are `sockaddr_in`/`sockaddr_in6`
        /// unions, kept as bytes.
        #[repr(align(8))]
        pub struct Av {
            pub port_num: u8,
            pub network_type: u8,
            pub dmac: [u8; 6],
            pub grh: GlobalRoute,
            pub sgid_addr: [u8; 28],
            pub dgid_addr: [u8; 28],
        }

        /// `struct rxe_send_wr` (144 bytes). `ex` = imm_data / invalidate_rkey; `wr` is the
        /// union (see [`WrRdma`], [`WrAtomic`], [`WrUd`], [`WrMw`]).
        pub struct SendWr {
            pub wr_id: u64,
            /// `num_sge` before ≈6.1; ignored by the kernel.
            pub reserved: u32,
            pub opcode: u32,
            pub send_flags: u32,
            pub ex: u32,
            pub wr: WrUnion,
        }

        /// The bytes of `rxe_send_wr.wr` (120 bytes, 8-byte aligned).
        #[repr(align(8))]
        pub struct WrUnion { pub bytes: [u8; 120] }

        /// `rxe_send_wr.wr.rdma`.
        pub struct WrRdma { pub remote_addr: u64, pub rkey: u32, pub reserved: u32 }

        /// `rxe_send_wr.wr.atomic`.
        pub struct WrAtomic {
            pub remote_addr: u64,
            pub compare_add: u64,
            pub swap: u64,
            pub rkey: u32,
            pub reserved: u32,
        }

        /// `rxe_send_wr.wr.ud`.
        #[repr(align(8))]
        pub struct WrUd {
            pub remote_qpn: u32,
            pub remote_qkey: u32,
            pub pkey_index: u16,
            pub reserved: u16,
            pub ah_num: u32,
            pub pad: [u32; 4],
            pub av: Av,
        }

        /// `rxe_send_wr.wr.mw`.
        pub struct WrMw {
            pub addr: u64,
            pub length: u64,
            pub mr_lkey: u32,
            pub mw_rkey: u32,
            pub rkey: u32,
            pub access: u32,
        }

        /// `struct rxe_sge`.
        pub struct Sge { pub addr: u64, pub length: u32, pub lkey: u32 }

        /// `struct mminfo`: an mmap cookie for a ring.
        pub struct Mminfo { pub offset: u64, pub size: u32, pub pad: u32 }

        /// `struct rxe_dma_info` (24 bytes; the SGE array / inline data follows).
        #[repr(align(8))]
        pub struct DmaInfo {
            pub length: u32,
            pub resid: u32,
            pub cur_sge: u32,
            pub num_sge: u32,
            pub sge_offset: u32,
            pub reserved: u32,
        }

        /// `struct rxe_send_wqe` (208 bytes + payload).
        pub struct SendWqe {
            pub wr: SendWr,
            pub status: u32,
            pub state: u32,
            pub iova: u64,
            pub mask: u32,
            pub first_psn: u32,
            pub last_psn: u32,
            pub ack_length: u32,
            pub ssn: u32,
            pub has_rd_atomic: u32,
            pub dma: DmaInfo,
        }

        /// `struct rxe_recv_wqe` (40 bytes + SGEs).
        pub struct RecvWqe {
            pub wr_id: u64,
            pub reserved: u32,
            pub padding: u32,
            pub dma: DmaInfo,
        }

        /// `struct rxe_create_ah_resp`.
        pub struct CreateAhResp { pub ah_num: u32, pub reserved: u32 }
        /// `struct rxe_create_cq_resp`.
        pub struct CreateCqResp { pub mi: Mminfo }
        /// `struct rxe_resize_cq_resp`.
        pub struct ResizeCqResp { pub mi: Mminfo }
        /// `struct rxe_create_qp_resp`.
        pub struct CreateQpResp { pub rq_mi: Mminfo, pub sq_mi: Mminfo }
        /// `struct rxe_create_srq_resp`.
        pub struct CreateSrqResp { pub mi: Mminfo, pub srq_num: u32, pub reserved: u32 }
        /// `struct rxe_modify_srq_cmd`.
        pub struct ModifySrqCmd { pub mmap_info_addr: u64 }

        /// The header of `struct rxe_queue_buf` (384 bytes; `data[]` follows).
        pub struct QueueBufHdr {
            pub log2_elem_size: u32,
            pub index_mask: u32,
            pub pad_1: [u32; 30],
            pub producer_index: u32,
            pub pad_2: [u32; 31],
            pub consumer_index: u32,
            pub pad_3: [u32; 31],
        }
    }
}

// ================================================================================================
// mlx5 (mlx5-abi.h)
// ================================================================================================

/// `<rdma/mlx5-abi.h>`: ConnectX driver data.
pub mod mlx5 {
    use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

    pub const MLX5_IB_UVERBS_ABI_VERSION: u32 = 1;
    pub const MLX5_LIB_CAP_4K_UAR: u64 = 1 << 0;
    pub const MLX5_LIB_CAP_DYN_UAR: u64 = 1 << 1;

    abi! {
        /// `struct mlx5_ib_alloc_ucontext_req_v2` (32 bytes).
        pub struct AllocUcontextReqV2 {
            pub total_num_bfregs: u32,
            pub num_low_latency_bfregs: u32,
            pub flags: u32,
            pub comp_mask: u32,
            pub max_cqe_version: u8,
            pub reserved0: u8,
            pub reserved1: u16,
            pub reserved2: u32,
            pub lib_caps: u64,
        }

        /// `struct mlx5_ib_alloc_ucontext_resp` (72 bytes).
        pub struct AllocUcontextResp {
            pub qp_tab_size: u32,
            pub bf_reg_size: u32,
            pub tot_bfregs: u32,
            pub cache_line_size: u32,
            pub max_sq_desc_sz: u16,
            pub max_rq_desc_sz: u16,
            pub max_send_wqebb: u32,
            pub max_recv_wr: u32,
            pub max_srq_recv_wr: u32,
            pub num_ports: u16,
            pub flow_action_flags: u16,
            pub comp_mask: u32,
            pub response_length: u32,
            pub cqe_version: u8,
            pub cmds_supp_uhw: u8,
            pub eth_min_inline: u8,
            pub clock_info_versions: u8,
            pub hca_core_clock_offset: u64,
            pub log_uar_size: u32,
            pub num_uars_per_page: u32,
            pub num_dyn_bfregs: u32,
            pub dump_fill_mkey: u32,
        }

        /// `struct mlx5_ib_create_cq` (32 bytes).
        pub struct CreateCq {
            pub buf_addr: u64,
            pub db_addr: u64,
            pub cqe_size: u32,
            pub cqe_comp_en: u8,
            pub cqe_comp_res_format: u8,
            pub flags: u16,
            pub uar_page_index: u16,
            pub reserved0: u16,
            pub reserved1: u32,
        }
        /// `struct mlx5_ib_create_cq_resp`.
        pub struct CreateCqResp { pub cqn: u32, pub reserved: u32 }

        /// `struct mlx5_ib_create_srq` (32 bytes).
        pub struct CreateSrq {
            pub buf_addr: u64,
            pub db_addr: u64,
            pub flags: u32,
            pub reserved0: u32,
            pub uidx: u32,
            pub reserved1: u32,
        }
        /// `struct mlx5_ib_create_srq_resp`.
        pub struct CreateSrqResp { pub srqn: u32, pub reserved: u32 }

        /// `struct mlx5_ib_create_qp` (56 bytes). `sq_buf_addr` shares its slot with `access_key`;
        /// `dci_streams` is flattened.
        pub struct CreateQp {
            pub buf_addr: u64,
            pub db_addr: u64,
            pub sq_wqe_count: u32,
            pub rq_wqe_count: u32,
            pub rq_wqe_shift: u32,
            pub flags: u32,
            pub uidx: u32,
            pub bfreg_index: u32,
            pub sq_buf_addr: u64,
            pub ece_options: u32,
            pub dci_log_num_concurent: u8,
            pub dci_log_num_errored: u8,
            pub reserved: u16,
        }

        /// `struct mlx5_ib_create_qp_resp` (40 bytes).
        pub struct CreateQpResp {
            pub bfreg_index: u32,
            pub ece_options: u32,
            pub comp_mask: u32,
            pub tirn: u32,
            pub tisn: u32,
            pub rqn: u32,
            pub sqn: u32,
            pub reserved1: u32,
            pub tir_icm_addr: u64,
        }

        /// `struct mlx5_ib_create_ah_resp` (16 bytes).
        pub struct CreateAhResp { pub response_length: u32, pub dmac: [u8; 6], pub reserved: [u8; 6] }
    }
}

abi! {
    /// `struct ib_uverbs_ex_modify_qp`: EX_MODIFY_QP's core request (a driver that answers a
    /// modify, as mlx5 does for a DCT at RTR, needs the extended command).
    #[repr(align(8))]
    pub struct ExModifyQp { pub base: ModifyQp, pub rate_limit: u32, pub reserved: u32 }
    /// `struct ib_uverbs_ex_modify_qp_resp`.
    pub struct ExModifyQpResp { pub comp_mask: u32, pub response_length: u32 }
}
