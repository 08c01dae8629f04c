//! Byte offsets and sizes of the rxe shared structures, from `<rdma/rdma_user_rxe.h>` and
//! `<rdma/ib_user_verbs.h>` (64-bit layout; rxe driver ABI 2). Each constant names the header
//! field it stands for. `providers/tests/rxe_layout.rs` checks every one of them against the
//! installed headers with a gcc-compiled `offsetof` probe.
//!
//! The encoders and decoders work on byte slices at these offsets, so they need neither unsafe
//! code nor `#[repr(C)]` mirrors of the kernel structs. The queue header and the work
//! completion, which uverbs also needs, are not spelled out again here: their offsets come from
//! the one definition in `uverbs::sys`.

use core::mem::{offset_of, size_of};

use uverbs::sys::{rxe, Wc};

// ---- struct rxe_queue_buf: defined once, as `uverbs::sys::rxe::QueueBufHdr` ---------------
/// `rxe_queue_buf.log2_elem_size` (u32).
pub const QB_LOG2_ELEM_SIZE: usize = rxe::QUEUE_LOG2_ELEM_SIZE_OFFSET;
/// `rxe_queue_buf.index_mask` (u32).
pub const QB_INDEX_MASK: usize = rxe::QUEUE_INDEX_MASK_OFFSET;
/// `rxe_queue_buf.producer_index` (u32), alone in its cache line.
pub const QB_PRODUCER_INDEX: usize = rxe::QUEUE_PRODUCER_INDEX_OFFSET;
/// `rxe_queue_buf.consumer_index` (u32), alone in its cache line.
pub const QB_CONSUMER_INDEX: usize = rxe::QUEUE_CONSUMER_INDEX_OFFSET;
/// `rxe_queue_buf.data[]`: slot 0 starts here. Also `sizeof(struct rxe_queue_buf)`.
pub const QB_DATA: usize = rxe::QUEUE_DATA_OFFSET;

// ---- struct rxe_send_wr (inside rxe_send_wqe at offset 0) ----------------------------------
/// `rxe_send_wr.wr_id` (u64).
pub const WR_ID: usize = 0;
/// `rxe_send_wr.reserved` (u32; was `num_sge` before Linux 6.1, ignored by the kernel now).
pub const WR_RESERVED: usize = 8;
/// `rxe_send_wr.opcode` (u32, `enum ib_uverbs_wr_opcode`).
pub const WR_OPCODE: usize = 12;
/// `rxe_send_wr.send_flags` (u32, `IB_SEND_*`).
pub const WR_SEND_FLAGS: usize = 16;
/// `rxe_send_wr.ex.imm_data` (__be32) / `ex.invalidate_rkey`.
pub const WR_IMM_DATA: usize = 20;
/// `rxe_send_wr.wr.rdma.remote_addr` (u64). The kernel takes the address from `iova` instead
/// (docs/rxe-kernel.md, "E4 kernel-owned WQE fields"); we fill both, as librxe does.
pub const WR_RDMA_REMOTE_ADDR: usize = 24;
/// `rxe_send_wr.wr.rdma.rkey` (u32).
pub const WR_RDMA_RKEY: usize = 32;
/// `rxe_send_wr.wr.atomic.remote_addr` (u64).
pub const WR_ATOMIC_REMOTE_ADDR: usize = 24;
/// `rxe_send_wr.wr.atomic.compare_add` (u64).
pub const WR_ATOMIC_COMPARE_ADD: usize = 32;
/// `rxe_send_wr.wr.atomic.swap` (u64).
pub const WR_ATOMIC_SWAP: usize = 40;
/// `rxe_send_wr.wr.atomic.rkey` (u32).
pub const WR_ATOMIC_RKEY: usize = 48;
/// `rxe_send_wr.wr.ud.remote_qpn` (u32).
pub const WR_UD_REMOTE_QPN: usize = 24;
/// `rxe_send_wr.wr.ud.remote_qkey` (u32).
pub const WR_UD_REMOTE_QKEY: usize = 28;
/// `rxe_send_wr.wr.ud.pkey_index` (u16).
pub const WR_UD_PKEY_INDEX: usize = 32;
/// `rxe_send_wr.wr.ud.ah_num` (u32).
pub const WR_UD_AH_NUM: usize = 36;
/// `rxe_send_wr.wr.ud.av` (`struct rxe_av`, 88 bytes; only used by kernels without `ah_num`).
pub const WR_UD_AV: usize = 56;
/// `sizeof(struct rxe_send_wr)`.
pub const SEND_WR_SIZE: usize = 144;

