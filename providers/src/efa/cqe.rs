//! Completion descriptor decoding (`efa_io_cdesc_common` / `efa_io_rx_cdesc`). The bytes come
//! from memory the device writes: every field is untrusted, a descriptor this code cannot make
//! sense of is an error, never a panic or an out-of-range index.

use uverbs::wr::{wc_flags, WcOpcode, WcStatus, WorkCompletion};

use super::hw::{self, cdesc, cflags, status};

/// One completion as the device wrote it (the receive fields are zero in a send completion).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cdesc {
    pub req_id: u16,
    pub status: u8,
    pub phase: u8,
    /// [`hw::QUEUE_SEND`] or [`hw::QUEUE_RECV`].
    pub queue: u8,
    pub has_imm: bool,
    pub qp_num: u16,
    pub length: u16,
    pub ah: u16,
    pub src_qp_num: u16,
    pub imm: u32,
    /// `enum efa_io_send_op_type` of the completed request (rdma-core 46; 0 on older devices).
    pub op_type: u8,
    /// Bits 31:16 of a received RDMA write's length (extended entries only; else 0).
    pub length_hi: u16,
}

/// A descriptor that cannot be a completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CdescError {
    /// Fewer bytes than a descriptor (a CQ entry size smaller than libefa's).
    Short { len: usize },
    /// A queue type that is neither send nor receive.
    QueueType(u8),
}

impl std::fmt::Display for CdescError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CdescError::Short { len } => write!(
                f,
                "EFA completion entry of {len} bytes, need {}",
                hw::CDESC_SIZE
            ),
            CdescError::QueueType(q) => write!(
                f,
                "EFA completion with queue type {q} (neither send 1 nor receive 2)"
            ),
        }
    }
}

fn get16(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([b[off], b[off + 1]])
}

/// The phase bit of the entry at the start of `b` (what decides whether it is new: the entry
/// belongs to software when its phase equals the sub-CQ's current phase). `None` when `b` is
/// shorter than the flags byte.
pub fn phase_of(b: &[u8]) -> Option<u8> {
    b.get(cdesc::FLAGS).map(|f| f & cflags::PHASE)
}

/// Decode the descriptor at the start of `b` (read only after its phase was seen to match);
/// `b` holds the whole CQ entry (16 bytes, or 32 for the extended descriptor).
pub fn parse(b: &[u8]) -> Result<Cdesc, CdescError> {
    if b.len() < hw::CDESC_SIZE {
        return Err(CdescError::Short { len: b.len() });
    }
    let flags = b[cdesc::FLAGS];
    let queue = (flags & cflags::Q_TYPE_MASK) >> cflags::Q_TYPE_SHIFT;
    if queue != hw::QUEUE_SEND && queue != hw::QUEUE_RECV {
        return Err(CdescError::QueueType(queue));
    }
    let recv = queue == hw::QUEUE_RECV;
    let op_type = (flags & cflags::OP_TYPE_MASK) >> cflags::OP_TYPE_SHIFT;
    let length_hi = match b.get(cdesc::LENGTH_HI..cdesc::LENGTH_HI + 2) {
        Some(hi) if recv && op_type == hw::OP_RDMA_WRITE => u16::from_le_bytes([hi[0], hi[1]]),
        _ => 0,
    };
    Ok(Cdesc {
        req_id: get16(b, cdesc::REQ_ID),
        status: b[cdesc::STATUS],
        phase: flags & cflags::PHASE,
        queue,
        has_imm: recv && flags & cflags::HAS_IMM != 0,
        qp_num: get16(b, cdesc::QP_NUM),
        length: get16(b, cdesc::LENGTH),
        ah: if recv { get16(b, cdesc::AH) } else { 0 },
        src_qp_num: if recv { get16(b, cdesc::SRC_QP_NUM) } else { 0 },
        imm: if recv {
            u32::from_le_bytes(b[cdesc::IMM..cdesc::IMM + 4].try_into().unwrap_or_default())
        } else {
            0
        },
        op_type,
        length_hi,
    })
}

