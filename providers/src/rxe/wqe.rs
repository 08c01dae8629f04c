//! Work-request encoding: [`SendWr`] → the bytes of an `rxe_send_wqe` slot, [`RecvWr`] → an
//! `rxe_recv_wqe` slot. Pure: no I/O, no unsafe, any input gives `Ok` or a [`WqeError`], never a
//! panic or a write outside the slot.
//!
//! What the kernel reads (measured on 6.1: docs/rxe-kernel.md, "E4 kernel-owned WQE fields"):
//! the remote address comes from `iova`, the transfer from `dma.resid` (so resid must equal
//! length, or data is silently not moved), the rkey from `wr.rdma.rkey` / `wr.atomic.rkey`. The
//! kernel writes `state`, `mask`, PSNs, `resid` and `sge_offset` back into the slot while it owns
//! it, so every post rewrites the whole 208-byte header (zeros included) before filling it in.

use core::fmt;

use uverbs::provider::QpType;
use uverbs::wr::{RecvWr, SendFlags, SendWr, Sge, WrOpcode};

use super::layout::*;

/// Send flags the kernel understands for user QPs (`IB_SEND_FENCE | SIGNALED | SOLICITED |
/// INLINE`). Anything else is refused rather than handed to the kernel.
pub const KNOWN_SEND_FLAGS: u32 = 0xF;

/// Atomic operands are 8 bytes: the local SGE that receives the original value must be exactly
/// that. (The kernel accepts any length and fails the *local* completion only after the remote
/// side executed: docs/rxe-kernel.md, "E3 atomic SGE length"; so this is checked here, before
/// posting.)
pub const ATOMIC_LEN: u32 = 8;

/// Why a work request cannot be encoded. Each message says what to change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WqeError {
    /// The slot is smaller than the fixed WQE header (ring geometry is wrong).
    SlotTooSmall { slot: usize, need: usize },
    /// More SGEs than the slot (or the QP's `max_*_sge`) holds.
    TooManySges { num: usize, max: u32 },
    /// Inline payload longer than the QP's `max_inline_data`.
    InlineTooLong { len: u64, max: u32 },
    /// INLINE on an opcode that carries no local payload out (READ, atomics).
    InlineNotAllowed { opcode: WrOpcode },
    /// The SGE lengths add up to more than a 32-bit message length.
    LengthOverflow { len: u64 },
    /// Atomics need exactly one SGE of exactly 8 bytes.
    AtomicSge { num: usize, len: u64 },
    /// Atomics need an 8-byte aligned remote address.
    AtomicMisaligned { addr: u64 },
    /// The opcode is not allowed on this QP type (UD: SEND/SEND_WITH_IMM; UC: no READ/atomics).
    OpcodeNotAllowed { opcode: WrOpcode, qp_type: QpType },
    /// A UD send without a destination (`SendWr::ud`).
    MissingUdDest,
    /// Flag bits outside FENCE|SIGNALED|SOLICITED|INLINE.
    UnknownFlags { flags: u32 },
    /// The inline payload could not be read.
    InlineSource(&'static str),
}

impl fmt::Display for WqeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WqeError::SlotTooSmall { slot, need } => {
                write!(
                    f,
                    "queue slot of {slot} bytes is smaller than the {need}-byte WQE header"
                )
            }
            WqeError::TooManySges { num, max } => {
                write!(f, "{num} scatter/gather entries, but this queue takes at most {max}; create the QP with a larger max_sge")
            }
            WqeError::InlineTooLong { len, max } => {
                write!(f, "inline payload of {len} bytes exceeds the QP's max_inline_data {max}; lower the {} or send without INLINE", uverbs::knob::named(uverbs::knob::Knob::InlineSize))
            }
            WqeError::InlineNotAllowed { opcode } => {
                write!(
                    f,
                    "INLINE is only valid for SEND and RDMA WRITE, not {}",
                    opcode.name()
                )
            }
            WqeError::LengthOverflow { len } => {
                write!(f, "message length {len} does not fit in 32 bits")
            }
            WqeError::AtomicSge { num, len } => {
                write!(f, "an atomic needs exactly one local SGE of exactly {ATOMIC_LEN} bytes (got {num} SGE(s), {len} bytes)")
            }
            WqeError::AtomicMisaligned { addr } => {
                write!(f, "atomic remote address {addr:#x} is not 8-byte aligned")
            }
            WqeError::OpcodeNotAllowed { opcode, qp_type } => {
                write!(
                    f,
                    "{} is not allowed on a {} QP",
                    opcode.name(),
                    qp_type.name()
                )
            }
            WqeError::MissingUdDest => write!(
                f,
                "a UD send needs a destination (address handle, QPN, Q_Key)"
            ),
            WqeError::UnknownFlags { flags } => {
                write!(f, "unknown send flags {flags:#x} (known: FENCE 1, SIGNALED 2, SOLICITED 4, INLINE 8)")
            }
            WqeError::InlineSource(why) => write!(f, "cannot read the inline payload: {why}"),
        }
    }
}

