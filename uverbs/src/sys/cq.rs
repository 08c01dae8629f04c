//! Completion channels and queues: creation, destroy, notification, the work completion
//! (`struct ib_uverbs_wc`) and the completion event.

use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

abi! {
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

    /// `struct ib_uverbs_comp_event_desc`: read from a completion channel fd.
    pub struct CompEventDesc { pub cq_handle: u64 }
}

// `ib_uverbs_wc` is 48 bytes with the flags word at 36 (`tests/layout.rs` checks every field
// against the header; the rxe provider decodes CQ slots at these offsets).
const _: () = assert!(core::mem::size_of::<Wc>() == 48);
const _: () = assert!(core::mem::offset_of!(Wc, wc_flags) == 36 && core::mem::offset_of!(Wc, port_num) == 46);
