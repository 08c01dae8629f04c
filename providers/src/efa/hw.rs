//! EFA device formats: sizes, bit fields and codes of the descriptors the provider writes and
//! the device writes back (rdma-core 44 `providers/efa/efa_io_defs.h`, `efa_io_regs_defs.h`).
//! All multi-byte fields are little-endian (the device's order; rdma-core stores them in host
//! order and EFA exists only on little-endian hosts).

/// One TX descriptor (`struct efa_io_tx_wqe`): the unit of the LLQ and of its 64-byte copies.
pub const TX_WQE_SIZE: usize = 64;
/// The meta descriptor at the start of a TX WQE (`struct efa_io_tx_meta_desc`).
pub const TX_META_SIZE: usize = 32;
/// One TX buffer descriptor (`struct efa_io_tx_buf_desc`) and the remote address of an RDMA
/// request (`struct efa_io_remote_mem_addr`).
pub const TX_BUF_DESC_SIZE: usize = 16;
/// Buffer descriptors a TX WQE holds (`EFA_IO_TX_DESC_NUM_BUFS`).
pub const TX_NUM_BUFS: usize = 2;
/// Local buffers of an RDMA request (`EFA_IO_TX_DESC_NUM_RDMA_BUFS`).
pub const TX_NUM_RDMA_BUFS: usize = 1;
/// Inline bytes a TX WQE holds (`EFA_IO_TX_DESC_INLINE_MAX_SIZE`).
pub const TX_INLINE_MAX: usize = 32;
/// One RX descriptor (`struct efa_io_rx_desc`), one per receive SGE.
pub const RX_DESC_SIZE: usize = 16;
/// The completion descriptor libefa 44 asks for (`struct efa_io_rx_cdesc`; a send completion,
/// `efa_io_tx_cdesc`, is its first 8 bytes in an entry of the same size).
pub const CDESC_SIZE: usize = 16;
/// The extended completion descriptor (`struct efa_io_rx_cdesc_ex`: after the 16 bytes, the
/// source GID with `EFA_CREATE_CQ_WITH_SGID`, or the high 16 bits of an RDMA write's length in
/// a receive completion, rdma-core 46 and later). Our CQs use it where the device can write.
pub const CDESC_EX_SIZE: usize = 32;

/// Byte offsets in the TX meta descriptor.
pub mod meta {
    pub const REQ_ID: usize = 0;
    pub const CTRL1: usize = 2;
    pub const CTRL2: usize = 3;
    pub const DEST_QP_NUM: usize = 4;
    pub const LENGTH: usize = 6;
    pub const IMMEDIATE_DATA: usize = 8;
    pub const AH: usize = 12;
    pub const QKEY: usize = 16;
}

/// `ctrl1` of the meta descriptor: bits 3:0 op type, 4 has_imm, 5 inline_msg,
/// 6 meta_extension, 7 meta_desc (must be set).
pub mod ctrl1 {
    pub const OP_TYPE_MASK: u8 = 0x0f;
    pub const HAS_IMM: u8 = 1 << 4;
    pub const INLINE_MSG: u8 = 1 << 5;
    pub const META_EXTENSION: u8 = 1 << 6;
    pub const META_DESC: u8 = 1 << 7;
}

/// `ctrl2` of the meta descriptor: bit 0 phase, 2 first, 3 last, 4 comp_req.
pub mod ctrl2 {
    pub const PHASE: u8 = 1 << 0;
    pub const FIRST: u8 = 1 << 2;
    pub const LAST: u8 = 1 << 3;
    pub const COMP_REQ: u8 = 1 << 4;
}

/// `enum efa_io_send_op_type` (rdma-core 44: send 0, RDMA read 1; rdma-core 46 added RDMA
/// write 2, which libefa 44 never writes).
pub const OP_SEND: u8 = 0;
pub const OP_RDMA_READ: u8 = 1;
pub const OP_RDMA_WRITE: u8 = 2;

/// The lkey/rkey field of a buffer descriptor: bits 23:0.
pub const LKEY_MASK: u32 = 0x00ff_ffff;
/// `lkey_ctrl` of an RX descriptor: bit 30 first, bit 31 last descriptor of the WQE.
pub const RX_FIRST: u32 = 1 << 30;
pub const RX_LAST: u32 = 1 << 31;

