//! CQE decoding: a pure function from 64 CQE bytes to a completion (minus the `wr_id`, which the
//! queue layer looks up from the WQE counter). Any input gives a value or an error, never a
//! panic: every field is read from the fixed-size array at constant offsets. This is the fuzz
//! target's entry point.

use uverbs::wr::{wc_flags, WcOpcode, WcStatus, WorkCompletion};

use super::hw::{Cqe64, ErrCqe};
use super::umr::OPCODE_UMR;
use super::wqe::opcode as sop;

/// Size of the CQEs we create (64-byte CQEs; 128-byte CQEs are not used).
pub const CQE_SIZE: usize = 64;
/// `op_own` of a freshly initialised CQE: opcode INVALID, owner 0.
pub const OP_OWN_INIT: u8 = 0xf0;

/// CQE opcodes (`op_own >> 4`).
pub mod op {
    pub const REQ: u8 = 0;
    pub const RESP_WR_IMM: u8 = 1;
    pub const RESP_SEND: u8 = 2;
    pub const RESP_SEND_IMM: u8 = 3;
    pub const RESP_SEND_INV: u8 = 4;
    pub const RESIZE_CQ: u8 = 5;
    pub const NO_PACKET: u8 = 6;
    pub const SIG_ERR: u8 = 12;
    pub const REQ_ERR: u8 = 13;
    pub const RESP_ERR: u8 = 14;
    pub const INVALID: u8 = 15;
}

/// `op_own` bits 2..3: 1 = 32 bytes of payload scattered into this CQE, 2 = 64 bytes in the
/// preceding CQE (128-byte CQEs only), 3 = compressed CQE block.
pub const FORMAT_INLINE_32: u8 = 1;
pub const FORMAT_INLINE_64: u8 = 2;
pub const FORMAT_COMPRESSED: u8 = 3;

/// Error syndromes (`MLX5_CQE_SYNDROME_*`).
pub mod syndrome {
    pub const LOCAL_LENGTH: u8 = 0x01;
    pub const LOCAL_QP_OP: u8 = 0x02;
    pub const LOCAL_PROT: u8 = 0x04;
    pub const WR_FLUSH: u8 = 0x05;
    pub const MW_BIND: u8 = 0x06;
    pub const BAD_RESP: u8 = 0x10;
    pub const LOCAL_ACCESS: u8 = 0x11;
    pub const REMOTE_INVAL_REQ: u8 = 0x12;
    pub const REMOTE_ACCESS: u8 = 0x13;
    pub const REMOTE_OP: u8 = 0x14;
    pub const TRANSPORT_RETRY_EXC: u8 = 0x15;
    pub const RNR_RETRY_EXC: u8 = 0x16;
    pub const REMOTE_ABORTED: u8 = 0x22;
}

/// Byte offsets in `struct mlx5_cqe64` / `struct mlx5_err_cqe`, from their one definition in
/// `hw.rs` (the CQ ring reads `op_own` by offset; tests and the fuzz target build CQEs with
/// them).
pub mod off {
    use core::mem::offset_of;

    use super::super::hw::{Cqe64, ErrCqe};

    pub const ML_PATH: usize = offset_of!(Cqe64, ml_path);
    pub const SLID: usize = offset_of!(Cqe64, slid);
    pub const FLAGS_RQPN: usize = offset_of!(Cqe64, flags_rqpn);
    pub const SRQN_UIDX: usize = offset_of!(Cqe64, srqn_uidx);
    pub const IMM_INVAL_PKEY: usize = offset_of!(Cqe64, imm_inval_pkey);
    pub const BYTE_CNT: usize = offset_of!(Cqe64, byte_cnt);
    pub const VENDOR_ERR_SYND: usize = offset_of!(ErrCqe, vendor_err_synd);
    pub const SYNDROME: usize = offset_of!(ErrCqe, syndrome);
    pub const SOP_DROP_QPN: usize = offset_of!(Cqe64, sop_drop_qpn);
    pub const WQE_COUNTER: usize = offset_of!(Cqe64, wqe_counter);
    pub const SIGNATURE: usize = offset_of!(Cqe64, signature);
    pub const OP_OWN: usize = offset_of!(Cqe64, op_own);