impl std::error::Error for WqeError {}

/// Where the bytes of an INLINE send come from. The provider reads the application's buffers
/// (the verbs contract: an SGE of an inline send names readable memory); tests supply their own.
pub trait InlineSource {
    /// Copy the `sge.length` bytes at `sge.addr` into `dst` (`dst.len() == sge.length`).
    fn copy(&self, sge: &Sge, dst: &mut [u8]) -> Result<(), WqeError>;
}

/// An [`InlineSource`] for callers that never post INLINE: every read fails.
pub struct NoInline;

impl InlineSource for NoInline {
    fn copy(&self, _sge: &Sge, _dst: &mut [u8]) -> Result<(), WqeError> {
        Err(WqeError::InlineSource(
            "inline sends are not supported here",
        ))
    }
}

/// What an SQ slot may carry, fixed when the QP is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqLimits {
    pub qp_type: QpType,
    /// SGEs per WQE: the smaller of the QP's reported `max_send_sge` and what the slot holds.
    pub max_sge: u32,
    /// Inline bytes per WQE: the smaller of the reported `max_inline_data` and the slot payload.
    pub max_inline: u32,
}

impl SqLimits {
    /// Limits for slots of `slot_size` bytes, clipped to what the kernel reported.
    pub fn new(qp_type: QpType, reported_sge: u32, reported_inline: u32, slot_size: usize) -> Self {
        let payload = slot_size.saturating_sub(SEND_WQE_SIZE);
        let sge_fit = u32::try_from(payload / SGE_SIZE).unwrap_or(u32::MAX);
        let inline_fit = u32::try_from(payload).unwrap_or(u32::MAX);
        SqLimits {
            qp_type,
            max_sge: reported_sge.min(sge_fit),
            max_inline: reported_inline.min(inline_fit),
        }
    }
}

/// SGEs a receive slot of `slot_size` bytes can take, clipped to `reported`.
pub fn recv_max_sge(reported: u32, slot_size: usize) -> u32 {
    let fit = slot_size.saturating_sub(RECV_WQE_SIZE) / SGE_SIZE;
    reported.min(u32::try_from(fit).unwrap_or(u32::MAX))
}

#[inline(always)]
fn put_u16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_ne_bytes());
}
#[inline(always)]
fn put_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_ne_bytes());
}
#[inline(always)]
fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_ne_bytes());
}

#[inline(always)]
fn put_sges(b: &mut [u8], at: usize, sgl: &[Sge]) {
    for (i, s) in sgl.iter().enumerate() {
        let o = at + i * SGE_SIZE;
        put_u64(b, o + SGE_ADDR, s.addr);
        put_u32(b, o + SGE_LENGTH, s.length);
        put_u32(b, o + SGE_LKEY, s.lkey);
    }
}

