//! Completion decoding: the first 48 bytes of an rxe CQ slot are a `struct ib_uverbs_wc`.
//! Pure and total: any bytes decode to a [`WorkCompletion`]; status and opcode values this
//! tool does not know are kept as `Unknown(n)`.
//!
//! rxe quirks worth knowing when reading the result (docs/rxe-kernel.md, "E5 completion
//! contents"): an error or flush completion carries only `wr_id`, `status` and `qp_num`
//! (opcode 0 = SEND, byte_len 0), so identify the operation from the wr_id, never from the
//! opcode; RC receive completions carry the GRH flag although no GRH is written; `src_qp` is
//! only set on UD.

use uverbs::wr::{WcOpcode, WcStatus, WorkCompletion};

use super::layout::*;

#[inline(always)]
fn u16_at(b: &[u8; WC_SIZE], off: usize) -> u16 {
    u16::from_ne_bytes([b[off], b[off + 1]])
}
#[inline(always)]
fn u32_at(b: &[u8; WC_SIZE], off: usize) -> u32 {
    u32::from_ne_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}
#[inline(always)]
fn u64_at(b: &[u8; WC_SIZE], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_ne_bytes(a)
}

/// Decode one `ib_uverbs_wc`.
#[inline]
pub fn decode_wc(b: &[u8; WC_SIZE]) -> WorkCompletion {
    WorkCompletion {
        wr_id: u64_at(b, WC_WR_ID),
        status: WcStatus::from_raw(u32_at(b, WC_STATUS)),
        opcode: WcOpcode::from_raw(u32_at(b, WC_OPCODE)),
        vendor_err: u32_at(b, WC_VENDOR_ERR),
        byte_len: u32_at(b, WC_BYTE_LEN),
        // Network order as in memory, like ibv_wc.imm_data.
        imm_data: u32_at(b, WC_IMM_DATA),
        qp_num: u32_at(b, WC_QP_NUM),
        src_qp: u32_at(b, WC_SRC_QP),
        wc_flags: u32_at(b, WC_WC_FLAGS),
        pkey_index: u16_at(b, WC_PKEY_INDEX),
        slid: u16_at(b, WC_SLID),
        sl: b[WC_SL],
        dlid_path_bits: b[WC_DLID_PATH_BITS],
    }
}

/// Decode from a slice of any length: `None` if it is shorter than an `ib_uverbs_wc`; bytes
/// beyond the first 48 are ignored. (The fuzz entry point.)
pub fn decode_wc_slice(b: &[u8]) -> Option<WorkCompletion> {
    let head: &[u8; WC_SIZE] = b.get(..WC_SIZE)?.try_into().ok()?;
    Some(decode_wc(head))
}

/// The `port_num` byte of a completion (not part of [`WorkCompletion`]).
pub fn wc_port_num(b: &[u8; WC_SIZE]) -> u8 {
    b[WC_PORT_NUM]
}

