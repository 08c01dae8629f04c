//! Shared receive queues (basic and XRC).

use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

abi! {
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

    /// `struct ib_uverbs_destroy_srq`.
    pub struct DestroySrq { pub response: u64, pub srq_handle: u32, pub reserved: u32 }

    /// `struct ib_uverbs_destroy_srq_resp`.
    pub struct DestroySrqResp { pub events_reported: u32 }
}

/// `enum ib_uverbs_srq_type` values.
pub const IB_UVERBS_SRQT_BASIC: u32 = 0;
pub const IB_UVERBS_SRQT_XRC: u32 = 1;
