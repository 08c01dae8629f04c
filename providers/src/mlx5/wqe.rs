//! Work-queue-entry encoding: pure functions from work requests to the bytes the HCA reads.
//!
//! A send WQE is a sequence of 16-byte units ("DS") in 64-byte basic blocks (WQEBBs): a control
//! segment, then per opcode a remote-address segment, an atomic segment (RC) or a datagram
//! segment (UD), then data-pointer segments or one inline segment. The SQ is a ring of WQEBBs; a
//! WQE that reaches the end of the ring continues at its start (segments never straddle the end
//! because they are 16-byte units and the ring is a multiple of 64; inline payload copies are
//! split). All fields are big-endian; the segments are the structs of `hw.rs`.
//!
//! No I/O and no unsafe: the SQ is a `&mut [u8]`, inline payload comes through a caller-supplied
//! copy function.

use uverbs::error::{Error, Result};
use zerocopy::byteorder::big_endian::{U16, U32, U64};
use zerocopy::FromBytes;

use super::hw::{AtomicSeg, Av, CtrlSeg, DataSeg, RaddrSeg, XrcSeg};
use uverbs::provider::QpType;
use uverbs::wr::{RecvWr, SendFlags, SendWr, Sge, WrOpcode};

/// Basic block size (`MLX5_SEND_WQE_BB`).
pub const WQEBB: usize = 64;
/// A DS unit.
pub const DS: usize = 16;
/// `MLX5_INLINE_SEG`: set in an inline segment's byte count.
pub const INLINE_SEG: u32 = 0x8000_0000;
/// `MLX5_INVALID_LKEY`: terminates a receive WQE's scatter list.
pub const INVALID_LKEY: u32 = 0x100;
/// Local data segment length for atomics (`MLX5_ATOMIC_SIZE`).
pub const ATOMIC_SIZE: u32 = 8;
/// `MLX5_EXTENDED_UD_AV`: set in the datagram segment's destination QPN.
pub const EXTENDED_UD_AV: u32 = 0x8000_0000;
/// ds is a 6-bit field.
pub const MAX_DS: u32 = 63;

/// Send opcodes (`MLX5_OPCODE_*`).
pub mod opcode {
    pub const NOP: u8 = 0x00;
    pub const SEND_INVAL: u8 = 0x01;
    pub const RDMA_WRITE: u8 = 0x08;
    pub const RDMA_WRITE_IMM: u8 = 0x09;
    pub const SEND: u8 = 0x0a;
    pub const SEND_IMM: u8 = 0x0b;
    pub const RDMA_READ: u8 = 0x10;
    pub const ATOMIC_CS: u8 = 0x11;
    pub const ATOMIC_FA: u8 = 0x12;
}

/// `fm_ce_se` bits of the control segment.
pub mod ctrl_flags {
    pub const SOLICITED: u8 = 0x02;
    pub const CQ_UPDATE: u8 = 0x08;
    pub const FENCE: u8 = 0x80;
}

pub fn mlx5_opcode(op: WrOpcode) -> u8 {
    match op {
        WrOpcode::RdmaWrite => opcode::RDMA_WRITE,
        WrOpcode::RdmaWriteWithImm => opcode::RDMA_WRITE_IMM,
        WrOpcode::Send => opcode::SEND,
        WrOpcode::SendWithImm => opcode::SEND_IMM,
        WrOpcode::RdmaRead => opcode::RDMA_READ,
        WrOpcode::AtomicCmpAndSwp => opcode::ATOMIC_CS,
        WrOpcode::AtomicFetchAndAdd => opcode::ATOMIC_FA,
    }
}

/// Control segment (16 bytes).
pub fn ctrl_seg(
    wqe_index: u16,
    opcode: u8,
    qpn: u32,
    ds: u8,
    fm_ce_se: u8,
    imm_raw: u32,
) -> [u8; 16] {
    zerocopy::transmute!(CtrlSeg {
        opmod_idx_opcode: U32::new(((wqe_index as u32) << 8) | opcode as u32),
        qpn_ds: U32::new(((qpn & 0xff_ffff) << 8) | (ds as u32 & 0x3f)),
        // signature, dci_stream_channel_id: zero.
        signature: 0,
        dci_stream_channel_id: U16::ZERO,
        fm_ce_se,
        // The application's value is already in network order: its memory bytes as they are.
        imm: imm_raw.to_ne_bytes(),
    })
}

/// Remote-address segment (16 bytes).
pub fn raddr_seg(addr: u64, rkey: u32) -> [u8; 16] {
    zerocopy::transmute!(RaddrSeg { raddr: U64::new(addr), rkey: U32::new(rkey), reserved: U32::ZERO })
}

/// Atomic segment (16 bytes): swap (CAS) or addend (FAA), then compare.
pub fn atomic_seg(swap_add: u64, compare: u64) -> [u8; 16] {
    zerocopy::transmute!(AtomicSeg { swap_add: U64::new(swap_add), compare: U64::new(compare) })
}