// ---- struct rxe_send_wqe -------------------------------------------------------------------
/// `rxe_send_wqe.status` (u32; written back by the kernel).
pub const WQE_STATUS: usize = 144;
/// `rxe_send_wqe.state` (u32; 0 = posted; written back by the kernel).
pub const WQE_STATE: usize = 148;
/// `rxe_send_wqe.iova` (u64): the remote address the kernel really uses
/// (docs/rxe-kernel.md, "E4 kernel-owned WQE fields").
pub const WQE_IOVA: usize = 152;
/// `rxe_send_wqe.mask` (u32; computed by the kernel).
pub const WQE_MASK: usize = 160;
/// `rxe_send_wqe.first_psn` (u32; computed by the kernel).
pub const WQE_FIRST_PSN: usize = 164;
/// `rxe_send_wqe.last_psn` (u32; computed by the kernel).
pub const WQE_LAST_PSN: usize = 168;
/// `rxe_send_wqe.ack_length` (u32).
pub const WQE_ACK_LENGTH: usize = 172;
/// `rxe_send_wqe.ssn` (u32).
pub const WQE_SSN: usize = 176;
/// `rxe_send_wqe.has_rd_atomic` (u32).
pub const WQE_HAS_RD_ATOMIC: usize = 180;
/// `rxe_send_wqe.dma` (`struct rxe_dma_info`).
pub const WQE_DMA: usize = 184;
/// `sizeof(struct rxe_send_wqe)`: the SGE array or the inline bytes start here
/// (`rxe_send_wqe.dma.sge[]` / `dma.inline_data[]`).
pub const SEND_WQE_SIZE: usize = 208;

// ---- struct rxe_dma_info (offsets relative to the struct) ----------------------------------
/// `rxe_dma_info.length` (u32): the message length, reported back as the CQE byte_len.
pub const DMA_LENGTH: usize = 0;
/// `rxe_dma_info.resid` (u32): what the kernel actually transfers; must equal length
/// (docs/rxe-kernel.md, "E4 kernel-owned WQE fields").
pub const DMA_RESID: usize = 4;
/// `rxe_dma_info.cur_sge` (u32).
pub const DMA_CUR_SGE: usize = 8;
/// `rxe_dma_info.num_sge` (u32).
pub const DMA_NUM_SGE: usize = 12;
/// `rxe_dma_info.sge_offset` (u32).
pub const DMA_SGE_OFFSET: usize = 16;
/// `rxe_dma_info.reserved` (u32).
pub const DMA_RESERVED: usize = 20;
/// `rxe_dma_info.sge[]` / `inline_data[]`; also `sizeof(struct rxe_dma_info)`.
pub const DMA_PAYLOAD: usize = 24;

// ---- struct rxe_sge ------------------------------------------------------------------------
/// `rxe_sge.addr` (u64).
pub const SGE_ADDR: usize = 0;
/// `rxe_sge.length` (u32).
pub const SGE_LENGTH: usize = 8;
/// `rxe_sge.lkey` (u32).
pub const SGE_LKEY: usize = 12;
/// `sizeof(struct rxe_sge)`.
pub const SGE_SIZE: usize = 16;

// ---- struct rxe_recv_wqe -------------------------------------------------------------------
/// `rxe_recv_wqe.wr_id` (u64).
pub const RECV_WR_ID: usize = 0;
/// `rxe_recv_wqe.reserved` (u32; was `num_sge` before Linux 6.1).
pub const RECV_RESERVED: usize = 8;
/// `rxe_recv_wqe.padding` (u32).
pub const RECV_PADDING: usize = 12;
/// `rxe_recv_wqe.dma` (`struct rxe_dma_info`).
pub const RECV_DMA: usize = 16;
/// `sizeof(struct rxe_recv_wqe)`: the SGE array starts here.
pub const RECV_WQE_SIZE: usize = 40;