/// Encode a completion the way the kernel lays it out: the mock kernel of the tests uses this,
/// and it makes the decoder's round trip testable.
pub fn encode_wc(wc: &WorkCompletion, port_num: u8) -> [u8; WC_SIZE] {
    let mut b = [0u8; WC_SIZE];
    b[WC_WR_ID..WC_WR_ID + 8].copy_from_slice(&wc.wr_id.to_ne_bytes());
    for (off, v) in [
        (WC_STATUS, wc.status.raw()),
        (WC_OPCODE, wc.opcode.raw()),
        (WC_VENDOR_ERR, wc.vendor_err),
        (WC_BYTE_LEN, wc.byte_len),
        (WC_IMM_DATA, wc.imm_data),
        (WC_QP_NUM, wc.qp_num),
        (WC_SRC_QP, wc.src_qp),
        (WC_WC_FLAGS, wc.wc_flags),
    ] {
        b[off..off + 4].copy_from_slice(&v.to_ne_bytes());
    }
    b[WC_PKEY_INDEX..WC_PKEY_INDEX + 2].copy_from_slice(&wc.pkey_index.to_ne_bytes());
    b[WC_SLID..WC_SLID + 2].copy_from_slice(&wc.slid.to_ne_bytes());
    b[WC_SL] = wc.sl;
    b[WC_DLID_PATH_BITS] = wc.dlid_path_bits;
    b[WC_PORT_NUM] = port_num;
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use uverbs::wr::wc_flags;

    /// Golden bytes of an RC receive-with-immediate completion as rxe writes it
    /// (docs/rxe-kernel.md, "E5 completion contents": GRH|WITH_IMM, src_qp 0, port 1), offsets
    /// as literal numbers from ib_user_verbs.h.
    #[test]
    fn rc_recv_with_imm_golden() {
        let mut b = [0u8; 48];
        b[0..8].copy_from_slice(&0x0102_0304_0506_0708u64.to_ne_bytes()); // wr_id
        b[8..12].copy_from_slice(&0u32.to_ne_bytes()); // status
        b[12..16].copy_from_slice(&0x80u32.to_ne_bytes()); // opcode IB_UVERBS_WC_RECV
        b[20..24].copy_from_slice(&4096u32.to_ne_bytes()); // byte_len
        b[24..28].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]); // ex.imm_data
        b[28..32].copy_from_slice(&17u32.to_ne_bytes()); // qp_num
        b[36..40].copy_from_slice(&3u32.to_ne_bytes()); // wc_flags
        b[46] = 1; // port_num
        let wc = decode_wc(&b);
        assert_eq!(wc.wr_id, 0x0102_0304_0506_0708);
        assert_eq!(wc.status, WcStatus::Success);
        assert_eq!(wc.opcode, WcOpcode::Recv);
        assert_eq!(wc.byte_len, 4096);
        assert_eq!(wc.imm_data.to_ne_bytes(), [0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(wc.qp_num, 17);
        assert_eq!(wc.src_qp, 0);
        assert_eq!(wc.wc_flags, wc_flags::GRH | wc_flags::WITH_IMM);
        assert_eq!(wc_port_num(&b), 1);
        assert_eq!(encode_wc(&wc, 1), b);
    }

    #[test]
    fn every_field_at_its_offset() {
        let mut b = [0u8; 48];
        for (i, x) in b.iter_mut().enumerate() {
            *x = i as u8;
        }
        let wc = decode_wc(&b);
        let le = |s: &[u8]| s.iter().rev().fold(0u64, |a, &x| a << 8 | x as u64);
        let ne = |s: &[u8]| {
            if cfg!(target_endian = "little") {
                le(s)
            } else {
                s.iter().fold(0u64, |a, &x| a << 8 | x as u64)
            }
        };
        assert_eq!(wc.wr_id, ne(&b[0..8]));
        assert_eq!(wc.status.raw() as u64, ne(&b[8..12]));
        assert_eq!(wc.opcode.raw() as u64, ne(&b[12..16]));
        assert_eq!(wc.vendor_err as u64, ne(&b[16..20]));
        assert_eq!(wc.byte_len as u64, ne(&b[20..24]));
        assert_eq!(wc.imm_data as u64, ne(&b[24..28]));
        assert_eq!(wc.qp_num as u64, ne(&b[28..32]));
        assert_eq!(wc.src_qp as u64, ne(&b[32..36]));
        assert_eq!(wc.wc_flags as u64, ne(&b[36..40]));
        assert_eq!(wc.pkey_index as u64, ne(&b[40..42]));
        assert_eq!(wc.slid as u64, ne(&b[42..44]));
        assert_eq!(wc.sl, 44);
        assert_eq!(wc.dlid_path_bits, 45);
        assert_eq!(wc_port_num(&b), 46);
    }

    #[test]
    fn error_cqe_and_unknown_values() {
        // An rxe flush completion: opcode 0, byte_len 0, status WR_FLUSH_ERR.
        let wc = WorkCompletion {
            wr_id: 9,
            status: WcStatus::WrFlushErr,
            qp_num: 18,
            ..Default::default()
        };
        let d = decode_wc(&encode_wc(&wc, 0));
        assert_eq!(d, wc);
        assert_eq!(d.opcode, WcOpcode::Send);
        // Unknown status and opcode survive as numbers.
        let mut b = [0u8; 48];
        b[8..12].copy_from_slice(&0xffff_ffffu32.to_ne_bytes());
        b[12..16].copy_from_slice(&0x1234u32.to_ne_bytes());
        let d = decode_wc(&b);
        assert_eq!(d.status, WcStatus::Unknown(0xffff_ffff));
        assert_eq!(d.opcode, WcOpcode::Unknown(0x1234));
    }

    #[test]
    fn slices_of_any_length() {
        for n in 0..200usize {
            let v: Vec<u8> = (0..n).map(|i| (i * 37 + n) as u8).collect();
            let r = decode_wc_slice(&v);
            assert_eq!(r.is_some(), n >= 48);
        }
        // Pseudo-random bytes never panic.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..2000 {
            let mut b = [0u8; 48];
            for byte in b.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *byte = x as u8;
            }
            let wc = decode_wc(&b);
            assert_eq!(encode_wc(&wc, b[46])[..47], b[..47]);
        }
    }
}