/// Data-pointer segment (16 bytes).
pub fn data_seg(byte_count: u32, lkey: u32, addr: u64) -> [u8; 16] {
    zerocopy::transmute!(DataSeg { byte_count: U32::new(byte_count), lkey: U32::new(lkey), addr: U64::new(addr) })
}

/// UD datagram segment (`struct mlx5_wqe_datagram_seg`, 48 bytes): the AH's address vector
/// with the Q_Key in bytes 0..4 and the destination QPN, extended-AV bit set, in bytes 8..12.
pub fn ud_datagram_seg(av: &[u8; 48], qkey: u32, remote_qpn: u32) -> [u8; 48] {
    let mut d: Av = zerocopy::transmute!(*av);
    // `key.qkey.qkey`: the high word; the reserved word after it stays as the AH has it.
    d.key = U64::new((u64::from(qkey) << 32) | (d.key.get() & 0xffff_ffff));
    d.dqp_dct = U32::new((remote_qpn & 0xff_ffff) | EXTENDED_UD_AV);
    zerocopy::transmute!(d)
}

/// DC datagram segment (libmlx5 `mlx5dv_wr_set_dc_addr`): the AH's address vector with the
/// 64-bit DC access key in bytes 0..8 (`key.dc_key`, big-endian) and the target DCT number
/// OR-ed into `dqp_dct` with the extended-AV bit.
pub fn dc_datagram_seg(av: &[u8; 48], dc_key: u64, dctn: u32) -> [u8; 48] {
    let mut d: Av = zerocopy::transmute!(*av);
    d.dqp_dct = U32::new(d.dqp_dct.get() | (dctn & 0xff_ffff) | EXTENDED_UD_AV);
    d.key = U64::new(dc_key);
    zerocopy::transmute!(d)
}

/// Per-QP constants the encoder needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqParams {
    pub qpn: u32,
    pub qp_type: QpType,
    pub max_send_sge: u32,
    pub max_inline: u32,
    /// WQE size limit in bytes (the per-WQE size the SQ was sized for).
    pub max_wqe_bytes: u32,
    pub sig_all: bool,
    /// DCI: the DC access key its sends present (`mlx5_wqe_av.key.dc_key`); 0 otherwise.
    pub dc_key: u64,
}

/// What [`build_send`] produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Built {
    /// WQE size in 16-byte units.
    pub ds: u8,
    /// Basic blocks consumed (`ceil(ds*16/64)`).
    pub wqebbs: u32,
    /// An inline segment was used (BlueFlame is then always worth it).
    pub inline: bool,
    /// The first 8 bytes of the control segment, in memory order (the doorbell value).
    pub ctrl_head: u64,
}

/// Write position in the SQ ring, wrapping at the end.
struct Cursor<'a> {
    sq: &'a mut [u8],
    pos: usize,
}

impl Cursor<'_> {
    #[inline]
    fn wrap(&mut self) {
        if self.pos >= self.sq.len() {
            self.pos = 0;
        }
    }
    #[inline]
    fn seg(&mut self, s: &[u8; 16]) {
        self.wrap();
        self.sq[self.pos..self.pos + 16].copy_from_slice(s);
        self.pos += 16;
    }
}

fn bad(detail: impl Into<String>) -> Error {
    Error::msg("mlx5 post_send", detail).with_detail_errno(libc::EINVAL)
}

trait ErrnoExt {
    fn with_detail_errno(self, e: i32) -> Self;
}
impl ErrnoExt for Error {
    fn with_detail_errno(mut self, e: i32) -> Self {
        self.errno = Some(e);
        self
    }
}

/// The 16-byte XRC segment of an XRC initiator's send WQE: `xrc_srqn` (24 bits, big endian)
/// and 12 reserved bytes.
pub fn xrc_seg(remote_srqn: u32) -> [u8; 16] {
    zerocopy::transmute!(XrcSeg { xrc_srqn: U32::new(remote_srqn & 0xff_ffff), reserved: [0; 12] })
}

/// Validate `wr` against the QP without touching the ring.
pub fn check_send(p: &SqParams, wr: &SendWr<'_>) -> Result<()> {
    let op = wr.opcode;
    match p.qp_type {
        QpType::Rc | QpType::XrcIni => {}
        QpType::XrcTgt => return Err(bad("an XRC target QP has no send queue")),
        QpType::Uc => {
            if matches!(op, WrOpcode::RdmaRead) || op.is_atomic() {
                return Err(bad(format!("{} is not allowed on a UC QP", op.name())));
            }
        }
        QpType::Ud => {
            if !matches!(op, WrOpcode::Send | WrOpcode::SendWithImm) {
                return Err(bad(format!("{} is not allowed on a UD QP", op.name())));
            }
            if wr.ud.is_none() {
                return Err(bad("UD send without a destination (ud: None)"));
            }
        }
        QpType::Dci => {
            if wr.ud.is_none() {
                return Err(bad("DCI send without a destination (ud: None; ah and remote_qpn = the DCT number)"));
            }
        }
        QpType::Dct => return Err(bad("a DCT has no send queue")),
        QpType::Srd => return Err(bad("SRD is an EFA QP type; mlx5 creates none")),
    }
    if wr.sgl.len() > p.max_send_sge as usize {
        return Err(Error::msg(
            "mlx5 post_send",
            format!("{} SGEs, the QP allows {}", wr.sgl.len(), p.max_send_sge),
        )
        .with_detail_errno(libc::ENOMEM));
    }
    if wr.flags.contains(SendFlags::INLINE) && !wr.sgl.is_empty() {
        if matches!(op, WrOpcode::RdmaRead) || op.is_atomic() {
            return Err(bad(format!("{} cannot carry inline data", op.name())));
        }
        let total = wr.total_len();
        if total > p.max_inline as u64 {
            return Err(Error::msg(
                "mlx5 post_send",
                format!("{total} inline bytes, the QP allows {}", p.max_inline),
            )
            .with_detail_errno(libc::ENOMEM)
            .with_hint(format!(
                "lower the {} or create the QP with a larger max_inline_data",
                uverbs::knob::named(uverbs::knob::Knob::InlineSize)
            )));
        }
    }
    Ok(())
}

