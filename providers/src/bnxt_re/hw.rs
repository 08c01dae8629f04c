//! The bnxt_re device formats: sizes, opcodes, flags and status codes of the SQ/RQ entries,
//! the completion entries and the doorbell, as Broadcom's NetXtreme-E RoCE engine defines them
//! (facts from rdma-core 44's `providers/bnxt_re/bnxt_re-abi.h`; the kernel's uAPI header has
//! only the driver data). All little-endian. No logic beyond the status mapping.

use uverbs::wr::{WcOpcode, WcStatus, WrOpcode};

/// Every queue is a ring of 16-byte slots: a WQE is a 32-byte header (base header + one
/// opcode-specific extension) followed by 16-byte SGEs or inline bytes.
pub const SLOT: usize = 16;
/// Base send header (`bnxt_re_bsqe`) + extended header (`bnxt_re_send`/`_rdma`/`_atomic`).
pub const SQE_HDR: usize = 32;
/// Base receive header (`bnxt_re_brqe`) + the reserved `bnxt_re_rqe`/`_srqe`.
pub const RQE_HDR: usize = 32;
/// Largest inline payload (`BNXT_RE_MAX_INLINE_SIZE`).
pub const MAX_INLINE: u32 = 0x60;
/// An SRQ entry: header + 96 bytes (6 SGEs).
pub const SRQE_SIZE: usize = RQE_HDR + MAX_INLINE as usize;
/// A completion entry as the poll loop strides them: `bnxt_re_req_cqe` (24) + `bnxt_re_bcqe`.
pub const CQE_SIZE: usize = 32;
/// Where the 8-byte base part (`bnxt_re_bcqe`) sits in every CQE.
pub const BCQE_OFF: usize = 24;
/// One PSN search entry per send WQE: `bnxt_re_psns` (8 bytes) or, on Thor-class (gen P5)
/// chips, `bnxt_re_psns_ext` (16 bytes, with the WQE's starting slot).
pub const PSNS_SIZE: usize = 8;
pub const PSNS_EXT_SIZE: usize = 16;
/// Static WQE mode: every WQE takes 8 slots (128 bytes: the header and 6 SGEs).
pub const STATIC_SLOTS: u32 = 8;
/// SGEs a static-mode WQE has room for.
pub const STATIC_SGES: u32 = 6;
/// Extra SQ entries kept free in static mode (`BNXT_RE_FULL_FLAG_DELTA`).
pub const FULL_FLAG_DELTA: u32 = 0x80;

/// WQE mode of the uctx response (`enum bnxt_re_wqe_mode`).
pub const WQE_MODE_STATIC: u32 = 0;
pub const WQE_MODE_VARIABLE: u32 = 1;

/// Thor (BCM5750x) chip numbers: these use the 16-byte PSN search entries.
pub const CHIP_NUM_57508: u16 = 0x1750;
pub const CHIP_NUM_57504: u16 = 0x1751;
pub const CHIP_NUM_57502: u16 = 0x1752;
/// Thor 2 (gen P7) chip numbers: their doorbells carry the epoch, toggle and valid bits.
pub const CHIP_NUM_57608: u16 = 0x1760;
pub const CHIP_NUM_58818: u16 = 0xd818;

/// Send WQE opcodes (`enum bnxt_re_wr_opcode`).
pub mod opcd {
    pub const SEND: u8 = 0x00;
    pub const SEND_IMM: u8 = 0x01;
    pub const RDMA_WRITE: u8 = 0x04;
    pub const RDMA_WRITE_IMM: u8 = 0x05;
    pub const RDMA_READ: u8 = 0x06;
    pub const ATOMIC_CS: u8 = 0x08;
    pub const ATOMIC_FA: u8 = 0x0b;
    pub const RECV: u8 = 0x80;
}

/// WQE header flags (`enum bnxt_re_wr_flags`), bits 8..16 of the header word.
pub mod wrflag {
    pub const SIGNALED: u32 = 0x01;
    pub const UC_FENCE: u32 = 0x04;
    pub const SE: u32 = 0x08;
    pub const INLINE: u32 = 0x10;
}
pub const HDR_FLAGS_SHIFT: u32 = 8;
/// WQE size in 16-byte slots, bits 16..24 of the header word.
pub const HDR_WS_SHIFT: u32 = 16;

/// Completion types (`enum bnxt_re_wc_type`).
pub mod wctype {
    pub const SEND: u8 = 0x0;
    pub const RECV_RC: u8 = 0x1;
    pub const RECV_UD: u8 = 0x2;
    pub const RECV_RAW: u8 = 0x3;
    pub const TERM: u8 = 0xe;
    pub const COFF: u8 = 0xf;
}

/// Receive completion flags (bits 16..32 of the base CQE word).
pub const RC_FLAGS_IMM: u16 = 0x02;
pub const RC_FLAGS_RDMA: u16 = 0x08;

