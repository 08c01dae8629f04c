//! Pure encoding of bnxt_re work-queue entries into a scratch copy of the ring slots they
//! occupy. The caller reads those slots out of the ring, lets these functions change exactly
//! the fields libbnxt_re writes, and copies them back: bytes libbnxt_re leaves alone (a
//! reserved word, the rest of a static-mode 128-byte WQE) keep whatever the ring held, so the
//! ring's bytes match libbnxt_re's after any sequence of posts. No I/O, no unsafe.
//!
//! Send WQE: slot 0 is the base header (`rsv_ws_fl_wt`, `key_immd`, the 8-byte `lhdr`: length,
//! length | Q_Key << 32, or the atomic's remote address), slot 1 the opcode's extension (send:
//! zero; UD: destination QP and AH id; RDMA: remote address and key; atomic: swap and compare
//! values), then one 16-byte SGE per slot, or the inline payload.

use uverbs::provider::QpType;
use uverbs::wr::{SendFlags, SendWr, WrOpcode};

use super::geometry::send_wqe_slots;
use super::hw::*;

/// Why a send request cannot be encoded (the post fails with EINVAL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WqeError {
    /// UD QPs send and send-with-immediate only.
    UdOpcode(WrOpcode),
    /// A UD send without a destination.
    NoUdDest,
    /// More inline bytes than the QP was created for.
    InlineTooLong { len: u64, max: u32 },
}

impl std::fmt::Display for WqeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WqeError::UdOpcode(op) => write!(f, "a UD QP cannot post {}", op.name()),
            WqeError::NoUdDest => write!(f, "a UD send needs a destination (address handle)"),
            WqeError::InlineTooLong { len, max } => {
                write!(
                    f,
                    "{len} inline bytes, the QP was created for at most {max}"
                )
            }
        }
    }
}