/// Encode one send WQE into `sq` (the whole SQ ring, `wqe_cnt * 64` bytes, a power of two)
/// at basic block `cur_post`. `av` is the 48-byte address vector for UD. `copy_inline(addr, dst)`
/// fills `dst` with the `dst.len()` bytes at virtual address `addr`.
///
/// Bytes of the last basic block beyond `ds * 16` are left as they were (the device ignores them).
#[inline]
pub fn build_send<F>(
    sq: &mut [u8],
    cur_post: u32,
    p: &SqParams,
    wr: &SendWr<'_>,
    av: Option<&[u8; 48]>,
    copy_inline: F,
) -> Result<Built>
where
    F: FnMut(u64, &mut [u8]),
{
    if let Some(b) = build_send_fast(sq, cur_post, p, wr) {
        return Ok(b);
    }
    build_send_generic(sq, cur_post, p, wr, av, copy_inline)
}

/// The fence / completion / solicited bits of the control segment.
#[inline(always)]
fn fm_ce_se_of(p: &SqParams, wr: &SendWr<'_>) -> u8 {
    let mut fm_ce_se = if p.sig_all { ctrl_flags::CQ_UPDATE } else { 0 };
    if wr.flags.contains(SendFlags::FENCE) {
        fm_ce_se |= ctrl_flags::FENCE;
    }
    if wr.flags.contains(SendFlags::SIGNALED) {
        fm_ce_se |= ctrl_flags::CQ_UPDATE;
    }
    if wr.flags.contains(SendFlags::SOLICITED) {
        fm_ce_se |= ctrl_flags::SOLICITED;
    }
    fm_ce_se
}

/// [`build_send`]'s fast path: an RC send / RDMA write / RDMA read with exactly one non-empty
/// SGE, not inline (perftest's and most applications' data path). `None` when the request is
/// anything else: the generic path then encodes it or reports what is wrong with it.
///
/// Same bytes as the generic path (a unit test compares them), with one bounds check per WQE
/// instead of a wrap check and a slice check per segment, and without the generic checks that
/// cannot fail here:
/// - `check_send`: an RC QP allows every opcode; the one SGE is within `max_send_sge` (checked
///   below); the inline checks do not apply (no INLINE flag);
/// - the DS limit: ctrl + raddr + data = 3 DS = 48 bytes, below `MAX_DS` and below
///   `max_wqe_bytes.max(64)`, which is at least 64;
/// - the ring wrap: the WQE starts on a 64-byte basic block and takes at most 48 bytes of it, so
///   it never reaches the end of the ring (a whole number of basic blocks).
#[inline(always)]
pub(crate) fn build_send_fast(sq: &mut [u8], cur_post: u32, p: &SqParams, wr: &SendWr<'_>) -> Option<Built> {
    build_send_fast_block(sq, cur_post, p, wr).map(|(b, _)| b)
}