/// Requester status "WR flushed" and responder status "hardware flush" (the latter is skipped:
/// software flushes the queue itself).
pub const REQ_ST_OK: u8 = 0;
pub const RSP_ST_OK: u8 = 0;
pub const RSP_ST_HW_FLUSH: u8 = 0x08;

/// Doorbell queue types (`enum bnxt_re_db_que_type`).
pub mod dbtype {
    pub const SQ: u32 = 0x0;
    pub const RQ: u32 = 0x1;
    pub const SRQ: u32 = 0x2;
    pub const CQ: u32 = 0x4;
    pub const CQ_ARMSE: u32 = 0x5;
    pub const CQ_ARMALL: u32 = 0x6;
}

/// UD send WQEs after which libbnxt_re moves the QP from RTS to RTS, working around a hardware
/// stall (`BNXT_RE_UD_QP_HW_STALL`, 4M).
pub const UD_QP_HW_STALL: u32 = 0x40_0000;

/// Gen P7 doorbells (rdma-core 50's format): the index word keeps 24 bits of index, then the
/// queue's epoch (bit 24: flips each time the producer, or a CQ's consumer, wraps) and the
/// toggle a CQ arm reads from the CQ's toggle page (bits 25..); the high word gains a valid bit.
pub const DB_EPOCH_SHIFT: u32 = 24;
pub const DB_TOGGLE_SHIFT: u32 = 25;
pub const DB_VALID_SHIFT: u32 = 26;

/// Offset of the AH's id in the context's shared page (`BNXT_RE_AVID_OFFT`).
pub const SHPG_AVID_OFF: usize = 0x10;

/// The hardware opcode of a send work request.
pub fn wr_opcode(op: WrOpcode) -> u8 {
    match op {
        WrOpcode::Send => opcd::SEND,
        WrOpcode::SendWithImm => opcd::SEND_IMM,
        WrOpcode::RdmaWrite => opcd::RDMA_WRITE,
        WrOpcode::RdmaWriteWithImm => opcd::RDMA_WRITE_IMM,
        WrOpcode::RdmaRead => opcd::RDMA_READ,
        WrOpcode::AtomicCmpAndSwp => opcd::ATOMIC_CS,
        WrOpcode::AtomicFetchAndAdd => opcd::ATOMIC_FA,
    }
}

/// A requester (send-side) error status as `ibv_wc_status`.
pub fn req_status(st: u8) -> WcStatus {
    match st {
        0x00 => WcStatus::Success,
        0x01 => WcStatus::BadRespErr,
        0x02 => WcStatus::LocLenErr,
        0x03 => WcStatus::LocQpOpErr,
        0x04 => WcStatus::LocProtErr,
        0x05 => WcStatus::MwBindErr,
        0x06 => WcStatus::RemInvReqErr,
        0x07 => WcStatus::RemAccessErr,
        0x08 => WcStatus::RemOpErr,
        0x09 => WcStatus::RnrRetryExcErr,
        0x0a => WcStatus::RetryExcErr,
        0x0b => WcStatus::WrFlushErr,
        _ => WcStatus::GeneralErr,
    }
}

/// A responder (receive-side) error status as `ibv_wc_status`.
pub fn rsp_status(st: u8) -> WcStatus {
    match st {
        0x00 => WcStatus::Success,
        0x01 => WcStatus::LocAccessErr,
        0x02 => WcStatus::LocLenErr,
        0x03 => WcStatus::LocProtErr,
        0x04 => WcStatus::LocQpOpErr,
        0x05 => WcStatus::MwBindErr,
        0x06 => WcStatus::RemInvReqErr,
        0x07 => WcStatus::WrFlushErr,
        0x08 => WcStatus::FatalErr,
        _ => WcStatus::GeneralErr,
    }
}

/// The completion opcode kept in a send WQE's PSN search entry (bits 24..32 of its first word):
/// the poller reads it back from there, so an entry the device never touches names the request.
pub fn wc_opcode_byte(op: WrOpcode) -> u8 {
    WcOpcode::for_send(op).raw() as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opcodes_are_the_engine_values() {
        assert_eq!(wr_opcode(WrOpcode::AtomicFetchAndAdd), 0x0b);
        assert_eq!(wr_opcode(WrOpcode::RdmaWriteWithImm), 0x05);
        assert_eq!(wc_opcode_byte(WrOpcode::RdmaRead), 2);
    }

    #[test]
    fn statuses_map_like_libbnxt_re() {
        assert_eq!(req_status(0x09), WcStatus::RnrRetryExcErr);
        assert_eq!(req_status(0x0a), WcStatus::RetryExcErr);
        assert_eq!(req_status(0x0b), WcStatus::WrFlushErr);
        assert_eq!(req_status(0x77), WcStatus::GeneralErr);
        assert_eq!(rsp_status(0x01), WcStatus::LocAccessErr);
        assert_eq!(rsp_status(0x08), WcStatus::FatalErr);
        assert_eq!(rsp_status(0x09), WcStatus::GeneralErr);
    }
}