// ---- struct ib_uverbs_wc (the first bytes of a CQ slot): defined once, as `uverbs::sys::Wc` --
/// `ib_uverbs_wc.wr_id` (u64).
pub const WC_WR_ID: usize = offset_of!(Wc, wr_id);
/// `ib_uverbs_wc.status` (u32).
pub const WC_STATUS: usize = offset_of!(Wc, status);
/// `ib_uverbs_wc.opcode` (u32).
pub const WC_OPCODE: usize = offset_of!(Wc, opcode);
/// `ib_uverbs_wc.vendor_err` (u32).
pub const WC_VENDOR_ERR: usize = offset_of!(Wc, vendor_err);
/// `ib_uverbs_wc.byte_len` (u32).
pub const WC_BYTE_LEN: usize = offset_of!(Wc, byte_len);
/// `ib_uverbs_wc.ex.imm_data` (__be32) / `ex.invalidate_rkey`.
pub const WC_IMM_DATA: usize = offset_of!(Wc, ex);
/// `ib_uverbs_wc.qp_num` (u32).
pub const WC_QP_NUM: usize = offset_of!(Wc, qp_num);
/// `ib_uverbs_wc.src_qp` (u32).
pub const WC_SRC_QP: usize = offset_of!(Wc, src_qp);
/// `ib_uverbs_wc.wc_flags` (u32).
pub const WC_WC_FLAGS: usize = offset_of!(Wc, wc_flags);
/// `ib_uverbs_wc.pkey_index` (u16).
pub const WC_PKEY_INDEX: usize = offset_of!(Wc, pkey_index);
/// `ib_uverbs_wc.slid` (u16).
pub const WC_SLID: usize = offset_of!(Wc, slid);
/// `ib_uverbs_wc.sl` (u8).
pub const WC_SL: usize = offset_of!(Wc, sl);
/// `ib_uverbs_wc.dlid_path_bits` (u8).
pub const WC_DLID_PATH_BITS: usize = offset_of!(Wc, dlid_path_bits);
/// `ib_uverbs_wc.port_num` (u8).
pub const WC_PORT_NUM: usize = offset_of!(Wc, port_num);
/// `sizeof(struct ib_uverbs_wc)`.
pub const WC_SIZE: usize = size_of::<Wc>();

// ---- driver responses ----------------------------------------------------------------------
/// `mminfo.offset` (u64).
pub const MMINFO_OFFSET: usize = 0;
/// `mminfo.size` (u32).
pub const MMINFO_SIZE: usize = 8;
/// `sizeof(struct mminfo)`.
pub const MMINFO_LEN: usize = 16;
/// `sizeof(struct rxe_create_cq_resp)` (`mi` at 0).
pub const CREATE_CQ_RESP_LEN: usize = 16;
/// `rxe_create_qp_resp.rq_mi`.
pub const CREATE_QP_RESP_RQ_MI: usize = 0;
/// `rxe_create_qp_resp.sq_mi`.
pub const CREATE_QP_RESP_SQ_MI: usize = 16;
/// `sizeof(struct rxe_create_qp_resp)`.
pub const CREATE_QP_RESP_LEN: usize = 32;
/// `rxe_create_srq_resp.srq_num` (u32; `mi` at 0).
pub const CREATE_SRQ_RESP_SRQ_NUM: usize = 16;
/// `sizeof(struct rxe_create_srq_resp)`.
pub const CREATE_SRQ_RESP_LEN: usize = 24;
/// `rxe_create_ah_resp.ah_num` (u32).
pub const CREATE_AH_RESP_AH_NUM: usize = 0;
/// `sizeof(struct rxe_create_ah_resp)`.
pub const CREATE_AH_RESP_LEN: usize = 8;

