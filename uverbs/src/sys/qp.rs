//! Queue pairs and address handles: create / modify / query / destroy, the posted work
//! requests of POST_SEND, multicast attach, the QP types and attribute-mask bits.

use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

abi! {
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

    /// `struct ib_uverbs_ex_modify_qp`: EX_MODIFY_QP's core request (a driver that answers a
    /// modify, as mlx5 does for a DCT at RTR, needs the extended command).
    #[repr(align(8))]
    pub struct ExModifyQp { pub base: ModifyQp, pub rate_limit: u32, pub reserved: u32 }

    /// `struct ib_uverbs_ex_modify_qp_resp`.
    pub struct ExModifyQpResp { pub comp_mask: u32, pub response_length: u32 }

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

    /// `struct ib_uverbs_qp_attr` (144 bytes): what rdma_ucm's INIT_QP_ATTR writes back.
    pub struct QpAttrResp {
        pub qp_attr_mask: u32,
        pub qp_state: u32,
        pub cur_qp_state: u32,
        pub path_mtu: u32,
        pub path_mig_state: u32,
        pub qkey: u32,
        pub rq_psn: u32,
        pub sq_psn: u32,
        pub dest_qp_num: u32,
        pub qp_access_flags: u32,
        pub ah_attr: AhAttr,
        pub alt_ah_attr: AhAttr,
        pub max_send_wr: u32,
        pub max_recv_wr: u32,
        pub max_send_sge: u32,
        pub max_recv_sge: u32,
        pub max_inline_data: u32,
        pub pkey_index: u16,
        pub alt_pkey_index: u16,
        pub en_sqd_async_notify: u8,
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
        pub reserved: [u8; 5],
    }

    /// `struct ib_uverbs_detach_mcast` (same layout as attach).
    #[repr(align(8))]
    pub struct DetachMcast { pub gid: [u8; 16], pub qp_handle: u32, pub mlid: u16, pub reserved: u16 }
}

const _: () = assert!(core::mem::size_of::<QpAttrResp>() == 144);

// `ib_uverbs_qp_cap` doubles as the verbs layer's `provider::QpCaps`.
const _: () = assert!(core::mem::size_of::<QpCap>() == 20);

/// `IB_UVERBS_QP_CREATE_SQ_SIG_ALL` (QP.CREATE FLAGS attribute).
pub const IB_UVERBS_QP_CREATE_SQ_SIG_ALL: u32 = 1 << 12;

/// `enum ib_uverbs_qp_type` values used here.
pub const IB_UVERBS_QPT_RC: u8 = 2;
pub const IB_UVERBS_QPT_UC: u8 = 3;
pub const IB_UVERBS_QPT_UD: u8 = 4;
/// XRC initiator (send side): a send queue only, sends name the target SRQ.
pub const IB_UVERBS_QPT_XRC_INI: u8 = 9;
/// XRC target (receive side): created on an XRC domain, no queues of its own.
pub const IB_UVERBS_QPT_XRC_TGT: u8 = 10;

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