fn put32(w: &mut [u8], off: usize, v: u32) {
    w[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

fn put64(w: &mut [u8], off: usize, v: u64) {
    w[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// What a send post needs besides the request.
#[derive(Clone, Copy, Debug)]
pub struct SendShape {
    pub qp_type: QpType,
    pub sq_sig_all: bool,
    pub max_inline: u32,
}

/// Check a request and say how many slots its WQE fills (the header's size field).
pub fn send_slots(wr: &SendWr<'_>, s: &SendShape) -> Result<u32, WqeError> {
    if s.qp_type == QpType::Ud {
        if !matches!(wr.opcode, WrOpcode::Send | WrOpcode::SendWithImm) {
            return Err(WqeError::UdOpcode(wr.opcode));
        }
        if wr.ud.is_none() {
            return Err(WqeError::NoUdDest);
        }
    }
    if is_inline(wr) {
        let len = wr.total_len();
        if len > s.max_inline as u64 {
            return Err(WqeError::InlineTooLong {
                len,
                max: s.max_inline,
            });
        }
        return Ok(send_wqe_slots(0, Some(len as u32)));
    }
    Ok(send_wqe_slots(wr.sgl.len(), None))
}

/// Inline data only where the opcode carries a payload from the requester (libbnxt_re builds
/// READ and atomics with SGEs whatever the flags say).
pub fn is_inline(wr: &SendWr<'_>) -> bool {
    wr.flags.contains(SendFlags::INLINE)
        && matches!(
            wr.opcode,
            WrOpcode::Send
                | WrOpcode::SendWithImm
                | WrOpcode::RdmaWrite
                | WrOpcode::RdmaWriteWithImm
        )
}

/// Encode `wr` into `w`, the scratch copy of its `ws` slots (`ws * 16` bytes). `payload` is
/// the inline data (the SGEs' bytes, concatenated) when [`is_inline`]; `avid` the AH id of a UD
/// send. Returns the request's byte count (what the PSN entry and READ/atomic completions use).
pub fn encode_send(
    w: &mut [u8],
    wr: &SendWr<'_>,
    s: &SendShape,
    ws: u32,
    payload: Option<&[u8]>,
    avid: u32,
) -> u32 {
    let mut flags = 0;
    if wr.flags.contains(SendFlags::SIGNALED) || s.sq_sig_all {
        flags |= wrflag::SIGNALED;
    }
    if wr.flags.contains(SendFlags::FENCE) {
        flags |= wrflag::UC_FENCE;
    }
    if wr.flags.contains(SendFlags::SOLICITED) {
        flags |= wrflag::SE;
    }
    if wr.flags.contains(SendFlags::INLINE) {
        flags |= wrflag::INLINE;
    }
    put32(
        w,
        0,
        flags << HDR_FLAGS_SHIFT | (ws & 0xff) << HDR_WS_SHIFT | wr_opcode(wr.opcode) as u32,
    );
    if wr.opcode.has_imm() {
        // Immediate data arrives in network order; the engine takes it little-endian.
        put32(w, 4, u32::from_be(wr.imm_data));
    }
    let len = match payload {
        Some(p) => {
            w[2 * SLOT..2 * SLOT + p.len()].copy_from_slice(p);
            p.len() as u32
        }
        None => {
            for (i, sge) in wr.sgl.iter().enumerate() {
                let o = (2 + i) * SLOT;
                put64(w, o, sge.addr);
                put32(w, o + 8, sge.lkey);
                put32(w, o + 12, sge.length);
            }
            wr.sgl.iter().fold(0u32, |a, s| a.wrapping_add(s.length))
        }
    };
    put64(w, 8, len as u64);
    let x = SLOT;
    match wr.opcode {
        WrOpcode::Send | WrOpcode::SendWithImm => match (s.qp_type, wr.ud) {
            (QpType::Ud, Some(ud)) => {
                put64(w, 8, len as u64 | (ud.remote_qkey as u64) << 32);
                put32(w, x, ud.remote_qpn);
                put32(w, x + 4, avid & 0xf_ffff);
            }
            _ => w[x..x + SLOT].fill(0),
        },
        WrOpcode::RdmaWrite | WrOpcode::RdmaWriteWithImm | WrOpcode::RdmaRead => {
            put64(w, x, wr.remote.addr);
            put32(w, x + 8, wr.remote.rkey);
        }
        WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd => {
            put32(w, 4, wr.remote.rkey);
            put64(w, 8, wr.remote.addr);
            if wr.opcode == WrOpcode::AtomicCmpAndSwp {
                put64(w, x, wr.swap);
            }
            put64(w, x + 8, wr.compare_add);
        }
    }
    len
}

/// The PSN search entry of a send WQE (`bnxt_re_psns`, and `st_slot_idx` of the 16-byte
/// `bnxt_re_psns_ext`): RC requests carry their first PSN and the next one, and every request
/// its completion opcode. `sq_psn` advances by the request's packets for RC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Psns {
    pub opc_spsn: u32,
    pub flg_npsn: u32,
}

/// Packets of an RC request of `len` bytes at `mtu` bytes (at least one; an unknown MTU, 0,
/// counts one packet: libbnxt_re would divide by zero there).
pub fn rc_packets(len: u32, mtu: u32) -> u32 {
    if mtu == 0 || len == 0 {
        1
    } else {
        len.div_ceil(mtu)
    }
}

pub fn psns(op: WrOpcode, rc: bool, sq_psn: &mut u32, len: u32, mtu: u32) -> Psns {
    let mut opc_spsn = 0;
    let mut flg_npsn = 0;
    if rc {
        opc_spsn = *sq_psn & 0xff_ffff;
        let next = sq_psn.wrapping_add(rc_packets(len, mtu)) & 0xff_ffff;
        flg_npsn = next;
        *sq_psn = next;
    }
    opc_spsn |= (wc_opcode_byte(op) as u32) << 24;
    Psns { opc_spsn, flg_npsn }
}

/// Write a PSN entry into the scratch copy `w` of its 8 or 16 bytes.
pub fn encode_psns(w: &mut [u8], p: Psns, ext_slot: Option<u16>) {
    put32(w, 0, p.opc_spsn);
    put32(w, 4, p.flg_npsn);
    if let Some(s) = ext_slot {
        w[8..10].copy_from_slice(&s.to_le_bytes());
    }
}

/// Slots a receive WQE's header declares: its SGEs after the 32-byte header, at least one.
pub fn recv_ws(nsge: usize) -> u32 {
    (nsge as u32 + (RQE_HDR / SLOT) as u32).max(3)
}

/// Encode a receive WQE into the scratch copy `w` of its `2 + sgl.len()` slots; `tag` is the
/// software entry the completion finds the WR id by.
pub fn encode_recv(w: &mut [u8], sgl: &[uverbs::wr::Sge], tag: u32) -> u32 {
    put32(
        w,
        0,
        opcd::RECV as u32 | (recv_ws(sgl.len()) & 0xff) << HDR_WS_SHIFT,
    );
    put32(w, 8, tag);
    w[SLOT..2 * SLOT].fill(0);
    sges(w, 2 * SLOT, sgl)
}

fn sges(w: &mut [u8], at: usize, sgl: &[uverbs::wr::Sge]) -> u32 {
    let mut len = 0u32;
    for (i, sge) in sgl.iter().enumerate() {
        let o = at + i * SLOT;
        put64(w, o, sge.addr);
        put32(w, o + 8, sge.lkey);
        put32(w, o + 12, sge.length);
        len = len.wrapping_add(sge.length);
    }
    len
}

/// Encode an SRQ entry (a whole 128-byte entry, zeroed first). Unlike the RQ, the header counts
/// no extra slot for an empty SGE list.
pub fn encode_srq_recv(w: &mut [u8; SRQE_SIZE], sgl: &[uverbs::wr::Sge], tag: u32) -> u32 {
    w.fill(0);
    let ws = sgl.len() as u32 + (RQE_HDR / SLOT) as u32;
    put32(w, 0, opcd::RECV as u32 | (ws & 0xff) << HDR_WS_SHIFT);
    put32(w, 8, tag);
    sges(w, RQE_HDR, sgl)
}

#[cfg(test)]
mod tests {
    use super::*;
    use uverbs::wr::{RemoteAddr, Sge, UdDest};

    const RC: SendShape = SendShape {
        qp_type: QpType::Rc,
        sq_sig_all: false,
        max_inline: 96,
    };

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn rdma_write_with_one_sge() {
        let sge = [Sge {
            addr: 0x1122334455667788,
            length: 0x40,
            lkey: 0xabcd,
        }];
        let mut wr = SendWr::new(1, WrOpcode::RdmaWrite, &sge);
        wr.flags = SendFlags::SIGNALED;
        wr.remote = RemoteAddr {
            addr: 0x99aa,
            rkey: 0x77,
        };
        let ws = send_slots(&wr, &RC).unwrap();
        let mut w = vec![0xeeu8; ws as usize * SLOT];
        assert_eq!(encode_send(&mut w, &wr, &RC, ws, None, 0), 0x40);
        assert_eq!(
            hex(&w),
            "04010300eeeeeeee4000000000000000aa99000000000000\
             77000000eeeeeeee8877665544332211cdab000040000000"
        );
    }

    #[test]
    fn ud_send_inline_with_imm() {
        let s = SendShape {
            qp_type: QpType::Ud,
            sq_sig_all: true,
            max_inline: 96,
        };
        let sge = [Sge {
            addr: 0,
            length: 3,
            lkey: 0,
        }];
        let mut wr = SendWr::new(1, WrOpcode::SendWithImm, &sge);
        wr.flags = SendFlags::INLINE;
        wr.imm_data = 0x01020304u32.to_be();
        wr.ud = Some(UdDest {
            ah: 0,
            remote_qpn: 0x12,
            remote_qkey: 0x11111111,
        });
        let ws = send_slots(&wr, &s).unwrap();
        assert_eq!(ws, 3);
        let mut w = vec![0u8; 48];
        encode_send(&mut w, &wr, &s, ws, Some(&[1, 2, 3]), 0x123456);
        assert_eq!(&w[0..4], &[0x01, 0x11, 0x03, 0x00]);
        assert_eq!(&w[4..8], &[4, 3, 2, 1]);
        assert_eq!(&w[8..16], &[3, 0, 0, 0, 0x11, 0x11, 0x11, 0x11]);
        assert_eq!(&w[16..24], &[0x12, 0, 0, 0, 0x56, 0x34, 0x02, 0]);
        assert_eq!(&w[32..35], &[1, 2, 3]);
    }

    #[test]
    fn refusals() {
        let s = SendShape {
            qp_type: QpType::Ud,
            sq_sig_all: false,
            max_inline: 8,
        };
        let wr = SendWr::new(1, WrOpcode::RdmaWrite, &[]);
        assert_eq!(
            send_slots(&wr, &s),
            Err(WqeError::UdOpcode(WrOpcode::RdmaWrite))
        );
        let wr = SendWr::new(1, WrOpcode::Send, &[]);
        assert_eq!(send_slots(&wr, &s), Err(WqeError::NoUdDest));
        let sge = [Sge {
            addr: 0,
            length: 9,
            lkey: 0,
        }];
        let mut wr = SendWr::new(1, WrOpcode::Send, &sge);
        wr.flags = SendFlags::INLINE;
        assert_eq!(send_slots(&wr, &RC.clone()), Ok(3));
        let small = SendShape {
            max_inline: 8,
            ..RC
        };
        assert!(matches!(
            send_slots(&wr, &small),
            Err(WqeError::InlineTooLong { len: 9, max: 8 })
        ));
    }

    #[test]
    fn atomics_put_the_address_in_the_header() {
        let sge = [Sge {
            addr: 0x10,
            length: 8,
            lkey: 1,
        }];
        let mut wr = SendWr::new(1, WrOpcode::AtomicFetchAndAdd, &sge);
        wr.remote = RemoteAddr {
            addr: 0xabcdef,
            rkey: 0x42,
        };
        wr.compare_add = 5;
        wr.swap = 9;
        let mut w = vec![0xeeu8; 48];
        encode_send(&mut w, &wr, &RC, 3, None, 0);
        assert_eq!(&w[4..16], &[0x42, 0, 0, 0, 0xef, 0xcd, 0xab, 0, 0, 0, 0, 0]);
        assert_eq!(&w[16..24], &[0xee; 8], "FAA leaves the swap word alone");
        assert_eq!(&w[24..32], &[5, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn psn_entries() {
        let mut psn = 0xff_fffe;
        let p = psns(WrOpcode::RdmaWrite, true, &mut psn, 4097, 4096);
        assert_eq!(
            p,
            Psns {
                opc_spsn: 0x01ff_fffe,
                flg_npsn: 0
            }
        );
        assert_eq!(psn, 0);
        let p = psns(WrOpcode::RdmaRead, false, &mut psn, 10, 0);
        assert_eq!(
            p,
            Psns {
                opc_spsn: 0x0200_0000,
                flg_npsn: 0
            }
        );
        assert_eq!(rc_packets(0, 1024), 1);
    }

    #[test]
    fn receive_entries() {
        let sge = [Sge {
            addr: 1,
            length: 2,
            lkey: 3,
        }];
        let mut w = vec![0xeeu8; 48];
        assert_eq!(encode_recv(&mut w, &sge, 7), 2);
        assert_eq!(
            &w[0..16],
            &[0x80, 0, 3, 0, 0xee, 0xee, 0xee, 0xee, 7, 0, 0, 0, 0xee, 0xee, 0xee, 0xee]
        );
        assert_eq!(recv_ws(0), 3);
        let mut s = [0xeeu8; SRQE_SIZE];
        encode_srq_recv(&mut s, &[], 9);
        assert_eq!(&s[0..4], &[0x80, 0, 2, 0]);
        assert_eq!(s[8], 9);
    }
}