/// All constants by their C spelling, for the header check in `providers/tests/rxe_layout.rs`:
/// (`offsetof`/`sizeof` expression, our value).
pub const C_LAYOUT: &[(&str, usize)] = &[
    (
        "offsetof(struct rxe_queue_buf, log2_elem_size)",
        QB_LOG2_ELEM_SIZE,
    ),
    ("offsetof(struct rxe_queue_buf, index_mask)", QB_INDEX_MASK),
    (
        "offsetof(struct rxe_queue_buf, producer_index)",
        QB_PRODUCER_INDEX,
    ),
    (
        "offsetof(struct rxe_queue_buf, consumer_index)",
        QB_CONSUMER_INDEX,
    ),
    ("offsetof(struct rxe_queue_buf, data)", QB_DATA),
    ("sizeof(struct rxe_queue_buf)", QB_DATA),
    ("offsetof(struct rxe_send_wr, wr_id)", WR_ID),
    ("offsetof(struct rxe_send_wr, reserved)", WR_RESERVED),
    ("offsetof(struct rxe_send_wr, opcode)", WR_OPCODE),
    ("offsetof(struct rxe_send_wr, send_flags)", WR_SEND_FLAGS),
    ("offsetof(struct rxe_send_wr, ex.imm_data)", WR_IMM_DATA),
    (
        "offsetof(struct rxe_send_wr, wr.rdma.remote_addr)",
        WR_RDMA_REMOTE_ADDR,
    ),
    ("offsetof(struct rxe_send_wr, wr.rdma.rkey)", WR_RDMA_RKEY),
    (
        "offsetof(struct rxe_send_wr, wr.atomic.remote_addr)",
        WR_ATOMIC_REMOTE_ADDR,
    ),
    (
        "offsetof(struct rxe_send_wr, wr.atomic.compare_add)",
        WR_ATOMIC_COMPARE_ADD,
    ),
    (
        "offsetof(struct rxe_send_wr, wr.atomic.swap)",
        WR_ATOMIC_SWAP,
    ),
    (
        "offsetof(struct rxe_send_wr, wr.atomic.rkey)",
        WR_ATOMIC_RKEY,
    ),
    (
        "offsetof(struct rxe_send_wr, wr.ud.remote_qpn)",
        WR_UD_REMOTE_QPN,
    ),
    (
        "offsetof(struct rxe_send_wr, wr.ud.remote_qkey)",
        WR_UD_REMOTE_QKEY,
    ),
    (
        "offsetof(struct rxe_send_wr, wr.ud.pkey_index)",
        WR_UD_PKEY_INDEX,
    ),
    ("offsetof(struct rxe_send_wr, wr.ud.ah_num)", WR_UD_AH_NUM),
    ("offsetof(struct rxe_send_wr, wr.ud.av)", WR_UD_AV),
    ("sizeof(struct rxe_send_wr)", SEND_WR_SIZE),
    ("offsetof(struct rxe_send_wqe, status)", WQE_STATUS),
    ("offsetof(struct rxe_send_wqe, state)", WQE_STATE),
    ("offsetof(struct rxe_send_wqe, iova)", WQE_IOVA),
    ("offsetof(struct rxe_send_wqe, mask)", WQE_MASK),
    ("offsetof(struct rxe_send_wqe, first_psn)", WQE_FIRST_PSN),
    ("offsetof(struct rxe_send_wqe, last_psn)", WQE_LAST_PSN),
    ("offsetof(struct rxe_send_wqe, ack_length)", WQE_ACK_LENGTH),
    ("offsetof(struct rxe_send_wqe, ssn)", WQE_SSN),
    (
        "offsetof(struct rxe_send_wqe, has_rd_atomic)",
        WQE_HAS_RD_ATOMIC,
    ),
    ("offsetof(struct rxe_send_wqe, dma)", WQE_DMA),
    ("sizeof(struct rxe_send_wqe)", SEND_WQE_SIZE),
    ("offsetof(struct rxe_send_wqe, dma.sge)", SEND_WQE_SIZE),
    (
        "offsetof(struct rxe_send_wqe, dma.inline_data)",
        SEND_WQE_SIZE,
    ),
    ("offsetof(struct rxe_dma_info, length)", DMA_LENGTH),
    ("offsetof(struct rxe_dma_info, resid)", DMA_RESID),
    ("offsetof(struct rxe_dma_info, cur_sge)", DMA_CUR_SGE),
    ("offsetof(struct rxe_dma_info, num_sge)", DMA_NUM_SGE),
    ("offsetof(struct rxe_dma_info, sge_offset)", DMA_SGE_OFFSET),
    ("offsetof(struct rxe_dma_info, reserved)", DMA_RESERVED),
    ("offsetof(struct rxe_dma_info, sge)", DMA_PAYLOAD),
    ("sizeof(struct rxe_dma_info)", DMA_PAYLOAD),
    ("offsetof(struct rxe_sge, addr)", SGE_ADDR),
    ("offsetof(struct rxe_sge, length)", SGE_LENGTH),
    ("offsetof(struct rxe_sge, lkey)", SGE_LKEY),
    ("sizeof(struct rxe_sge)", SGE_SIZE),
    ("offsetof(struct rxe_recv_wqe, wr_id)", RECV_WR_ID),
    ("offsetof(struct rxe_recv_wqe, reserved)", RECV_RESERVED),
    ("offsetof(struct rxe_recv_wqe, padding)", RECV_PADDING),
    ("offsetof(struct rxe_recv_wqe, dma)", RECV_DMA),
    ("sizeof(struct rxe_recv_wqe)", RECV_WQE_SIZE),
    ("offsetof(struct rxe_recv_wqe, dma.sge)", RECV_WQE_SIZE),
    ("offsetof(struct ib_uverbs_wc, wr_id)", WC_WR_ID),
    ("offsetof(struct ib_uverbs_wc, status)", WC_STATUS),
    ("offsetof(struct ib_uverbs_wc, opcode)", WC_OPCODE),
    ("offsetof(struct ib_uverbs_wc, vendor_err)", WC_VENDOR_ERR),
    ("offsetof(struct ib_uverbs_wc, byte_len)", WC_BYTE_LEN),
    ("offsetof(struct ib_uverbs_wc, ex.imm_data)", WC_IMM_DATA),
    ("offsetof(struct ib_uverbs_wc, qp_num)", WC_QP_NUM),
    ("offsetof(struct ib_uverbs_wc, src_qp)", WC_SRC_QP),
    ("offsetof(struct ib_uverbs_wc, wc_flags)", WC_WC_FLAGS),
    ("offsetof(struct ib_uverbs_wc, pkey_index)", WC_PKEY_INDEX),
    ("offsetof(struct ib_uverbs_wc, slid)", WC_SLID),
    ("offsetof(struct ib_uverbs_wc, sl)", WC_SL),
    (
        "offsetof(struct ib_uverbs_wc, dlid_path_bits)",
        WC_DLID_PATH_BITS,
    ),
    ("offsetof(struct ib_uverbs_wc, port_num)", WC_PORT_NUM),
    ("sizeof(struct ib_uverbs_wc)", WC_SIZE),
    ("offsetof(struct mminfo, offset)", MMINFO_OFFSET),
    ("offsetof(struct mminfo, size)", MMINFO_SIZE),
    ("sizeof(struct mminfo)", MMINFO_LEN),
    ("sizeof(struct rxe_create_cq_resp)", CREATE_CQ_RESP_LEN),
    (
        "offsetof(struct rxe_create_qp_resp, rq_mi)",
        CREATE_QP_RESP_RQ_MI,
    ),
    (
        "offsetof(struct rxe_create_qp_resp, sq_mi)",
        CREATE_QP_RESP_SQ_MI,
    ),
    ("sizeof(struct rxe_create_qp_resp)", CREATE_QP_RESP_LEN),
    (
        "offsetof(struct rxe_create_srq_resp, srq_num)",
        CREATE_SRQ_RESP_SRQ_NUM,
    ),
    ("sizeof(struct rxe_create_srq_resp)", CREATE_SRQ_RESP_LEN),
    (
        "offsetof(struct rxe_create_ah_resp, ah_num)",
        CREATE_AH_RESP_AH_NUM,
    ),
    ("sizeof(struct rxe_create_ah_resp)", CREATE_AH_RESP_LEN),
];