/// [`build_send_fast`], also returning the WQE's whole 64-byte basic block as the eight
/// native-order words now in the ring (the segments just written, then the block's stale tail
/// as it was): the BlueFlame source, handed over in registers instead of read back from the
/// ring.
#[inline(always)]
pub(crate) fn build_send_fast_block(
    sq: &mut [u8],
    cur_post: u32,
    p: &SqParams,
    wr: &SendWr<'_>,
) -> Option<(Built, [u64; 8])> {
    if p.qp_type != QpType::Rc || p.max_send_sge == 0 || wr.flags.contains(SendFlags::INLINE) {
        return None;
    }
    let [sge] = wr.sgl else { return None };
    if sge.length == 0 {
        return None;
    }
    let (opc, raddr) = match wr.opcode {
        WrOpcode::RdmaWrite => (opcode::RDMA_WRITE, true),
        WrOpcode::RdmaWriteWithImm => (opcode::RDMA_WRITE_IMM, true),
        WrOpcode::RdmaRead => (opcode::RDMA_READ, true),
        WrOpcode::Send => (opcode::SEND, false),
        WrOpcode::SendWithImm => (opcode::SEND_IMM, false),
        WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd => return None,
    };
    let mask = sq.len() / WQEBB - 1;
    let start = (cur_post as usize & mask) * WQEBB;
    // The one bounds check for this WQE: its basic block (in the ring whenever the ring is a
    // power-of-two number of blocks, as build_send requires; if not, the generic path decides).
    let blk: &mut [u8; WQEBB] = sq.get_mut(start..start + WQEBB)?.try_into().ok()?;
    let word = |b: &[u8]| u64::from_ne_bytes(b.try_into().unwrap_or([0; 8]));
    let halves = |seg: &[u8; 16]| (word(&seg[..8]), word(&seg[8..]));
    let data = data_seg(sge.length, sge.lkey, sge.addr);
    let (d0, d1) = halves(&data);
    let imm = if wr.opcode.has_imm() { wr.imm_data } else { 0 };
    let (ds, w2, w3, w4, w5) = if raddr {
        let r = raddr_seg(wr.remote.addr, wr.remote.rkey);
        blk[16..32].copy_from_slice(&r);
        blk[32..48].copy_from_slice(&data);
        let (r0, r1) = halves(&r);
        (3, r0, r1, d0, d1)
    } else {
        blk[16..32].copy_from_slice(&data);
        // bytes 32..48 are the block's stale tail: as the ring holds them
        (2, d0, d1, word(&blk[32..40]), word(&blk[40..48]))
    };
    let ctrl = ctrl_seg(cur_post as u16, opc, p.qpn, ds, fm_ce_se_of(p, wr), imm);
    blk[0..16].copy_from_slice(&ctrl);
    let (c0, c1) = halves(&ctrl);
    let w = [c0, c1, w2, w3, w4, w5, word(&blk[48..56]), word(&blk[56..64])];
    Some((Built { ds, wqebbs: 1, inline: false, ctrl_head: c0 }, w))
}

/// [`build_send`] for every request (its arguments): checks it, then encodes it segment by
/// segment.
fn build_send_generic(sq: &mut [u8], cur_post: u32, p: &SqParams, wr: &SendWr<'_>, av: Option<&[u8; 48]>, copy_inline: impl FnMut(u64, &mut [u8])) -> Result<Built> {
    check_send(p, wr)?;
    debug_assert!(sq.len().is_power_of_two() && sq.len() >= WQEBB);
    let mask = sq.len() / WQEBB - 1;
    let start = (cur_post as usize & mask) * WQEBB;
    let mut c = Cursor {
        sq,
        pos: start + 16,
    };
    let mut ds: u32 = 1;

    ds += transport_segs(&mut c, p, wr, av)?;
    let (data_ds, inline) = data_segs(&mut c, wr, copy_inline);
    ds += data_ds;

    if ds > MAX_DS || ds * 16 > p.max_wqe_bytes.max(64) {
        return Err(bad(format!(
            "work request needs {} bytes, beyond the WQE size {}",
            ds * 16,
            p.max_wqe_bytes
        )));
    }
    let fm_ce_se = fm_ce_se_of(p, wr);
    let imm = if wr.opcode.has_imm() { wr.imm_data } else { 0 };
    let mut ctrl = ctrl_seg(
        cur_post as u16,
        mlx5_opcode(wr.opcode),
        p.qpn,
        ds as u8,
        fm_ce_se,
        imm,
    );
    if p.qp_type == QpType::Dci {
        // libmlx5's mlx5_send_wr_set_dc_addr_stream: the stream id in the control segment's
        // dci_stream_channel_id (not in the doorbell's first 8 bytes).
        let mut seg: CtrlSeg = zerocopy::transmute!(ctrl);
        seg.dci_stream_channel_id = U16::new(wr.dci_stream);
        ctrl = zerocopy::transmute!(seg);
    }
    c.sq[start..start + 16].copy_from_slice(&ctrl);
    let mut head = [0u8; 8];
    head.copy_from_slice(&ctrl[..8]);
    Ok(Built {
        ds: ds as u8,
        wqebbs: (ds * 16).div_ceil(WQEBB as u32),
        inline,
        ctrl_head: u64::from_ne_bytes(head),
    })
}