/// Check `wr` against the QP's limits without touching a slot; returns the message length.
#[inline]
pub fn validate_send(wr: &SendWr<'_>, lim: &SqLimits, slot_len: usize) -> Result<u32, WqeError> {
    if slot_len < SEND_WQE_SIZE {
        return Err(WqeError::SlotTooSmall {
            slot: slot_len,
            need: SEND_WQE_SIZE,
        });
    }
    if wr.flags.0 & !KNOWN_SEND_FLAGS != 0 {
        return Err(WqeError::UnknownFlags { flags: wr.flags.0 });
    }
    let op = wr.opcode;
    let allowed = match lim.qp_type {
        QpType::Rc => true,
        QpType::Uc => !matches!(op, WrOpcode::RdmaRead) && !op.is_atomic(),
        QpType::Ud => matches!(op, WrOpcode::Send | WrOpcode::SendWithImm),
        // rxe creates no DC QPs (prepare_qp refuses them); nothing is allowed on one.
        QpType::Dci | QpType::Dct => false,
        // The kernel's rxe has no XRC (prepare_qp refuses these types before they exist).
        QpType::XrcIni | QpType::XrcTgt => false,
        // SRD is EFA's (prepare_qp refuses it).
        QpType::Srd => false,
    };
    if !allowed {
        return Err(WqeError::OpcodeNotAllowed {
            opcode: op,
            qp_type: lim.qp_type,
        });
    }
    if lim.qp_type == QpType::Ud && wr.ud.is_none() {
        return Err(WqeError::MissingUdDest);
    }
    let total = wr.total_len();
    let len = u32::try_from(total).map_err(|_| WqeError::LengthOverflow { len: total })?;
    let payload = slot_len - SEND_WQE_SIZE;
    if wr.flags.contains(SendFlags::INLINE) {
        if matches!(op, WrOpcode::RdmaRead) || op.is_atomic() {
            return Err(WqeError::InlineNotAllowed { opcode: op });
        }
        let max = lim
            .max_inline
            .min(u32::try_from(payload).unwrap_or(u32::MAX));
        if len > max {
            return Err(WqeError::InlineTooLong { len: total, max });
        }
    } else {
        let max = lim
            .max_sge
            .min(u32::try_from(payload / SGE_SIZE).unwrap_or(u32::MAX));
        if wr.sgl.len() > max as usize {
            return Err(WqeError::TooManySges {
                num: wr.sgl.len(),
                max,
            });
        }
    }
    if op.is_atomic() {
        if wr.sgl.len() != 1 || len != ATOMIC_LEN {
            return Err(WqeError::AtomicSge {
                num: wr.sgl.len(),
                len: total,
            });
        }
        if wr.remote.addr & 7 != 0 {
            return Err(WqeError::AtomicMisaligned {
                addr: wr.remote.addr,
            });
        }
    }
    Ok(len)
}

/// Encode `wr` into `slot` (one whole SQ slot, `1 << log2_elem_size` bytes). On error the slot
/// may be partly written; it is not published, so the kernel never sees it.
#[inline]
pub fn encode_send(
    slot: &mut [u8],
    wr: &SendWr<'_>,
    lim: &SqLimits,
    inline: &impl InlineSource,
) -> Result<(), WqeError> {
    let len = validate_send(wr, lim, slot.len())?;
    let op = wr.opcode;

    // The whole header, zeros included: the kernel wrote state/PSNs/resid into this slot the
    // last time it was used (docs/rxe-kernel.md, "E4 kernel-owned WQE fields").
    slot[..SEND_WQE_SIZE].fill(0);
    put_u64(slot, WR_ID, wr.wr_id);
    put_u32(slot, WR_OPCODE, op as u32);
    put_u32(slot, WR_SEND_FLAGS, wr.flags.0);
    if op.has_imm() {
        // Already in network order as the application gave it: store the bytes as they are.
        put_u32(slot, WR_IMM_DATA, wr.imm_data);
    }
    match op {
        WrOpcode::RdmaWrite | WrOpcode::RdmaWriteWithImm | WrOpcode::RdmaRead => {
            put_u64(slot, WR_RDMA_REMOTE_ADDR, wr.remote.addr);
            put_u32(slot, WR_RDMA_RKEY, wr.remote.rkey);
            put_u64(slot, WQE_IOVA, wr.remote.addr);
        }
        WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd => {
            put_u64(slot, WR_ATOMIC_REMOTE_ADDR, wr.remote.addr);
            put_u64(slot, WR_ATOMIC_COMPARE_ADD, wr.compare_add);
            put_u64(slot, WR_ATOMIC_SWAP, wr.swap);
            put_u32(slot, WR_ATOMIC_RKEY, wr.remote.rkey);
            put_u64(slot, WQE_IOVA, wr.remote.addr);
        }
        WrOpcode::Send | WrOpcode::SendWithImm => {
            if lim.qp_type == QpType::Ud {
                // validate_send made sure it is there.
                let ud = wr.ud.unwrap_or_default();
                put_u32(slot, WR_UD_REMOTE_QPN, ud.remote_qpn);
                put_u32(slot, WR_UD_REMOTE_QKEY, ud.remote_qkey);
                put_u16(slot, WR_UD_PKEY_INDEX, 0);
                put_u32(slot, WR_UD_AH_NUM, ud.ah);
            }
        }
    }
    let dma = WQE_DMA;
    put_u32(slot, dma + DMA_LENGTH, len);
    put_u32(slot, dma + DMA_RESID, len);
    put_u32(slot, dma + DMA_NUM_SGE, wr.sgl.len() as u32);
    // cur_sge, sge_offset, state, status: 0 from the fill above.

    if wr.flags.contains(SendFlags::INLINE) {
        let mut at = SEND_WQE_SIZE;
        for s in wr.sgl {
            let n = s.length as usize;
            // In bounds: validate_send checked the sum against the slot payload.
            inline.copy(s, &mut slot[at..at + n])?;
            at += n;
        }
    } else {
        put_sges(slot, SEND_WQE_SIZE, wr.sgl);
    }
    Ok(())
}