/// libefa 44's `to_ibv_status`: the device's status as a verbs completion status.
pub fn wc_status(s: u8) -> WcStatus {
    match s {
        status::OK => WcStatus::Success,
        status::FLUSHED => WcStatus::WrFlushErr,
        status::LOCAL_ERROR_QP_INTERNAL_ERROR
        | status::LOCAL_ERROR_INVALID_OP_TYPE
        | status::LOCAL_ERROR_INVALID_AH => WcStatus::LocQpOpErr,
        status::LOCAL_ERROR_INVALID_LKEY => WcStatus::LocProtErr,
        status::LOCAL_ERROR_BAD_LENGTH => WcStatus::LocLenErr,
        status::REMOTE_ERROR_ABORT => WcStatus::RemAbortErr,
        status::REMOTE_ERROR_RNR => WcStatus::RnrRetryExcErr,
        status::REMOTE_ERROR_BAD_DEST_QPN => WcStatus::RemInvRdReqErr,
        status::REMOTE_ERROR_BAD_STATUS => WcStatus::BadRespErr,
        status::REMOTE_ERROR_BAD_LENGTH => WcStatus::RemInvReqErr,
        status::LOCAL_ERROR_UNRESP_REMOTE => WcStatus::RespTimeoutErr,
        _ => WcStatus::GeneralErr,
    }
}