/// The segments between the control segment and the data: the datagram (UD, DCI) or XRC
/// segment, then the remote address and atomic segments the opcode needs (libmlx5's order).
/// Returns how many 16-byte segments it wrote.
fn transport_segs(c: &mut Cursor<'_>, p: &SqParams, wr: &SendWr<'_>, av: Option<&[u8; 48]>) -> Result<u32> {
    let mut ds = 0;
    // The transport segment comes right after the control segment (libmlx5: ctrl, datagram,
    // then remote address / atomic, then data).
    if matches!(p.qp_type, QpType::Ud | QpType::Dci) {
        let ud = wr.ud.unwrap_or_default();
        let a = match av {
            Some(a) => a,
            None => return Err(bad(format!("{} send: unknown address handle", p.qp_type.name()))),
        };
        let d = if p.qp_type == QpType::Ud {
            ud_datagram_seg(a, ud.remote_qkey, ud.remote_qpn)
        } else {
            dc_datagram_seg(a, p.dc_key, ud.remote_qpn)
        };
        for ch in d.chunks_exact(16) {
            let mut s = [0u8; 16];
            s.copy_from_slice(ch);
            c.seg(&s);
        }
        ds += 3;
    } else if p.qp_type == QpType::XrcIni {
        // The XRC segment follows the control segment (before any remote-address segment):
        // the target SRQ number, big endian, then 12 reserved bytes (libmlx5's mlx5_wqe_xrc_seg).
        c.seg(&xrc_seg(wr.remote_srqn));
        ds += 1;
    }

    match wr.opcode {
        WrOpcode::RdmaWrite | WrOpcode::RdmaWriteWithImm | WrOpcode::RdmaRead => {
            c.seg(&raddr_seg(wr.remote.addr, wr.remote.rkey));
            ds += 1;
        }
        WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd => {
            c.seg(&raddr_seg(wr.remote.addr, wr.remote.rkey));
            let (swap_add, compare) = if wr.opcode == WrOpcode::AtomicCmpAndSwp {
                (wr.swap, wr.compare_add)
            } else {
                (wr.compare_add, 0)
            };
            c.seg(&atomic_seg(swap_add, compare));
            ds += 2;
        }
        WrOpcode::Send | WrOpcode::SendWithImm => {}
    }
    Ok(ds)
}

/// The data: the request's bytes copied inline behind a 4-byte header, or one data segment per
/// non-empty SGE. Returns the segments written and whether the data went inline.
fn data_segs<F>(c: &mut Cursor<'_>, wr: &SendWr<'_>, mut copy_inline: F) -> (u32, bool)
where
    F: FnMut(u64, &mut [u8]),
{
    let mut ds = 0;
    let mut inline = false;
    if wr.flags.contains(SendFlags::INLINE) && !wr.sgl.is_empty() {
        inline = true;
        c.wrap();
        let hdr = c.pos;
        let mut pos = hdr + 4;
        let mut total: u32 = 0;
        for s in wr.sgl {
            let mut addr = s.addr;
            let mut len = s.length as usize;
            total = total.saturating_add(s.length);
            if pos + len > c.sq.len() {
                let first = c.sq.len() - pos;
                copy_inline(addr, &mut c.sq[pos..pos + first]);
                addr = addr.wrapping_add(first as u64);
                len -= first;
                pos = 0;
            }
            copy_inline(addr, &mut c.sq[pos..pos + len]);
            pos += len;
        }
        if total > 0 {
            c.sq[hdr..hdr + 4].copy_from_slice(&(total | INLINE_SEG).to_be_bytes());
            ds += (total + 4).div_ceil(16);
        }
    } else {
        let atomic = wr.opcode.is_atomic();
        for s in wr.sgl.iter().filter(|s| s.length != 0) {
            let len = if atomic { ATOMIC_SIZE } else { s.length };
            c.seg(&data_seg(len, s.lkey, s.addr));
            ds += 1;
        }
    }
    (ds, inline)
}

/// Encode one receive WQE into its RQ slot (`slot.len()` = the RQ stride): data segments for
/// the non-empty SGEs, then a terminator (byte count 0, `INVALID_LKEY`) if there is room.
pub fn build_recv(slot: &mut [u8], wr: &RecvWr<'_>) -> Result<()> {
    let max_gs = slot.len() / DS;
    if wr.sgl.len() > max_gs {
        return Err(Error::msg(
            "mlx5 post_recv",
            format!("{} SGEs, the queue allows {max_gs}", wr.sgl.len()),
        )
        .with_detail_errno(libc::EINVAL));
    }
    let mut j = 0;
    for s in wr.sgl.iter().filter(|s| s.length != 0) {
        slot[j * DS..(j + 1) * DS].copy_from_slice(&data_seg(s.length, s.lkey, s.addr));
        j += 1;
    }
    if j < max_gs {
        slot[j * DS..(j + 1) * DS].copy_from_slice(&data_seg(0, INVALID_LKEY, 0));
    }
    Ok(())
}

/// Read back the scatter list of a receive WQE (for inline-scattered CQEs): data segments up
/// to the terminator or the end of the slot.
pub fn recv_scatter(slot: &[u8]) -> impl Iterator<Item = Sge> + '_ {
    slot.chunks_exact(DS)
        .filter_map(|s| DataSeg::read_from_bytes(s).ok())
        .map(|d| Sge { length: d.byte_count.get(), lkey: d.lkey.get(), addr: d.addr.get() })
        .take_while(|s| s.lkey != INVALID_LKEY || s.length != 0)
}