    // The values the code was written against (mlx5dv.h; the layout test checks the header).
    const _: () = assert!(ML_PATH == 17 && SLID == 22 && FLAGS_RQPN == 24 && SRQN_UIDX == 32);
    const _: () = assert!(IMM_INVAL_PKEY == 36 && BYTE_CNT == 44 && VENDOR_ERR_SYND == 54 && SYNDROME == 55);
    const _: () = assert!(SOP_DROP_QPN == 56 && WQE_COUNTER == 60 && SIGNATURE == 62 && OP_OWN == 63);
}

/// Which work queue a CQE completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Queue {
    /// Requester: the SQ; `wqe_counter` names the WQE's first basic block.
    Send,
    /// Responder: the RQ or SRQ; `wqe_counter` names the receive WQE.
    Recv,
}

/// A decoded CQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cqe {
    pub queue: Queue,
    pub wqe_counter: u16,
    /// QPN from `sop_drop_qpn` (24 bits).
    pub qpn: u32,
    /// `srqn_uidx` (24 bits): the user index with CQE version 1, the SRQN with version 0.
    pub srqn_uidx: u32,
    /// Payload of up to 32 bytes delivered inside the CQE (bytes 0..32): the consumer copies
    /// `min(byte_len, 32)` of them into the receive buffer.
    pub inline_scatter_32: bool,
    /// The completion, with `wr_id` 0 (filled in by the queue layer).
    pub wc: WorkCompletion,
}

/// Why a CQE could not be turned into a completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CqeError {
    /// A compressed CQE block: CQE compression is never enabled by this provider.
    Compressed,
    /// Payload in the previous CQE (128-byte CQE mode, which we never create).
    InlineScatter64,
    /// A CQE opcode this provider does not handle (resize, tag matching, signature, invalid).
    Opcode(u8),
}

impl std::fmt::Display for CqeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CqeError::Compressed => {
                write!(f, "compressed CQE format (CQE compression was not requested and is not supported)")
            }
            CqeError::InlineScatter64 => {
                write!(f, "64-byte inline-scattered CQE in a 64-byte-CQE ring")
            }
            CqeError::Opcode(o) => write!(f, "unsupported CQE opcode {o:#x}"),
        }
    }
}

/// Is the CQE with this `op_own` byte, at consumer index `ci` of a ring of `ncqe` entries
/// (a power of two), owned by software? The owner bit flips on each lap of the ring.
#[inline]
pub fn sw_owned(op_own: u8, ci: u32, ncqe: u32) -> bool {
    (op_own >> 4) != op::INVALID && ((op_own & 1) != 0) == ((ci & ncqe) != 0)
}

/// The completion status for an error syndrome (others: GENERAL_ERR, as libmlx5 does).
pub fn status_for_syndrome(s: u8) -> WcStatus {
    match s {
        syndrome::LOCAL_LENGTH => WcStatus::LocLenErr,
        syndrome::LOCAL_QP_OP => WcStatus::LocQpOpErr,
        syndrome::LOCAL_PROT => WcStatus::LocProtErr,
        syndrome::WR_FLUSH => WcStatus::WrFlushErr,
        syndrome::MW_BIND => WcStatus::MwBindErr,
        syndrome::BAD_RESP => WcStatus::BadRespErr,
        syndrome::LOCAL_ACCESS => WcStatus::LocAccessErr,
        syndrome::REMOTE_INVAL_REQ => WcStatus::RemInvReqErr,
        syndrome::REMOTE_ACCESS => WcStatus::RemAccessErr,
        syndrome::REMOTE_OP => WcStatus::RemOpErr,
        syndrome::TRANSPORT_RETRY_EXC => WcStatus::RetryExcErr,
        syndrome::RNR_RETRY_EXC => WcStatus::RnrRetryExcErr,
        syndrome::REMOTE_ABORTED => WcStatus::RemAbortErr,
        _ => WcStatus::GeneralErr,
    }
}