/// The work completion libefa's `efa_process_cqe` fills for `c`, with the `wr_id` the request
/// id pool gave back. A send-queue completion reports `IBV_WC_SEND` (libefa 44 does so for an
/// RDMA read too) or, for an RDMA write, `IBV_WC_RDMA_WRITE` (rdma-core 46); a receive reports
/// its length, source QP, the AH as `slid`, and the immediate in network order; a received
/// RDMA write with immediate is `IBV_WC_RECV_RDMA_WITH_IMM` with the length's high bits from
/// the extended entry (rdma-core 46).
pub fn to_wc(c: &Cdesc, wr_id: u64) -> WorkCompletion {
    let mut wc = WorkCompletion {
        wr_id,
        status: wc_status(c.status),
        vendor_err: u32::from(c.status),
        qp_num: u32::from(c.qp_num),
        ..Default::default()
    };
    let write = c.op_type == hw::OP_RDMA_WRITE;
    if c.queue == hw::QUEUE_SEND {
        wc.opcode = if write {
            WcOpcode::RdmaWrite
        } else {
            WcOpcode::Send
        };
    } else {
        wc.opcode = if write {
            WcOpcode::RecvRdmaWithImm
        } else {
            WcOpcode::Recv
        };
        wc.byte_len = u32::from(c.length) | u32::from(c.length_hi) << 16;
        wc.src_qp = u32::from(c.src_qp_num);
        wc.slid = c.ah;
        if c.has_imm {
            wc.imm_data = c.imm.to_be();
            wc.wc_flags |= wc_flags::WITH_IMM;
        }
    }
    wc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::too_many_arguments)]
    fn entry(
        req: u16,
        st: u8,
        flags: u8,
        qpn: u16,
        len: u16,
        ah: u16,
        src: u16,
        imm: u32,
    ) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[0..2].copy_from_slice(&req.to_le_bytes());
        b[2] = st;
        b[3] = flags;
        b[4..6].copy_from_slice(&qpn.to_le_bytes());
        b[6..8].copy_from_slice(&len.to_le_bytes());
        b[8..10].copy_from_slice(&ah.to_le_bytes());
        b[10..12].copy_from_slice(&src.to_le_bytes());
        b[12..16].copy_from_slice(&imm.to_le_bytes());
        b
    }

    #[test]
    fn send_completion() {
        // Receive fields in a send entry are ignored (the device leaves them undefined).
        let b = entry(7, 0, 0b0011, 0x22, 0, 0xffff, 0x33, 0x44);
        let c = parse(&b).unwrap();
        assert_eq!(
            c,
            Cdesc {
                req_id: 7,
                phase: 1,
                queue: 1,
                qp_num: 0x22,
                ..Default::default()
            }
        );
        let wc = to_wc(&c, 99);
        assert_eq!(
            (wc.wr_id, wc.status, wc.opcode, wc.qp_num, wc.byte_len),
            (99, WcStatus::Success, WcOpcode::Send, 0x22, 0)
        );
    }

    #[test]
    fn recv_completion_with_imm() {
        let b = entry(3, 0, 0b1100, 5, 4096, 0x0a, 0x0b, 0x1234_5678);
        let c = parse(&b).unwrap();
        assert_eq!(
            (c.phase, c.queue, c.has_imm, c.length, c.imm),
            (0, 2, true, 4096, 0x1234_5678)
        );
        let wc = to_wc(&c, 1);
        assert_eq!(wc.opcode, WcOpcode::Recv);
        assert_eq!((wc.byte_len, wc.src_qp, wc.slid), (4096, 0x0b, 0x0a));
        assert_eq!(wc.imm_data.to_ne_bytes(), [0x12, 0x34, 0x56, 0x78]);
        assert_eq!(wc.wc_flags, wc_flags::WITH_IMM);
    }

    #[test]
    fn rdma_write_completions_as_rdma_core_46_reads_them() {
        // Send side: op type 2 in flags bits 6:4 is IBV_WC_RDMA_WRITE.
        let c = parse(&entry(4, 0, 0b010_0011, 0x22, 0, 0, 0, 0)).unwrap();
        assert_eq!((c.op_type, to_wc(&c, 1).opcode), (2, WcOpcode::RdmaWrite));
        // Receive side (a write with immediate), 32-byte entry: the length's high 16 bits.
        let mut ex = [0u8; 32];
        ex[..16].copy_from_slice(&entry(5, 0, 0b010_1100, 5, 0x0010, 0x0a, 0x0b, 0xabcd));
        ex[16..18].copy_from_slice(&0x0002u16.to_le_bytes());
        let c = parse(&ex).unwrap();
        let wc = to_wc(&c, 1);
        assert_eq!(wc.opcode, WcOpcode::RecvRdmaWithImm);
        assert_eq!((wc.byte_len, wc.wc_flags), (0x2_0010, wc_flags::WITH_IMM));
        // A 16-byte entry has no high bits; a SEND's receive ignores the extension.
        assert_eq!(to_wc(&parse(&ex[..16]).unwrap(), 1).byte_len, 0x10);
        ex[3] = 0b000_1100;
        assert_eq!(to_wc(&parse(&ex).unwrap(), 1).byte_len, 0x10);
        // Op types 3..=7 are not ours to name: a plain send or receive, as rdma-core 46.
        let c = parse(&entry(4, 0, 0b111_0011, 0x22, 0, 0, 0, 0)).unwrap();
        assert_eq!(to_wc(&c, 1).opcode, WcOpcode::Send);
    }

    #[test]
    fn bad_entries() {
        assert_eq!(parse(&[0; 15]), Err(CdescError::Short { len: 15 }));
        assert_eq!(
            parse(&entry(0, 0, 0b0000, 0, 0, 0, 0, 0)),
            Err(CdescError::QueueType(0))
        );
        assert_eq!(
            parse(&entry(0, 0, 0b0111, 0, 0, 0, 0, 0)),
            Err(CdescError::QueueType(3))
        );
        assert_eq!(phase_of(&[0, 0, 0]), None);
        assert_eq!(phase_of(&[0, 0, 0, 0xff]), Some(1));
    }

    #[test]
    fn statuses() {
        let want = [
            (0, WcStatus::Success),
            (1, WcStatus::WrFlushErr),
            (2, WcStatus::LocQpOpErr),
            (3, WcStatus::LocQpOpErr),
            (4, WcStatus::LocQpOpErr),
            (5, WcStatus::LocProtErr),
            (6, WcStatus::LocLenErr),
            (7, WcStatus::GeneralErr),
            (8, WcStatus::RemAbortErr),
            (9, WcStatus::RemInvRdReqErr),
            (10, WcStatus::RnrRetryExcErr),
            (11, WcStatus::RemInvReqErr),
            (12, WcStatus::BadRespErr),
            (13, WcStatus::RespTimeoutErr),
            (14, WcStatus::GeneralErr),
            (255, WcStatus::GeneralErr),
        ];
        for (s, w) in want {
            assert_eq!(wc_status(s), w, "status {s}");
            let mut e = entry(0, s, 0b0011, 0, 0, 0, 0, 0);
            e[2] = s;
            assert_eq!(to_wc(&parse(&e).unwrap(), 0).vendor_err, u32::from(s));
        }
    }
}