/// RoCE address vector (`struct mlx5_wqe_av`, 48 bytes) for an address handle. `dmac` is the
/// peer MAC the kernel resolved (CREATE_AH response), `udp_sport` the RoCEv2 source port.
pub fn roce_av(attr: &uverbs::provider::AhAttr, dmac: [u8; 6], udp_sport: u16) -> [u8; 48] {
    let mut a = Av {
        // static rate 0 (port rate); RoCE carries SL in bits 1..3.
        stat_rate_sl: (attr.sl & 7) << 1,
        rlid: U16::new(udp_sport),
        rmac: dmac,
        ..Av::default()
    };
    if attr.is_global {
        a.tclass = attr.traffic_class;
        a.hop_limit = attr.hop_limit;
        // grh bit (30) stays clear for RoCE: the GRH is implied.
        a.grh_gid_fl = U32::new(((attr.sgid_index as u32) << 20) | (attr.flow_label & 0xf_ffff));
        a.rgid = attr.dgid;
    }
    zerocopy::transmute!(a)
}

/// RoCEv2 UDP source port from the flow label (`ibv_flow_label_to_udp_sport`), or from a
/// caller-supplied spread value when the flow label is 0.
pub fn roce_udp_sport(flow_label: u32, spread: u32) -> u16 {
    let fl = flow_label & 0xf_ffff;
    let v = if fl != 0 {
        (fl & 0x3fff) ^ ((fl & 0xf_c000) >> 14)
    } else {
        spread & 0x3fff
    };
    (v | 0xc000) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> SqParams {
        SqParams {
            qpn: 0xb1c,
            qp_type: QpType::Rc,
            max_send_sge: 2,
            max_inline: 124,
            max_wqe_bytes: 320,
            sig_all: false,
            dc_key: 0,
        }
    }

    #[test]
    fn rdma_write_matches_oracle_slot0() {
        let mut sq = vec![0u8; 128 * 64];
        let sg = [Sge {
            addr: 0x2_0000_0100,
            length: 64,
            lkey: 0x123442,
        }];
        let mut wr = SendWr::new(4096, WrOpcode::RdmaWrite, &sg);
        wr.flags = SendFlags::SIGNALED;
        wr.remote.addr = 0x7f00_1234_0000;
        wr.remote.rkey = 0xabcd;
        let b = build_send(&mut sq, 0, &params(), &wr, None, |_, _| unreachable!()).unwrap();
        assert_eq!(b.ds, 3);
        assert_eq!(b.wqebbs, 1);
        let hex: String = sq[..48].iter().map(|x| format!("{x:02x}")).collect();
        assert_eq!(hex, "00000008000b1c03000000080000000000007f00123400000000abcd0000000000000040001234420000000200000100");
    }

    #[test]
    fn fast_path_writes_the_generic_path_bytes() {
        let sg = [Sge { addr: 0x2_0000_0100, length: 64, lkey: 0x123442 }];
        let empty = [Sge { addr: 0x2_0000_0100, length: 0, lkey: 0x123442 }];
        let two = [sg[0], sg[0]];
        let ops = [
            WrOpcode::RdmaWrite,
            WrOpcode::RdmaWriteWithImm,
            WrOpcode::RdmaRead,
            WrOpcode::Send,
            WrOpcode::SendWithImm,
            WrOpcode::AtomicCmpAndSwp,
            WrOpcode::AtomicFetchAndAdd,
        ];
        let flag_sets = [
            SendFlags::empty(),
            SendFlags::SIGNALED,
            SendFlags::FENCE | SendFlags::SOLICITED,
            SendFlags::INLINE,
        ];
        let mut fast_taken = 0;
        for qp_type in [QpType::Rc, QpType::Uc, QpType::XrcIni] {
            for sig_all in [false, true] {
                let mut p = params();
                p.qp_type = qp_type;
                p.sig_all = sig_all;
                for sgl in [&sg[..], &empty[..], &two[..], &[][..]] {
                    for op in ops {
                        for flags in flag_sets {
                            for cur_post in [0u32, 3, 0x1_0005] {
                                let mut wr = SendWr::new(7, op, sgl);
                                wr.flags = flags;
                                wr.remote.addr = 0x7f00_1234_0000;
                                wr.remote.rkey = 0xabcd;
                                wr.imm_data = 0x1122_3344;
                                wr.swap = 5;
                                wr.compare_add = 6;
                                // stale bytes differ by position, so the block's tail is checked too
                                let mut a: Vec<u8> = (0..4 * 64).map(|i| (i * 7 + 3) as u8).collect();
                                let mut b = a.clone();
                                let fast = build_send_fast_block(&mut a, cur_post, &p, &wr);
                                let generic =
                                    build_send_generic(&mut b, cur_post, &p, &wr, None, |_, d| d.fill(0x3c));
                                if let Some((f, words)) = fast {
                                    fast_taken += 1;
                                    assert_eq!(Ok(f), generic.map_err(|e| e.to_string()), "{qp_type:?} {op:?} {flags:?}");
                                    assert_eq!(a, b, "{qp_type:?} {op:?} {flags:?} {cur_post}");
                                    // the BlueFlame source handed back is the block as it now is in the ring
                                    let at = (cur_post as usize & 3) * 64;
                                    let ring: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
                                    assert_eq!(ring, a[at..at + 64], "{qp_type:?} {op:?} {flags:?} {cur_post}");
                                    assert_eq!(f.ctrl_head, words[0]);
                                }
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(fast_taken, 2 * 5 * 3 * 3, "RC, one non-empty SGE, five opcodes, not inline");
        // A QP created with max_send_sge 0 refuses the SGE on both paths.
        let mut p = params();
        p.max_send_sge = 0;
        let wr = SendWr::new(1, WrOpcode::Send, &sg);
        let mut q = vec![0u8; 4 * 64];
        assert!(build_send_fast(&mut q, 0, &p, &wr).is_none());
        assert!(build_send(&mut q, 0, &p, &wr, None, |_, _| {}).is_err());
    }

    #[test]
    fn inline_wraps_and_splits() {
        let mut sq = vec![0u8; 4 * 64];
        let data: Vec<u8> = (0..60u8).collect();
        let sg = [Sge {
            addr: 1000,
            length: 60,
            lkey: 0,
        }];
        let mut wr = SendWr::new(1, WrOpcode::Send, &sg);
        wr.flags = SendFlags::INLINE;
        let b = build_send(&mut sq, 3, &params(), &wr, None, |a, d| {
            let o = (a - 1000) as usize;
            d.copy_from_slice(&data[o..o + d.len()]);
        })
        .unwrap();
        assert_eq!(b.ds, 5);
        assert_eq!(b.wqebbs, 2);
        assert!(b.inline);
        // slot 3: ctrl (16), inline header (4), 44 bytes; then 16 bytes at the ring start.
        assert_eq!(
            &sq[3 * 64 + 16..3 * 64 + 20],
            &(60u32 | INLINE_SEG).to_be_bytes()
        );
        assert_eq!(&sq[3 * 64 + 20..4 * 64], &data[..44]);
        assert_eq!(&sq[..16], &data[44..]);
    }

    #[test]
    fn refuses_bad_requests() {
        let mut sq = vec![0u8; 4 * 64];
        let sg = [Sge {
            addr: 0,
            length: 200,
            lkey: 0,
        }];
        let mut wr = SendWr::new(1, WrOpcode::Send, &sg);
        wr.flags = SendFlags::INLINE;
        assert!(build_send(&mut sq, 0, &params(), &wr, None, |_, _| {}).is_err());
        let sg3 = [Sge::default(); 3];
        let wr = SendWr::new(1, WrOpcode::Send, &sg3);
        assert!(build_send(&mut sq, 0, &params(), &wr, None, |_, _| {}).is_err());
        let mut ud = params();
        ud.qp_type = QpType::Ud;
        let wr = SendWr::new(1, WrOpcode::RdmaWrite, &[]);
        assert!(build_send(&mut sq, 0, &ud, &wr, None, |_, _| {}).is_err());
    }

    #[test]
    fn recv_terminator_and_readback() {
        let mut slot = [0xffu8; 32];
        let sg = [Sge {
            addr: 0x2_0000_8000,
            length: 512,
            lkey: 0x123442,
        }];
        build_recv(&mut slot, &RecvWr { wr_id: 0, sgl: &sg }).unwrap();
        let hex: String = slot.iter().map(|x| format!("{x:02x}")).collect();
        assert_eq!(
            hex,
            "0000020000123442000000020000800000000000000001000000000000000000"
        );
        assert_eq!(recv_scatter(&slot).collect::<Vec<_>>(), sg.to_vec());
    }

    #[test]
    fn udp_sport() {
        assert_eq!(roce_udp_sport(0, 5), 0xc005);
        assert_eq!(roce_udp_sport(0x1_0001, 0), 0xc000 | (1 ^ 4));
    }
    fn dci_params() -> SqParams {
        SqParams {
            qpn: 0xb1c,
            qp_type: QpType::Dci,
            max_send_sge: 2,
            max_inline: 60,
            max_wqe_bytes: 320,
            sig_all: false,
            dc_key: 0xffee_ddcc,
        }
    }

    fn test_av() -> [u8; 48] {
        let attr = uverbs::provider::AhAttr {
            dgid: [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 2, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55],
            sgid_index: 1,
            hop_limit: 64,
            is_global: true,
            port_num: 1,
            ..Default::default()
        };
        roce_av(&attr, [2, 0x11, 0x22, 0x33, 0x44, 0x55], 0xc123)
    }

    #[test]
    fn dci_write_is_ctrl_datagram_raddr_data() {
        let av = test_av();
        let mut sq = vec![0u8; 8 * 64];
        let sg = [Sge { addr: 0x2_0000_0100, length: 64, lkey: 0x123442 }];
        let mut wr = SendWr::new(9, WrOpcode::RdmaWrite, &sg);
        wr.flags = SendFlags::SIGNALED;
        wr.remote.addr = 0x7f00_1234_0000;
        wr.remote.rkey = 0xabcd;
        wr.ud = Some(uverbs::wr::UdDest { ah: 0, remote_qpn: 0x1a_2b3c, remote_qkey: 0 });
        let b = build_send(&mut sq, 0, &dci_params(), &wr, Some(&av), |_, _| unreachable!()).unwrap();
        assert_eq!((b.ds, b.wqebbs), (6, 2), "ctrl + 48-byte datagram + raddr + one data segment");
        let hex = |r: &[u8]| r.iter().map(|x| format!("{x:02x}")).collect::<String>();
        assert_eq!(hex(&sq[..16]), "00000008000b1c060000000800000000");
        // mlx5_wqe_av: key.dc_key (be64), dqp_dct = DCT number | MLX5_EXTENDED_UD_AV, then the AH's AV.
        assert_eq!(hex(&sq[16..28]), "00000000ffeeddcc801a2b3c");
        assert_eq!(&sq[28..64], &av[12..48]);
        assert_eq!(&sq[16..64], &dc_datagram_seg(&av, 0xffee_ddcc, 0x1a_2b3c)[..]);
        assert_eq!(hex(&sq[64..96]), "00007f00123400000000abcd000000000000004000123442000000020000" .to_string() + "0100");
        // Every RC opcode is allowed on a DCI; a send without a destination is not.
        let mut wr2 = SendWr::new(1, WrOpcode::AtomicFetchAndAdd, &sg);
        wr2.ud = wr.ud;
        wr2.compare_add = 5;
        let b = build_send(&mut sq, 2, &dci_params(), &wr2, Some(&av), |_, _| {}).unwrap();
        assert_eq!(b.ds, 7, "ctrl + datagram + raddr + atomic + data");
        assert_eq!(&sq[2 * 64 + 80..2 * 64 + 88], &5u64.to_be_bytes(), "atomic segment after raddr");
        let bare = SendWr::new(1, WrOpcode::Send, &sg);
        assert!(build_send(&mut sq, 0, &dci_params(), &bare, Some(&av), |_, _| {}).is_err());
        let mut dct = dci_params();
        dct.qp_type = QpType::Dct;
        assert!(build_send(&mut sq, 0, &dct, &wr, Some(&av), |_, _| {}).is_err(), "a DCT has no SQ");
    }

    #[test]
    fn dci_stream_goes_in_the_control_segment() {
        // libmlx5's mlx5_send_wr_set_dc_addr_stream: htobe16(stream_id) in
        // mlx5_wqe_ctrl_seg.dci_stream_channel_id (packed: bytes 9 and 10, after the signature
        // byte 8, before fm_ce_se at byte 11).
        let av = test_av();
        let mut sq = vec![0u8; 8 * 64];
        let sg = [Sge { addr: 0x2_0000_0100, length: 64, lkey: 0x123442 }];
        let mut wr = SendWr::new(9, WrOpcode::RdmaWrite, &sg);
        wr.flags = SendFlags::SIGNALED;
        wr.ud = Some(uverbs::wr::UdDest { ah: 0, remote_qpn: 0x1a_2b3c, remote_qkey: 0 });
        wr.dci_stream = 0x0102;
        build_send(&mut sq, 0, &dci_params(), &wr, Some(&av), |_, _| unreachable!()).unwrap();
        let hex = |r: &[u8]| r.iter().map(|x| format!("{x:02x}")).collect::<String>();
        assert_eq!(hex(&sq[..16]), "00000008000b1c060001020800000000");
        wr.dci_stream = 7;
        build_send(&mut sq, 2, &dci_params(), &wr, Some(&av), |_, _| unreachable!()).unwrap();
        assert_eq!(&sq[2 * 64 + 8..2 * 64 + 12], &[0, 0, 7, 0x08]);
        // Only a DCI has streams: an RC WQE keeps the bytes zero whatever the request says.
        let mut rc = dci_params();
        rc.qp_type = QpType::Rc;
        wr.ud = None;
        build_send(&mut sq, 4, &rc, &wr, None, |_, _| unreachable!()).unwrap();
        assert_eq!(&sq[4 * 64 + 8..4 * 64 + 12], &[0, 0, 0, 0x08]);
    }

    #[test]
    fn dci_wqe_wraps_after_the_datagram_segment() {
        let av = test_av();
        let mut sq = vec![0u8; 4 * 64];
        let sg = [Sge { addr: 0x3000, length: 8, lkey: 0x77 }];
        let mut wr = SendWr::new(1, WrOpcode::RdmaRead, &sg);
        wr.remote.rkey = 0x99;
        wr.remote.addr = 0x4000;
        wr.ud = Some(uverbs::wr::UdDest { ah: 0, remote_qpn: 0x55, remote_qkey: 0 });
        let b = build_send(&mut sq, 3, &dci_params(), &wr, Some(&av), |_, _| {}).unwrap();
        assert_eq!(b.ds, 6);
        assert_eq!(&sq[3 * 64 + 24..3 * 64 + 28], &(0x55u32 | EXTENDED_UD_AV).to_be_bytes());
        // The datagram segment fills slot 3; the remote address continues at the ring start.
        assert_eq!(&sq[0..8], &0x4000u64.to_be_bytes());
        assert_eq!(&sq[8..12], &0x99u32.to_be_bytes());
        assert_eq!(&sq[16..20], &8u32.to_be_bytes());
    }
}