/// Byte offsets in a completion descriptor (`efa_io_cdesc_common`, then `efa_io_rx_cdesc`).
pub mod cdesc {
    pub const REQ_ID: usize = 0;
    pub const STATUS: usize = 2;
    pub const FLAGS: usize = 3;
    pub const QP_NUM: usize = 4;
    pub const LENGTH: usize = 6;
    pub const AH: usize = 8;
    pub const SRC_QP_NUM: usize = 10;
    pub const IMM: usize = 12;
    /// `efa_io_rx_cdesc_ex.u.rdma_write.length_hi` (rdma-core 46): bits 31:16 of a received
    /// RDMA write's length, in an extended entry only.
    pub const LENGTH_HI: usize = 16;
}

/// `flags` of a completion descriptor: bit 0 phase, 2:1 queue type, 3 has_imm, 6:4 the
/// operation (rdma-core 46; MBZ in rdma-core 44, so 0, a send, on older devices).
pub mod cflags {
    pub const PHASE: u8 = 1 << 0;
    pub const Q_TYPE_SHIFT: u8 = 1;
    pub const Q_TYPE_MASK: u8 = 0b110;
    pub const HAS_IMM: u8 = 1 << 3;
    pub const OP_TYPE_SHIFT: u8 = 4;
    pub const OP_TYPE_MASK: u8 = 0b111_0000;
}

/// `enum efa_io_queue_type`.
pub const QUEUE_SEND: u8 = 1;
pub const QUEUE_RECV: u8 = 2;

/// `enum efa_io_comp_status` (rdma-core 44).
pub mod status {
    pub const OK: u8 = 0;
    pub const FLUSHED: u8 = 1;
    pub const LOCAL_ERROR_QP_INTERNAL_ERROR: u8 = 2;
    pub const LOCAL_ERROR_INVALID_OP_TYPE: u8 = 3;
    pub const LOCAL_ERROR_INVALID_AH: u8 = 4;
    pub const LOCAL_ERROR_INVALID_LKEY: u8 = 5;
    pub const LOCAL_ERROR_BAD_LENGTH: u8 = 6;
    pub const REMOTE_ERROR_BAD_ADDRESS: u8 = 7;
    pub const REMOTE_ERROR_ABORT: u8 = 8;
    pub const REMOTE_ERROR_BAD_DEST_QPN: u8 = 9;
    pub const REMOTE_ERROR_RNR: u8 = 10;
    pub const REMOTE_ERROR_BAD_LENGTH: u8 = 11;
    pub const REMOTE_ERROR_BAD_STATUS: u8 = 12;
    pub const LOCAL_ERROR_UNRESP_REMOTE: u8 = 13;
}

/// The CQ doorbell (`efa_io_regs_defs.h`): consumer index in bits 15:0, the command sequence
/// number (2 bits) in 30:29, arm in bit 31.
pub mod cq_db {
    pub const CONSUMER_INDEX_MASK: u32 = 0xffff;
    pub const CMD_SN_SHIFT: u32 = 29;
    pub const CMD_SN_MASK: u32 = 0x6000_0000;
    pub const ARM: u32 = 0x8000_0000;
}

/// The CQ doorbell value: consumer counter `cc`, command sequence number `cmd_sn` (its low two
/// bits; libefa bumps it on each completion event), and whether the write arms the CQ.
pub fn cq_doorbell(cc: u16, cmd_sn: u8, arm: bool) -> u32 {
    let mut v = u32::from(cc) & cq_db::CONSUMER_INDEX_MASK;
    v |= (u32::from(cmd_sn & 0x3) << cq_db::CMD_SN_SHIFT) & cq_db::CMD_SN_MASK;
    if arm {
        v |= cq_db::ARM;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cq_doorbell_fields() {
        assert_eq!(cq_doorbell(0, 0, false), 0);
        assert_eq!(cq_doorbell(0x1234, 0, true), 0x8000_1234);
        assert_eq!(cq_doorbell(0xffff, 3, false), 0x6000_ffff);
        // Only the low two bits of the sequence number reach the register.
        assert_eq!(cq_doorbell(1, 5, true), 0x8000_0000 | (1 << 29) | 1);
    }
}