fn req_opcode(send_op: u8) -> (WcOpcode, u32) {
    match send_op {
        sop::RDMA_WRITE_IMM => (WcOpcode::RdmaWrite, wc_flags::WITH_IMM),
        sop::RDMA_WRITE => (WcOpcode::RdmaWrite, 0),
        sop::SEND_IMM => (WcOpcode::Send, wc_flags::WITH_IMM),
        sop::SEND | sop::SEND_INVAL => (WcOpcode::Send, 0),
        sop::RDMA_READ => (WcOpcode::RdmaRead, 0),
        sop::ATOMIC_CS => (WcOpcode::CompSwap, 0),
        sop::ATOMIC_FA => (WcOpcode::FetchAdd, 0),
        // libmlx5 reports a UMR with the opcode it kept for the WQE; our only UMR is the crypto
        // mkey configure, which `mlx5dv_wr_mkey_configure` posts as IBV_WR_DRIVER1 and which so
        // completes as IBV_WC_DRIVER1.
        OPCODE_UMR => (WcOpcode::Driver1, 0),
        other => (WcOpcode::Unknown(other as u32), 0),
    }
}

/// What a CQE says besides the completion itself: which queue and WQE it completes and whose
/// it is. Small enough to come back in registers ([`parse_into`] writes the completion in place).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqeInfo {
    pub queue: Queue,
    pub wqe_counter: u16,
    /// QPN from `sop_drop_qpn` (24 bits).
    pub qpn: u32,
    /// `srqn_uidx` (24 bits).
    pub srqn_uidx: u32,
    /// See [`Cqe::inline_scatter_32`].
    pub inline_scatter_32: bool,
}

/// Decode one CQE that software owns (see [`sw_owned`]). Never panics.
///
/// Fields libmlx5 leaves unwritten are set to 0 here, except: error completions carry the
/// opcode of the failed send (from the error CQE) or `Recv`, since a defined value is more
/// useful than a stale one.
pub fn parse(b: &[u8; 64]) -> Result<Cqe, CqeError> {
    let mut wc = WorkCompletion::default();
    let i = parse_into(b, &mut wc)?;
    Ok(Cqe {
        queue: i.queue,
        wqe_counter: i.wqe_counter,
        qpn: i.qpn,
        srqn_uidx: i.srqn_uidx,
        inline_scatter_32: i.inline_scatter_32,
        wc,
    })
}