/// Encode a receive request into an RQ/SRQ slot (`rxe_recv_wqe`, SGEs at +40).
#[inline]
pub fn encode_recv(slot: &mut [u8], wr: &RecvWr<'_>, max_sge: u32) -> Result<(), WqeError> {
    if slot.len() < RECV_WQE_SIZE {
        return Err(WqeError::SlotTooSmall {
            slot: slot.len(),
            need: RECV_WQE_SIZE,
        });
    }
    let fit = u32::try_from((slot.len() - RECV_WQE_SIZE) / SGE_SIZE).unwrap_or(u32::MAX);
    let max = max_sge.min(fit);
    if wr.sgl.len() > max as usize {
        return Err(WqeError::TooManySges {
            num: wr.sgl.len(),
            max,
        });
    }
    let total = wr
        .sgl
        .iter()
        .fold(0u64, |a, s| a.saturating_add(s.length as u64));
    let len = u32::try_from(total).map_err(|_| WqeError::LengthOverflow { len: total })?;
    slot[..RECV_WQE_SIZE].fill(0);
    put_u64(slot, RECV_WR_ID, wr.wr_id);
    put_u32(slot, RECV_DMA + DMA_LENGTH, len);
    put_u32(slot, RECV_DMA + DMA_RESID, len);
    put_u32(slot, RECV_DMA + DMA_NUM_SGE, wr.sgl.len() as u32);
    put_sges(slot, RECV_WQE_SIZE, wr.sgl);
    Ok(())
}

#[cfg(test)]
mod tests {
    //! Golden bytes. Offsets here are literal numbers read off `rdma_user_rxe.h` (not the
    //! constants of `layout.rs`), so a wrong constant cannot hide itself.
    use super::*;
    use uverbs::wr::{RemoteAddr, UdDest};

    /// Expected slot bytes: zeros with the given little fields at the given offsets.
    fn golden(len: usize, fields: &[(usize, &[u8])]) -> Vec<u8> {
        let mut v = vec![0u8; len];
        for (off, bytes) in fields {
            v[*off..*off + bytes.len()].copy_from_slice(bytes);
        }
        v
    }
    fn b32(v: u32) -> [u8; 4] {
        v.to_ne_bytes()
    }
    fn b64(v: u64) -> [u8; 8] {
        v.to_ne_bytes()
    }

    const RC: SqLimits = SqLimits {
        qp_type: QpType::Rc,
        max_sge: 3,
        max_inline: 48,
    };

    /// A slot of 256 bytes, dirtied first so the test proves the header is rewritten.
    fn dirty_slot() -> Vec<u8> {
        vec![0xA5u8; 256]
    }

    fn check(slot: &[u8], want: &[u8], upto: usize) {
        for i in 0..upto {
            assert_eq!(
                slot[i], want[i],
                "byte {i}: got {:#04x}, want {:#04x}",
                slot[i], want[i]
            );
        }
    }

    const SGE: Sge = Sge {
        addr: 0x1122_3344_5566_7788,
        length: 64,
        lkey: 0xabcd,
    };

