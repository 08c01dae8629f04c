//! `<rdma/mlx5-abi.h>`: ConnectX driver data.

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

// The sizes of `<rdma/mlx5-abi.h>` on 64-bit Linux (`tests/layout.rs` checks every field against
// the header). The mlx5 provider takes its udata sizes and offsets from these structs.
const _: () = assert!(core::mem::size_of::<AllocUcontextReqV2>() == 32);
const _: () = assert!(core::mem::size_of::<AllocUcontextResp>() == 72);
const _: () = assert!(core::mem::size_of::<CreateCq>() == 32 && core::mem::size_of::<CreateCqResp>() == 8);
const _: () = assert!(core::mem::size_of::<CreateSrq>() == 32 && core::mem::size_of::<CreateSrqResp>() == 8);
const _: () = assert!(core::mem::size_of::<CreateQp>() == 56 && core::mem::size_of::<CreateQpResp>() == 40);
const _: () = assert!(core::mem::size_of::<CreateAhResp>() == 16);
