//! Protection domains, memory regions and XRC domains, and the access flags.

use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

abi! {
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

    /// `struct ib_uverbs_open_xrcd`: `fd` -1 opens a domain of this context only; a file's fd
    /// shares the domain between processes that open the same inode (with `O_CREAT` in `oflags`
    /// to create it).
    pub struct OpenXrcd { pub response: u64, pub fd: u32, pub oflags: u32 }

    /// `struct ib_uverbs_open_xrcd_resp`.
    pub struct OpenXrcdResp { pub xrcd_handle: u32 }

    /// `struct ib_uverbs_close_xrcd` (no response).
    pub struct CloseXrcd { pub xrcd_handle: u32 }
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