    fn sge_bytes(s: &Sge) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&b64(s.addr));
        v.extend_from_slice(&b32(s.length));
        v.extend_from_slice(&b32(s.lkey));
        v
    }

    /// `wr` encoded into a dirty slot (no inline source: these WRs are not inline).
    fn encoded(wr: &SendWr<'_>, lim: &SqLimits) -> Vec<u8> {
        let mut slot = dirty_slot();
        encode_send(&mut slot, wr, lim, &NoInline).unwrap();
        slot
    }

    /// Expected bytes of a 256-byte slot: the given header fields, then the dma block of one
    /// SGE `s` (length, resid, num_sge 1, sge[0]).
    fn golden_one_sge(header: &[(usize, &[u8])], s: &Sge) -> Vec<u8> {
        let sgb = sge_bytes(s);
        let dma: [(usize, &[u8]); 4] = [
            (184, &b32(s.length)), // dma.length
            (188, &b32(s.length)), // dma.resid
            (196, &b32(1)),        // dma.num_sge
            (208, &sgb),           // dma.sge[0]
        ];
        let fields: Vec<(usize, &[u8])> = header.iter().copied().chain(dma).collect();
        golden(256, &fields)
    }

    #[test]
    fn rdma_write() {
        let sg = [SGE];
        let mut wr = SendWr::new(0xdead_beef_0000_0001, WrOpcode::RdmaWrite, &sg);
        wr.flags = SendFlags::SIGNALED;
        wr.remote = RemoteAddr {
            addr: 0x7f00_0000_1000,
            rkey: 0x1234,
        };
        let slot = encoded(&wr, &RC);
        let want = golden_one_sge(
            &[
                (0, &b64(0xdead_beef_0000_0001)), // wr_id
                (12, &b32(0)),                    // opcode IB_WR_RDMA_WRITE
                (16, &b32(2)),                    // send_flags SIGNALED
                (24, &b64(0x7f00_0000_1000)),     // wr.rdma.remote_addr
                (32, &b32(0x1234)),               // wr.rdma.rkey
                (152, &b64(0x7f00_0000_1000)),    // iova
            ],
            &SGE,
        );
        check(&slot, &want, 224);
        // Beyond the one SGE the slot is untouched.
        assert!(slot[224..].iter().all(|&b| b == 0xA5));
    }

    #[test]
    fn rdma_write_with_imm() {
        let sg = [SGE];
        let mut wr = SendWr::new(7, WrOpcode::RdmaWriteWithImm, &sg);
        wr.imm_data = u32::from_ne_bytes([0xde, 0xad, 0xbe, 0xef]);
        wr.remote = RemoteAddr {
            addr: 0x2000,
            rkey: 9,
        };
        let slot = encoded(&wr, &RC);
        let want = golden_one_sge(
            &[
                (0, &b64(7)),
                (12, &b32(1)),
                (20, &[0xde, 0xad, 0xbe, 0xef]), // ex.imm_data, memory order as posted
                (24, &b64(0x2000)),
                (32, &b32(9)),
                (152, &b64(0x2000)),
            ],
            &SGE,
        );
        check(&slot, &want, 224);
    }

    #[test]
    fn send_and_send_with_imm() {
        let sg = [SGE];
        let mut wr = SendWr::new(3, WrOpcode::Send, &sg);
        wr.flags = SendFlags::SIGNALED | SendFlags::SOLICITED;
        wr.imm_data = 0x5555_5555; // ignored for a plain SEND
        wr.remote = RemoteAddr {
            addr: 0x9999,
            rkey: 1,
        }; // ignored for SEND
        let mut slot = encoded(&wr, &RC);
        let want = golden_one_sge(&[(0, &b64(3)), (12, &b32(2)), (16, &b32(6))], &SGE);
        check(&slot, &want, 224);

        wr.opcode = WrOpcode::SendWithImm;
        encode_send(&mut slot, &wr, &RC, &NoInline).unwrap();
        let want = golden_one_sge(
            &[
                (0, &b64(3)),
                (12, &b32(3)),
                (16, &b32(6)),
                (20, &b32(0x5555_5555)),
            ],
            &SGE,
        );
        check(&slot, &want, 224);
    }

    #[test]
    fn rdma_read() {
        let sg = [SGE];
        let mut wr = SendWr::new(4, WrOpcode::RdmaRead, &sg);
        wr.remote = RemoteAddr {
            addr: 0xabc0,
            rkey: 0x77,
        };
        let slot = encoded(&wr, &RC);
        let want = golden_one_sge(
            &[
                (0, &b64(4)),
                (12, &b32(4)),
                (24, &b64(0xabc0)),
                (32, &b32(0x77)),
                (152, &b64(0xabc0)),
            ],
            &SGE,
        );
        check(&slot, &want, 224);
    }

    fn atomic_wr(op: WrOpcode, sg: &[Sge]) -> SendWr<'_> {
        let mut wr = SendWr::new(5, op, sg);
        wr.flags = SendFlags::SIGNALED;
        wr.remote = RemoteAddr {
            addr: 0x1_0000_0008,
            rkey: 0x4242,
        };
        wr.compare_add = 0x0102_0304_0506_0708;
        wr.swap = 0x1112_1314_1516_1718;
        wr
    }

    #[test]
    fn cmp_and_swap_and_fetch_add() {
        let a = Sge {
            addr: 0x5000,
            length: 8,
            lkey: 3,
        };
        let sg = [a];
        for (op, code) in [
            (WrOpcode::AtomicCmpAndSwp, 5u32),
            (WrOpcode::AtomicFetchAndAdd, 6),
        ] {
            let wr = atomic_wr(op, &sg);
            let slot = encoded(&wr, &RC);
            let want = golden_one_sge(
                &[
                    (0, &b64(5)),
                    (12, &b32(code)),
                    (16, &b32(2)),
                    (24, &b64(0x1_0000_0008)), // wr.atomic.remote_addr
                    (32, &b64(0x0102_0304_0506_0708)), // wr.atomic.compare_add
                    (40, &b64(0x1112_1314_1516_1718)), // wr.atomic.swap
                    (48, &b32(0x4242)),        // wr.atomic.rkey
                    (152, &b64(0x1_0000_0008)), // iova
                ],
                &a,
            );
            check(&slot, &want, 224);
        }
    }

    #[test]
    fn atomic_rules() {
        for len in [0u32, 4, 7, 9, 16] {
            let sg = [Sge {
                addr: 0x5000,
                length: len,
                lkey: 3,
            }];
            let wr = atomic_wr(WrOpcode::AtomicFetchAndAdd, &sg);
            let mut slot = dirty_slot();
            assert_eq!(
                encode_send(&mut slot, &wr, &RC, &NoInline),
                Err(WqeError::AtomicSge {
                    num: 1,
                    len: len as u64
                })
            );
        }
        let two = [Sge {
            addr: 0,
            length: 4,
            lkey: 0,
        }; 2];
        let wr = atomic_wr(WrOpcode::AtomicCmpAndSwp, &two);
        assert!(matches!(
            validate_send(&wr, &RC, 256),
            Err(WqeError::AtomicSge { num: 2, len: 8 })
        ));
        let none: [Sge; 0] = [];
        let wr = atomic_wr(WrOpcode::AtomicCmpAndSwp, &none);
        assert!(matches!(
            validate_send(&wr, &RC, 256),
            Err(WqeError::AtomicSge { num: 0, .. })
        ));
        let sg = [Sge {
            addr: 0x5000,
            length: 8,
            lkey: 3,
        }];
        let mut wr = atomic_wr(WrOpcode::AtomicCmpAndSwp, &sg);
        wr.remote.addr = 0x1004;
        assert_eq!(
            validate_send(&wr, &RC, 256),
            Err(WqeError::AtomicMisaligned { addr: 0x1004 })
        );
        wr.remote.addr = 0x1008;
        wr.flags = SendFlags::INLINE;
        assert!(matches!(
            validate_send(&wr, &RC, 256),
            Err(WqeError::InlineNotAllowed { .. })
        ));
    }

    /// Test inline source: the SGE address indexes into a byte array.
    struct Mem(Vec<u8>);
    impl InlineSource for Mem {
        fn copy(&self, sge: &Sge, dst: &mut [u8]) -> Result<(), WqeError> {
            let a = sge.addr as usize;
            let src = self
                .0
                .get(a..a + dst.len())
                .ok_or(WqeError::InlineSource("out of test memory"))?;
            dst.copy_from_slice(src);
            Ok(())
        }
    }

    #[test]
    fn inline_back_to_back() {
        let mem = Mem((0u8..=255).collect());
        let sg = [
            Sge {
                addr: 10,
                length: 5,
                lkey: 0,
            },
            Sge {
                addr: 100,
                length: 0,
                lkey: 0,
            },
            Sge {
                addr: 200,
                length: 3,
                lkey: 0,
            },
        ];
        let mut wr = SendWr::new(9, WrOpcode::Send, &sg);
        wr.flags = SendFlags::INLINE | SendFlags::SIGNALED;
        let mut slot = dirty_slot();
        encode_send(&mut slot, &wr, &RC, &mem).unwrap();
        let want = golden(
            256,
            &[
                (0, &b64(9)),
                (12, &b32(2)),
                (16, &b32(10)),
                (184, &b32(8)),
                (188, &b32(8)),
                (196, &b32(3)),
                (208, &[10, 11, 12, 13, 14, 200, 201, 202]),
            ],
        );
        check(&slot, &want, 216);
        assert!(slot[216..].iter().all(|&b| b == 0xA5));

        // RDMA WRITE inline works too; over the limit is refused.
        let big = [Sge {
            addr: 0,
            length: 49,
            lkey: 0,
        }];
        let mut wr = SendWr::new(1, WrOpcode::RdmaWrite, &big);
        wr.flags = SendFlags::INLINE;
        assert_eq!(
            encode_send(&mut slot, &wr, &RC, &mem),
            Err(WqeError::InlineTooLong { len: 49, max: 48 })
        );
        let ok = [Sge {
            addr: 0,
            length: 48,
            lkey: 0,
        }];
        wr.sgl = &ok;
        encode_send(&mut slot, &wr, &RC, &mem).unwrap();
        assert_eq!(&slot[208..256], &mem.0[..48]);
        // An inline source failure is reported, not a panic.
        let far = [Sge {
            addr: 1000,
            length: 4,
            lkey: 0,
        }];
        wr.sgl = &far;
        assert!(matches!(
            encode_send(&mut slot, &wr, &RC, &mem),
            Err(WqeError::InlineSource(_))
        ));
        // Inline is clipped to the slot even if the QP claims more.
        let lim = SqLimits {
            max_inline: 4096,
            ..RC
        };
        let fat = [Sge {
            addr: 0,
            length: 49,
            lkey: 0,
        }];
        wr.sgl = &fat;
        assert_eq!(
            encode_send(&mut slot, &wr, &lim, &mem),
            Err(WqeError::InlineTooLong { len: 49, max: 48 })
        );
    }

    #[test]
    fn multi_sge() {
        let sg = [
            Sge {
                addr: 0x1000,
                length: 100,
                lkey: 1,
            },
            Sge {
                addr: 0x2000,
                length: 200,
                lkey: 2,
            },
            Sge {
                addr: 0x3000,
                length: 300,
                lkey: 3,
            },
        ];
        let mut wr = SendWr::new(11, WrOpcode::RdmaWrite, &sg);
        wr.remote = RemoteAddr {
            addr: 0x8000,
            rkey: 5,
        };
        let mut slot = dirty_slot();
        encode_send(&mut slot, &wr, &RC, &NoInline).unwrap();
        let mut sgb = Vec::new();
        for s in &sg {
            sgb.extend(sge_bytes(s));
        }
        let want = golden(
            256,
            &[
                (0, &b64(11)),
                (24, &b64(0x8000)),
                (32, &b32(5)),
                (152, &b64(0x8000)),
                (184, &b32(600)),
                (188, &b32(600)),
                (196, &b32(3)),
                (208, &sgb),
            ],
        );
        check(&slot, &want, 256);

        let four = [Sge::default(); 4];
        wr.sgl = &four;
        assert_eq!(
            encode_send(&mut slot, &wr, &RC, &NoInline),
            Err(WqeError::TooManySges { num: 4, max: 3 })
        );
        // Slot geometry wins over a generous limit: 256-byte slot holds 3 SGEs.
        let lim = SqLimits { max_sge: 32, ..RC };
        assert_eq!(
            encode_send(&mut slot, &wr, &lim, &NoInline),
            Err(WqeError::TooManySges { num: 4, max: 3 })
        );
    }

    #[test]
    fn ud_send() {
        let sg = [SGE];
        let mut wr = SendWr::new(12, WrOpcode::SendWithImm, &sg);
        wr.flags = SendFlags::SIGNALED;
        wr.imm_data = 0x0a0b_0c0d;
        wr.ud = Some(UdDest {
            ah: 3,
            remote_qpn: 0x11,
            remote_qkey: 0x1111_1111,
        });
        let lim = SqLimits {
            qp_type: QpType::Ud,
            ..RC
        };
        let slot = encoded(&wr, &lim);
        let want = golden_one_sge(
            &[
                (0, &b64(12)),
                (12, &b32(3)),
                (16, &b32(2)),
                (20, &b32(0x0a0b_0c0d)),
                (24, &b32(0x11)),        // wr.ud.remote_qpn
                (28, &b32(0x1111_1111)), // wr.ud.remote_qkey
                (32, &[0, 0]),           // wr.ud.pkey_index
                (36, &b32(3)),           // wr.ud.ah_num
            ],
            &SGE,
        );
        check(&slot, &want, 224);

        wr.opcode = WrOpcode::RdmaWrite;
        assert_eq!(
            validate_send(&wr, &lim, 256),
            Err(WqeError::OpcodeNotAllowed {
                opcode: WrOpcode::RdmaWrite,
                qp_type: QpType::Ud
            })
        );
        wr.opcode = WrOpcode::Send;
        wr.ud = None;
        assert_eq!(validate_send(&wr, &lim, 256), Err(WqeError::MissingUdDest));
    }

    #[test]
    fn uc_rules_and_flags_and_zero_length() {
        let uc = SqLimits {
            qp_type: QpType::Uc,
            ..RC
        };
        let none: [Sge; 0] = [];
        for op in [
            WrOpcode::RdmaRead,
            WrOpcode::AtomicCmpAndSwp,
            WrOpcode::AtomicFetchAndAdd,
        ] {
            let wr = SendWr::new(1, op, &none);
            assert!(matches!(
                validate_send(&wr, &uc, 256),
                Err(WqeError::OpcodeNotAllowed { .. })
            ));
        }
        // Zero-length SEND/WRITE/READ with no SGEs: allowed, length 0, num_sge 0.
        for op in [WrOpcode::Send, WrOpcode::RdmaWrite, WrOpcode::RdmaRead] {
            let wr = SendWr::new(1, op, &none);
            let mut slot = dirty_slot();
            encode_send(&mut slot, &wr, &RC, &NoInline).unwrap();
            assert_eq!(&slot[184..208], &[0u8; 24]);
            assert!(slot[208..].iter().all(|&b| b == 0xA5));
        }
        let mut wr = SendWr::new(1, WrOpcode::Send, &none);
        wr.flags = SendFlags(0x10);
        assert_eq!(
            validate_send(&wr, &RC, 256),
            Err(WqeError::UnknownFlags { flags: 0x10 })
        );
        // Length overflow.
        let huge = [
            Sge {
                addr: 0,
                length: u32::MAX,
                lkey: 0,
            },
            Sge {
                addr: 0,
                length: 1,
                lkey: 0,
            },
        ];
        let wr = SendWr::new(1, WrOpcode::Send, &huge);
        assert!(matches!(
            validate_send(&wr, &RC, 256),
            Err(WqeError::LengthOverflow { .. })
        ));
        // Slot too small.
        let wr = SendWr::new(1, WrOpcode::Send, &none);
        let mut small = [0u8; 100];
        assert!(matches!(
            encode_send(&mut small, &wr, &RC, &NoInline),
            Err(WqeError::SlotTooSmall { .. })
        ));
    }

    #[test]
    fn recv_wqe() {
        let sg = [
            Sge {
                addr: 0x4000,
                length: 4096,
                lkey: 0x99,
            },
            Sge {
                addr: 0x9000,
                length: 16,
                lkey: 0x98,
            },
        ];
        let wr = RecvWr {
            wr_id: 0x77,
            sgl: &sg,
        };
        let mut slot = vec![0xA5u8; 128];
        encode_recv(&mut slot, &wr, 5).unwrap();
        let mut sgb = sge_bytes(&sg[0]);
        sgb.extend(sge_bytes(&sg[1]));
        let want = golden(
            128,
            &[
                (0, &b64(0x77)),  // wr_id
                (16, &b32(4112)), // dma.length
                (20, &b32(4112)), // dma.resid
                (28, &b32(2)),    // dma.num_sge
                (40, &sgb),       // dma.sge[]
            ],
        );
        check(&slot, &want, 72);
        assert!(slot[72..].iter().all(|&b| b == 0xA5));
        // 128-byte slot: 5 SGEs fit; 6 do not even if the limit says 32.
        let six = [Sge::default(); 6];
        assert_eq!(
            encode_recv(
                &mut slot,
                &RecvWr {
                    wr_id: 1,
                    sgl: &six
                },
                32
            ),
            Err(WqeError::TooManySges { num: 6, max: 5 })
        );
        assert!(encode_recv(&mut [0u8; 39], &RecvWr { wr_id: 1, sgl: &[] }, 1).is_err());
    }

    #[test]
    fn limits_from_slot() {
        let l = SqLimits::new(QpType::Rc, 32, 512, 256);
        assert_eq!((l.max_sge, l.max_inline), (3, 48));
        let l = SqLimits::new(QpType::Rc, 1, 16, 256);
        assert_eq!((l.max_sge, l.max_inline), (1, 16));
        let l = SqLimits::new(QpType::Rc, 1, 16, 64);
        assert_eq!((l.max_sge, l.max_inline), (0, 0));
        assert_eq!(recv_max_sge(32, 64), 1);
    }

    #[test]
    fn every_error_has_a_message() {
        let errs = [
            WqeError::SlotTooSmall { slot: 1, need: 2 },
            WqeError::TooManySges { num: 1, max: 0 },
            WqeError::InlineTooLong { len: 1, max: 0 },
            WqeError::InlineNotAllowed {
                opcode: WrOpcode::RdmaRead,
            },
            WqeError::LengthOverflow { len: 1 << 33 },
            WqeError::AtomicSge { num: 1, len: 4 },
            WqeError::AtomicMisaligned { addr: 1 },
            WqeError::OpcodeNotAllowed {
                opcode: WrOpcode::RdmaRead,
                qp_type: QpType::Ud,
            },
            WqeError::MissingUdDest,
            WqeError::UnknownFlags { flags: 0x20 },
            WqeError::InlineSource("x"),
        ];
        for e in errs {
            let s = e.to_string();
            assert!(!s.is_empty() && !s.contains('\n'), "{s}");
        }
    }
}
