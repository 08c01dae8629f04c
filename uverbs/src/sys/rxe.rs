//! `<rdma/rdma_user_rxe.h>`: Soft-RoCE driver data and shared-ring formats.

use core::mem::{offset_of, size_of};

use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

pub const RXE_NETWORK_TYPE_IPV4: u8 = 1;
pub const RXE_NETWORK_TYPE_IPV6: u8 = 2;

/// Offsets in the `rxe_queue_buf` header ([`QueueBufHdr`]); `data[]` starts at
/// [`QUEUE_DATA_OFFSET`]. The provider's ring code reads the indices at these offsets.
pub const QUEUE_LOG2_ELEM_SIZE_OFFSET: usize = offset_of!(QueueBufHdr, log2_elem_size);
pub const QUEUE_INDEX_MASK_OFFSET: usize = offset_of!(QueueBufHdr, index_mask);
pub const QUEUE_PRODUCER_INDEX_OFFSET: usize = offset_of!(QueueBufHdr, producer_index);
pub const QUEUE_CONSUMER_INDEX_OFFSET: usize = offset_of!(QueueBufHdr, consumer_index);
pub const QUEUE_DATA_OFFSET: usize = size_of::<QueueBufHdr>();
/// Offset of the payload (SGE array or inline data) in a send WQE: `dma.sge` / `dma.inline_data`.
pub const SEND_WQE_PAYLOAD_OFFSET: usize = size_of::<SendWqe>();
/// Offset of the SGE array in a receive WQE.
pub const RECV_WQE_PAYLOAD_OFFSET: usize = size_of::<RecvWqe>();

// The figures of rxe driver ABI 2 on 64-bit Linux (`tests/layout.rs` checks them against the
// installed header): a change to the structs below that moved one would stop the build.
const _: () = assert!(QUEUE_INDEX_MASK_OFFSET == 4);
const _: () = assert!(QUEUE_PRODUCER_INDEX_OFFSET == 128);
const _: () = assert!(QUEUE_CONSUMER_INDEX_OFFSET == 256);
const _: () = assert!(QUEUE_DATA_OFFSET == 384);
const _: () = assert!(SEND_WQE_PAYLOAD_OFFSET == 208);
const _: () = assert!(RECV_WQE_PAYLOAD_OFFSET == 40);
const _: () = assert!(size_of::<GlobalRoute>() == 24 && size_of::<Av>() == 88 && size_of::<SendWr>() == 144);

/// `struct rxe_global_route` is `ib_uverbs_global_route` field for field (24 bytes, the last one
/// padding); only its `union ib_gid dgid` makes the C struct 8-byte aligned, and [`Av`], the one
/// place rxe puts it, is 8-byte aligned itself with the route at offset 8. So one struct serves.
pub use super::GlobalRoute;
const _: () = assert!(core::mem::offset_of!(Av, grh) == 8);

abi! {
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
