//! Pure decoding of bnxt_re completion entries. A CQE is 32 bytes: 24 type-specific bytes, then
//! the base part (`bnxt_re_bcqe`): phase bit, type, status and flags in the first word, the SRQ
//! tag (bits 0..20) and the high byte of a UD source QP (bits 24..32) in the second. Everything
//! here comes from device-written memory: any bytes decode to some [`Cqe`], never a panic.

use super::hw::*;

/// One decoded completion entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cqe {
    /// The phase bit: the entry is new when it equals the CQ's current phase.
    pub phase: u8,
    pub kind: CqeKind,
    /// Raw status (requester or responder codes, by kind).
    pub status: u8,
    /// Receive flags (`RC_FLAGS_*`).
    pub flags: u16,
    /// The QP handle we gave the kernel (0: the entry was retired by a destroy).
    pub qp_handle: u64,
    /// Send: the consumer index after the completed WQE (only its low bits are meaningful).
    pub con_indx: u32,
    /// Receive: bytes received.
    pub length: u32,
    /// Receive: immediate data as the device wrote it (little-endian word).
    pub imm: u32,
    /// Receive into an SRQ: the SRQ entry's tag.
    pub rwrid: u32,
    /// UD receive: the sender's QP number.
    pub src_qp: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CqeKind {
    Send,
    RecvRc,
    RecvUd,
    Raw,
    Term,
    CutOff,
    Other(u8),
}

fn u32_at(b: &[u8; CQE_SIZE], off: usize) -> u32 {
    u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

fn u64_at(b: &[u8; CQE_SIZE], off: usize) -> u64 {
    u32_at(b, off) as u64 | (u32_at(b, off + 4) as u64) << 32
}

/// The phase bit of an entry (what the poller looks at before anything else).
pub fn phase_of(hdr_word: u32) -> u8 {
    (hdr_word & 1) as u8
}

/// Offset of the QP handle inside an entry of `kind` (send and terminal entries carry it
/// first, receive entries after length and immediate).
pub fn qp_handle_off(kind: CqeKind) -> Option<usize> {
    match kind {
        CqeKind::Send | CqeKind::Term => Some(0),
        CqeKind::RecvRc | CqeKind::RecvUd => Some(8),
        _ => None,
    }
}

pub fn decode(b: &[u8; CQE_SIZE]) -> Cqe {
    let w0 = u32_at(b, BCQE_OFF);
    let w1 = u32_at(b, BCQE_OFF + 4);
    let kind = match ((w0 >> 1) & 0xf) as u8 {
        wctype::SEND => CqeKind::Send,
        wctype::RECV_RC => CqeKind::RecvRc,
        wctype::RECV_UD => CqeKind::RecvUd,
        wctype::RECV_RAW => CqeKind::Raw,
        wctype::TERM => CqeKind::Term,
        wctype::COFF => CqeKind::CutOff,
        t => CqeKind::Other(t),
    };
    let mut c = Cqe {
        phase: phase_of(w0),
        kind,
        status: (w0 >> 8) as u8,
        flags: (w0 >> 16) as u16,
        qp_handle: qp_handle_off(kind).map(|o| u64_at(b, o)).unwrap_or(0),
        con_indx: 0,
        length: 0,
        imm: 0,
        rwrid: w1 & 0xf_ffff,
        src_qp: 0,
    };
    match kind {
        CqeKind::Send => c.con_indx = u32_at(b, 8),
        CqeKind::RecvRc | CqeKind::RecvUd => {
            c.length = u32_at(b, 0);
            c.imm = u32_at(b, 4);
            // The UD source QP: high 8 bits in the base part, low 16 at the top of `qplo_mac`.
            c.src_qp = (w1 >> 24) << 16 | (u64_at(b, 16) >> 48) as u32;
        }
        _ => {}
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cqe(w: &[(usize, u32)]) -> [u8; CQE_SIZE] {
        let mut b = [0u8; CQE_SIZE];
        for &(o, v) in w {
            b[o..o + 4].copy_from_slice(&v.to_le_bytes());
        }
        b
    }

    #[test]
    fn send_entry() {
        let c = decode(&cqe(&[(0, 0x1234), (4, 0x5), (8, 0x42), (24, 0x0b01)]));
        assert_eq!(
            (c.kind, c.phase, c.status, c.qp_handle, c.con_indx),
            (CqeKind::Send, 1, 0x0b, 0x5_0000_1234, 0x42)
        );
    }

    #[test]
    fn ud_receive_entry() {
        let c = decode(&cqe(&[
            (0, 100),
            (4, 0x0403_0201),
            (8, 7),
            (20, 0xbeef_0000),
            (24, 0x0002_0004),
            (28, 0x1200_0003),
        ]));
        assert_eq!(c.kind, CqeKind::RecvUd);
        assert_eq!(
            (c.length, c.imm, c.qp_handle, c.flags, c.rwrid),
            (100, 0x0403_0201, 7, 2, 3)
        );
        assert_eq!(
            c.src_qp, 0x12_beef,
            "libbnxt_re 44 masks the high byte with 0x18: we take all 8 bits"
        );
    }

    #[test]
    fn unknown_types_decode() {
        let c = decode(&[0xff; CQE_SIZE]);
        assert_eq!(c.kind, CqeKind::CutOff);
        assert_eq!(decode(&cqe(&[(24, 0x0a)])).kind, CqeKind::Other(5));
    }
}