/// [`parse`] without moving the completion around: every field of `wc` is overwritten (the
/// `wr_id` with 0) when this returns `Ok`; on `Err`, `wc` holds unspecified (but initialised)
/// values. The poll loop decodes straight into the caller's array with this. Never panics.
#[inline(always)]
pub fn parse_into(b: &[u8; 64], wc: &mut WorkCompletion) -> Result<CqeInfo, CqeError> {
    let c: &Cqe64 = zerocopy::transmute_ref!(b);
    let op_own = c.op_own;
    let opcode = op_own >> 4;
    let format = (op_own >> 2) & 3;
    if format == FORMAT_COMPRESSED {
        return Err(CqeError::Compressed);
    }
    let sop_drop_qpn = c.sop_drop_qpn.get();
    let qpn = sop_drop_qpn & 0xff_ffff;
    *wc = WorkCompletion {
        qp_num: qpn,
        ..WorkCompletion::default()
    };
    let mut info = CqeInfo {
        queue: Queue::Send,
        wqe_counter: c.wqe_counter.get(),
        qpn,
        srqn_uidx: c.srqn_uidx.get() & 0xff_ffff,
        inline_scatter_32: false,
    };
    match opcode {
        op::REQ => {
            let (o, flags) = req_opcode((sop_drop_qpn >> 24) as u8);
            wc.opcode = o;
            wc.wc_flags = flags;
            wc.byte_len = match o {
                WcOpcode::RdmaRead => c.byte_cnt.get(),
                WcOpcode::CompSwap | WcOpcode::FetchAdd => 8,
                _ => 0,
            };
            if format == FORMAT_INLINE_32 {
                // READ/atomic responses scattered into the CQE only happen with SCATTER_CQE on
                // an all-signaled QP; we never request it.
                info.inline_scatter_32 = true;
            }
        }
        op::RESP_WR_IMM | op::RESP_SEND | op::RESP_SEND_IMM | op::RESP_SEND_INV => {
            info.queue = Queue::Recv;
            let iip = c.imm_inval_pkey.get();
            wc.byte_len = c.byte_cnt.get();
            match opcode {
                op::RESP_WR_IMM => {
                    wc.opcode = WcOpcode::RecvRdmaWithImm;
                    wc.wc_flags = wc_flags::WITH_IMM;
                    wc.imm_data = iip.to_be(); // memory bytes as on the wire, like ibv_wc.imm_data
                }
                op::RESP_SEND_IMM => {
                    wc.opcode = WcOpcode::Recv;
                    wc.wc_flags = wc_flags::WITH_IMM;
                    wc.imm_data = iip.to_be();
                }
                op::RESP_SEND_INV => {
                    wc.opcode = WcOpcode::Recv;
                    wc.wc_flags = wc_flags::WITH_INV;
                    wc.imm_data = iip; // ibv_wc.invalidated_rkey: host order
                }
                _ => wc.opcode = WcOpcode::Recv,
            }
            let frq = c.flags_rqpn.get();
            wc.slid = c.slid.get();
            wc.sl = ((frq >> 24) & 0xf) as u8;
            wc.src_qp = frq & 0xff_ffff;
            wc.dlid_path_bits = c.ml_path & 0x7f;
            if (frq >> 28) & 3 != 0 {
                wc.wc_flags |= wc_flags::GRH;
            }
            wc.pkey_index = (iip & 0xffff) as u16;
            match format {
                FORMAT_INLINE_32 => info.inline_scatter_32 = true,
                FORMAT_INLINE_64 => return Err(CqeError::InlineScatter64),
                _ => {}
            }
        }
        op::REQ_ERR | op::RESP_ERR => {
            let e: &ErrCqe = zerocopy::transmute_ref!(b);
            wc.status = status_for_syndrome(e.syndrome);
            wc.vendor_err = e.vendor_err_synd as u32;
            if opcode == op::REQ_ERR {
                wc.opcode = req_opcode((sop_drop_qpn >> 24) as u8).0;
            } else {
                info.queue = Queue::Recv;
                wc.opcode = WcOpcode::Recv;
            }
        }
        other => return Err(CqeError::Opcode(other)),
    }
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_parity() {
        assert!(!sw_owned(OP_OWN_INIT, 0, 16));
        assert!(sw_owned(0x00, 0, 16));
        assert!(!sw_owned(0x00, 16, 16));
        assert!(sw_owned(0x01, 16, 16));
        assert!(!sw_owned(0x01, 32, 16));
    }

    #[test]
    fn random_bytes_give_a_value_or_an_error() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            let mut b = [0u8; 64];
            for v in b.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *v = x as u8;
            }
            if let Ok(c) = parse(&b) {
                assert!(c.qpn <= 0xff_ffff && c.srqn_uidx <= 0xff_ffff);
            }
        }
    }

    #[test]
    fn never_panics_on_any_opcode_and_format() {
        let mut b = [0xa5u8; 64];
        for v in 0..=255u8 {
            b[63] = v;
            let _ = parse(&b);
        }
        b[63] = 0x0c;
        assert_eq!(parse(&b), Err(CqeError::Compressed));
        b[63] = 0x50;
        assert_eq!(parse(&b), Err(CqeError::Opcode(5)));
    }

    #[test]
    fn a_umr_completes_as_driver1() {
        // A requester CQE (opcode 0, owner 0) for send opcode UMR on QPN 0x123, WQE counter 9.
        let mut b = [0u8; 64];
        b[off::SOP_DROP_QPN..][..4].copy_from_slice(&0x2500_0123u32.to_be_bytes());
        b[off::WQE_COUNTER..][..2].copy_from_slice(&9u16.to_be_bytes());
        b[off::BYTE_CNT..][..4].copy_from_slice(&0xffffu32.to_be_bytes());
        let c = parse(&b).unwrap();
        assert_eq!((c.queue, c.qpn, c.wqe_counter), (Queue::Send, 0x123, 9));
        assert_eq!((c.wc.status, c.wc.opcode, c.wc.byte_len, c.wc.wc_flags), (WcStatus::Success, WcOpcode::Driver1, 0, 0));
        // The same UMR failing (requester error CQE) keeps the opcode.
        b[off::OP_OWN] = op::REQ_ERR << 4;
        b[off::SYNDROME] = syndrome::LOCAL_PROT;
        let c = parse(&b).unwrap();
        assert_eq!((c.wc.status, c.wc.opcode), (WcStatus::LocProtErr, WcOpcode::Driver1));
    }
}
