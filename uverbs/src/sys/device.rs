//! The device, its ports and GIDs: GET_CONTEXT, QUERY_DEVICE (plain and extended), QUERY_PORT,
//! the GID table entry, the async event, and their constants.

use zerocopy::byteorder::{BigEndian, U64};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

abi! {
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
        /// `__be64`.
        pub node_guid: U64<BigEndian>,
        /// `__be64`.
        pub sys_image_guid: U64<BigEndian>,
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

    /// `struct ib_uverbs_gid_entry` (32 bytes; `gid` is `__aligned_u64[2]` in C).
    #[repr(align(8))]
    pub struct GidEntry {
        pub gid: [u8; 16],
        pub gid_index: u32,
        pub port_num: u32,
        pub gid_type: u32,
        pub netdev_ifindex: u32,
    }

    /// `struct ib_uverbs_async_event_desc`: read from the async event fd.
    pub struct AsyncEventDesc { pub element: u64, pub event_type: u32, pub reserved: u32 }
}

/// `enum rdma_driver_id` (`<rdma/ib_user_ioctl_verbs.h>`) values used here: the one home of
/// each driver id (discovery, the providers and the tools name them from here).
pub const RDMA_DRIVER_UNKNOWN: u32 = 0;
pub const RDMA_DRIVER_MLX5: u32 = 1;
pub const RDMA_DRIVER_MLX4: u32 = 2;
pub const RDMA_DRIVER_BNXT_RE: u32 = 6;
pub const RDMA_DRIVER_RXE: u32 = 14;
pub const RDMA_DRIVER_EFA: u32 = 17;
pub const RDMA_DRIVER_SIW: u32 = 18;

/// `IB_UVERBS_DEVICE_XRC` in `device_cap_flags`: the device implements XRC domains, XRC SRQs
/// and the XRC QP types.
pub const IB_UVERBS_DEVICE_XRC: u32 = 1 << 20;

/// Port states and link layers (`enum ib_port_state`; `IB_LINK_LAYER_*`).
pub const IB_PORT_ACTIVE: u8 = 4;
pub const IB_LINK_LAYER_INFINIBAND: u8 = 1;
pub const IB_LINK_LAYER_ETHERNET: u8 = 2;

/// GID types (`enum ib_uverbs_gid_type`).
pub const IB_UVERBS_GID_TYPE_IB: u32 = 0;
pub const IB_UVERBS_GID_TYPE_ROCE_V1: u32 = 1;
pub const IB_UVERBS_GID_TYPE_ROCE_V2: u32 = 2;
