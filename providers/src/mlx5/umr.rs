//! The AES-XTS data path (perftest `--aes_xts`): the UMR ("user-mode memory registration") work
//! request that (re)configures a crypto memory key before each data request.
//!
//! One UMR WQE is what libmlx5's `mlx5dv_wr_mkey_configure(mkey, 3 setters)` +
//! `mlx5dv_wr_set_mkey_access_flags` + `mlx5dv_wr_set_mkey_layout_list` +
//! `mlx5dv_wr_set_mkey_crypto` (AES-XTS) build (rdma-core `providers/mlx5/qp.c`, identical in
//! v44.0 — Debian 12 — and the mirror's HEAD for every function used here; segment layouts from
//! `mlx5dv.h`, `wqe.h`, `mlx5_ifc.h`):
//!
//! | bytes     | segment                                                              |
//! |-----------|----------------------------------------------------------------------|
//! | 0..16     | control: opcode UMR (0x25), ds, fm_ce_se, the mkey's key in `imm`    |
//! | 16..64    | UMR control (`mlx5_wqe_umr_ctrl_seg`): INLINE flag, KLM and BSF octowords, mkey mask |
//! | 64..128   | mkey context (`mlx5_wqe_mkey_context_seg`): access, key variant, length, BSF enable |
//! | 128..     | the inline translation: one 16-byte entry per range (a data segment), zero-padded to 64 bytes |
//! | then 64   | the crypto BSF (`mlx5_crypto_bsf`): AES-XTS, order, data-unit size, tweak, DEK, key tag |
//!
//! With one range the WQE is 256 bytes: 16 DS, 4 basic blocks. Every segment after the first
//! basic block starts on a 64-byte boundary, so the WQE wraps at the SQ end between segments
//! (the control and UMR control segments share the first block).
//!
//! The pure functions here encode each segment; [`build_crypto_mkey_configure`] validates like
//! libmlx5 and writes the WQE into the SQ ring. No I/O and no unsafe.

use core::mem::size_of;

use uverbs::error::{Error, Result};
use zerocopy::byteorder::big_endian::{U16, U32, U64};
use uverbs::dv::CryptoAttr;
use uverbs::provider::QpType;
use uverbs::wr::Sge;

use super::hw::{CryptoBsf, MkeyContextSeg, UmrCtrlSeg};
use super::wqe::{ctrl_flags, ctrl_seg, data_seg, Built, SqParams, DS, WQEBB};

/// `MLX5_OPCODE_UMR`.
pub const OPCODE_UMR: u8 = 0x25;
/// `MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE`: libmlx5 puts it in the `fm_ce_se` of the work request
/// that follows a UMR on the same QP (`fm_cache`), so that request waits for the mkey update.
pub const INITIATOR_SMALL_FENCE: u8 = 0x20;

/// `MLX5_WQE_UMR_CTRL_FLAG_INLINE`: the translation entries are inline in the WQE.
pub const UMR_CTRL_FLAG_INLINE: u8 = 0x80;

/// `MLX5_WQE_UMR_CTRL_MKEY_MASK_*`: which mkey-context fields the UMR updates.
pub mod mkey_mask {
    pub const LEN: u64 = 1 << 0;
    pub const START_ADDR: u64 = 1 << 6;
    pub const BSF_ENABLE: u64 = 1 << 12;
    pub const MKEY: u64 = 1 << 13;
    pub const QPN: u64 = 1 << 14;
    pub const ACCESS_LOCAL_WRITE: u64 = 1 << 18;
    pub const ACCESS_REMOTE_READ: u64 = 1 << 19;
    pub const ACCESS_REMOTE_WRITE: u64 = 1 << 20;
    pub const ACCESS_ATOMIC: u64 = 1 << 21;
    pub const FREE: u64 = 1 << 29;
    /// The four access bits `mlx5_send_wr_set_mkey_access_flags` always sets together.
    pub const ACCESS: u64 = ACCESS_LOCAL_WRITE | ACCESS_REMOTE_READ | ACCESS_REMOTE_WRITE | ACCESS_ATOMIC;
}

/// `MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_*` (byte 2 of the mkey context).
pub mod mkc_access {
    pub const ATOMIC: u8 = 1 << 6;
    pub const REMOTE_WRITE: u8 = 1 << 5;
    pub const REMOTE_READ: u8 = 1 << 4;
    pub const LOCAL_WRITE: u8 = 1 << 3;
}

/// `MLX5_WQE_MKEY_CONTEXT_FLAGS_BSF_ENABLE` in the mkey context's `flags_pd`.
pub const MKC_FLAGS_BSF_ENABLE: u32 = 1 << 30;

/// `IBV_ACCESS_*` bits a UMR may grant (`check_comp_mask` in the access-flags setter).
pub mod ibv_access {
    pub const LOCAL_WRITE: u32 = 1 << 0;
    pub const REMOTE_WRITE: u32 = 1 << 1;
    pub const REMOTE_READ: u32 = 1 << 2;
    pub const REMOTE_ATOMIC: u32 = 1 << 3;
    pub const ALL: u32 = LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC;
}

/// `MLX5_BSF_SIZE_WITH_INLINE << MLX5_BSF_SIZE_SHIFT | MLX5_BSF_TYPE_CRYPTO`: a crypto BSF
/// without a signature BSF before it.
pub const CRYPTO_BSF_SIZE_TYPE: u8 = (2 << 6) | 1;
/// `MLX5_ENCRYPTION_STANDARD_AES_XTS`.
pub const ENCRYPTION_STANDARD_AES_XTS: u8 = 0;

/// `MLX5_ENCRYPTION_ORDER_*` (mlx5_ifc.h).
pub mod enc_order {
    pub const ENCRYPTED_WIRE_SIGNATURE: u8 = 0;
    pub const ENCRYPTED_MEMORY_SIGNATURE: u8 = 1;
    pub const ENCRYPTED_RAW_WIRE: u8 = 2;
    pub const ENCRYPTED_RAW_MEMORY: u8 = 3;
}

/// `MLX5DV_CRYPTO_ENGINES_CAP_*`: the device's AES-XTS engines (from QUERY_HCA_CAP:
/// `aes_xts_single_block_le_tweak` gives SINGLE_BLOCK, `aes_xts_multi_block_be_tweak` gives
/// SINGLE_BLOCK | MULTI_BLOCK). They decide the tweak's byte order in the BSF and whether a
/// mapping may exceed one data unit.
pub mod engines {
    pub const AES_XTS: u8 = 1 << 0;
    pub const SINGLE_BLOCK: u8 = 1 << 1;
    pub const MULTI_BLOCK: u8 = 1 << 2;
}

/// `MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_MKEY_UPDATE_TAG` in GET_CONTEXT's response `comp_mask`:
/// a UMR may change a key's variant byte (libmlx5's `MLX5_CTX_FLAGS_MKEY_UPDATE_TAG_SUPPORTED`).
pub const UCTX_RESP_MASK_MKEY_UPDATE_TAG: u32 = 1 << 5;

/// Field offsets of the UMR control and mkey context segments (checked against Debian's
/// installed `<infiniband/mlx5dv.h>` by tests/mlx5_umr_layout.rs).
pub mod off {
    use core::mem::offset_of;

    use super::super::hw::{MkeyContextSeg, UmrCtrlSeg};

    pub const UMR_FLAGS: usize = offset_of!(UmrCtrlSeg, flags);
    pub const UMR_KLM_OCTOWORDS: usize = offset_of!(UmrCtrlSeg, klm_octowords);
    pub const UMR_BSF_OCTOWORDS: usize = offset_of!(UmrCtrlSeg, bsf_octowords);
    pub const UMR_MKEY_MASK: usize = offset_of!(UmrCtrlSeg, mkey_mask);
    pub const MKC_FREE: usize = offset_of!(MkeyContextSeg, free);
    pub const MKC_ACCESS_FLAGS: usize = offset_of!(MkeyContextSeg, access_flags);
    pub const MKC_QPN_MKEY: usize = offset_of!(MkeyContextSeg, qpn_mkey);
    pub const MKC_FLAGS_PD: usize = offset_of!(MkeyContextSeg, flags_pd);
    pub const MKC_START_ADDR: usize = offset_of!(MkeyContextSeg, start_addr);
    pub const MKC_LEN: usize = offset_of!(MkeyContextSeg, len);
}

/// Sizes of the fixed segments.
pub const UMR_CTRL_LEN: usize = size_of::<UmrCtrlSeg>();
pub const MKEY_CTX_LEN: usize = size_of::<MkeyContextSeg>();
pub const CRYPTO_BSF_LEN: usize = size_of::<CryptoBsf>();

/// The BSF's block-size selector for an AES-XTS data-unit size in bytes (`bs_to_bs_selector`:
/// 512 → 1, 520 → 2, 4048 → 6, 4096 → 3, 4160 → 4); `None` for any other size.
pub fn data_unit_selector(bytes: u32) -> Option<u8> {
    match bytes {
        512 => Some(1),
        520 => Some(2),
        4048 => Some(6),
        4096 => Some(3),
        4160 => Some(4),
        _ => None,
    }
}

/// The BSF encryption order (`get_crypto_order`, no signature block configured).
pub fn encryption_order(encrypt_on_tx: bool, signature_before_crypto_on_tx: bool) -> u8 {
    match (encrypt_on_tx, signature_before_crypto_on_tx) {
        (true, false) => enc_order::ENCRYPTED_RAW_WIRE,
        (true, true) => enc_order::ENCRYPTED_WIRE_SIGNATURE,
        (false, false) => enc_order::ENCRYPTED_MEMORY_SIGNATURE,
        (false, true) => enc_order::ENCRYPTED_RAW_MEMORY,
    }
}

/// `get_umr_mr_flags`: `IBV_ACCESS_*` bits to the mkey context's access byte.
pub fn mkc_access_flags(access: u32) -> u8 {
    let mut f = 0;
    if access & ibv_access::REMOTE_ATOMIC != 0 {
        f |= mkc_access::ATOMIC;
    }
    if access & ibv_access::REMOTE_WRITE != 0 {
        f |= mkc_access::REMOTE_WRITE;
    }
    if access & ibv_access::REMOTE_READ != 0 {
        f |= mkc_access::REMOTE_READ;
    }
    if access & ibv_access::LOCAL_WRITE != 0 {
        f |= mkc_access::LOCAL_WRITE;
    }
    f
}

/// The mkey mask of a configure + access + layout + crypto UMR: FREE (the mkey becomes
/// usable: the context's free bit is written as 0), MKEY (the key's variant byte), the four
/// access bits, LEN, and BSF_ENABLE.
pub const CRYPTO_CONFIGURE_MASK: u64 =
    mkey_mask::FREE | mkey_mask::MKEY | mkey_mask::ACCESS | mkey_mask::LEN | mkey_mask::BSF_ENABLE;

/// UMR control segment (`struct mlx5_wqe_umr_ctrl_seg`, 48 bytes).
pub fn umr_ctrl_seg(flags: u8, klm_octowords: u16, bsf_octowords: u16, mask: u64) -> [u8; UMR_CTRL_LEN] {
    zerocopy::transmute!(UmrCtrlSeg {
        flags,
        klm_octowords: U16::new(klm_octowords),
        bsf_octowords: U16::new(bsf_octowords),
        mkey_mask: U64::new(mask),
        ..UmrCtrlSeg::default()
    })
}

/// Mkey context segment (`struct mlx5_wqe_mkey_context_seg`, 64 bytes) as the configure UMR
/// writes it: free = 0, the access byte, `qpn_mkey` = 0xffffff (no QP) with the key's variant
/// byte, `flags_pd` = BSF enable only (the PD is not in the mask), start address 0, the
/// length of the mapping; everything else 0.
pub fn mkey_context_seg(access: u32, mkey_lkey: u32, len: u64, bsf_enable: bool) -> [u8; MKEY_CTX_LEN] {
    zerocopy::transmute!(MkeyContextSeg {
        free: 0,
        access_flags: mkc_access_flags(access),
        qpn_mkey: U32::new(0xffff_ff00 | (mkey_lkey & 0xff)),
        flags_pd: U32::new(if bsf_enable { MKC_FLAGS_BSF_ENABLE } else { 0 }),
        // start_addr stays 0: the mkey's address 0 is the first range.
        len: U64::new(len),
        ..MkeyContextSeg::default()
    })
}

/// The inline translation list (`umr_sg_list_create`): one data segment per range, then zero
/// entries up to a multiple of four (64 bytes). Returns the bytes and the mapping's length.
pub fn klm_list(sgl: &[Sge]) -> (Vec<u8>, u64) {
    let mut v = Vec::with_capacity(sgl.len().div_ceil(4) * 64);
    let mut len = 0u64;
    for s in sgl {
        v.extend_from_slice(&data_seg(s.length, s.lkey, s.addr));
        len += s.length as u64;
    }
    v.resize(sgl.len().div_ceil(4) * 64, 0);
    (v, len)
}

/// Crypto BSF (`struct mlx5_crypto_bsf`, 64 bytes; `mlx5_umr_fill_crypto_bsf` without a
/// signature block). `engines` is the device's [`engines`] mask: with MULTI_BLOCK the tweak is
/// stored byte-reversed (the device wants it big endian), otherwise as given.
/// `None` when the data-unit size has no selector.
pub fn crypto_bsf(attr: &CryptoAttr, dek_id: u32, engines: u8) -> Option<[u8; CRYPTO_BSF_LEN]> {
    let bs = data_unit_selector(attr.data_unit_size)?;
    let mut tweak = attr.initial_tweak;
    if engines & engines::MULTI_BLOCK != 0 {
        tweak.reverse();
    }
    Some(zerocopy::transmute!(CryptoBsf {
        size_type: CRYPTO_BSF_SIZE_TYPE,
        enc_order: encryption_order(attr.encrypt_on_tx, attr.signature_before_crypto_on_tx),
        enc_standard: ENCRYPTION_STANDARD_AES_XTS,
        raw_data_size: U32::new(u32::MAX),
        crypto_block_size_pointer: bs,
        xts_init_tweak: tweak,
        rsvd_dek_pointer: U32::new(dek_id & 0xff_ffff),
        keytag: attr.keytag,
        ..CryptoBsf::default()
    }))
}

/// What a crypto mkey-configure needs besides the QP.
#[derive(Clone, Copy, Debug)]
pub struct MkeyConfigure<'a> {
    /// The crypto mkey's key (lkey = rkey); its low byte is the variant the UMR writes.
    pub mkey_lkey: u32,
    /// The most entries the mkey was created for.
    pub max_entries: u16,
    /// The ranges the mkey maps, in order (its address 0 is the first range's start).
    pub sgl: &'a [Sge],
    /// `IBV_ACCESS_*` bits.
    pub access: u32,
    pub attr: &'a CryptoAttr,
    /// The DEK object's id.
    pub dek_id: u32,
    /// The device's [`engines`] mask (0: not known; then the tweak is stored as given and no
    /// single-block length limit applies, as in libmlx5 with no engine bits).
    pub engines: u8,
    /// The context may change the key's variant byte (`MLX5_CTX_FLAGS_MKEY_UPDATE_TAG_SUPPORTED`,
    /// from GET_CONTEXT's `comp_mask` bit `MKEY_UPDATE_TAG`).
    pub update_tag: bool,
    /// The `fm_ce_se` fence the previous WQE left for this one (libmlx5's `fm_cache`).
    pub fm_cache: u8,
}

fn err(errno: i32, detail: impl Into<String>) -> Error {
    let mut e = Error::msg("mlx5 post mkey configure", detail);
    e.errno = Some(errno);
    e
}

/// Check a configure against the QP and libmlx5's rules without touching the ring. Returns the
/// mapping's length.
pub fn check_crypto_mkey_configure(p: &SqParams, m: &MkeyConfigure<'_>) -> Result<u64> {
    if p.qp_type != QpType::Rc {
        return Err(err(
            libc::EOPNOTSUPP,
            format!("a UMR (mkey configure) needs an RC QP; this QP is {}", p.qp_type.name()),
        ));
    }
    if m.access & !ibv_access::ALL != 0 {
        return Err(err(
            libc::EINVAL,
            format!(
                "access flags {:#x}: a UMR grants only local write, remote write, remote read and remote atomic ({:#x})",
                m.access,
                ibv_access::ALL
            ),
        ));
    }
    if m.mkey_lkey & 0xff != 0 && !m.update_tag {
        return Err(err(
            libc::EOPNOTSUPP,
            format!(
                "mkey {:#x} has a variant byte and the device cannot update it (no MKEY_UPDATE_TAG)",
                m.mkey_lkey
            ),
        ));
    }
    // Inline room: libmlx5 bounds the translation by max_inline_data + the 4-byte inline header.
    let room = p.max_inline as usize + 4;
    let max_entries = (room / DS).min(m.max_entries as usize);
    if m.sgl.len() > max_entries {
        return Err(err(
            libc::ENOMEM,
            format!(
                "{} layout entries, the mkey allows {} (max_entries {}, inline room {} bytes)",
                m.sgl.len(),
                max_entries,
                m.max_entries,
                room
            ),
        ));
    }
    if data_unit_selector(m.attr.data_unit_size).is_none() {
        return Err(err(
            libc::EINVAL,
            format!(
                "AES-XTS data unit size {}: use 512, 520, 4048, 4096 or 4160",
                m.attr.data_unit_size
            ),
        ));
    }
    let xlat = m.sgl.len().div_ceil(4) * 64;
    if xlat + CRYPTO_BSF_LEN > room {
        return Err(err(
            libc::ENOMEM,
            format!(
                "the translation ({xlat} bytes) and the crypto BSF ({CRYPTO_BSF_LEN}) need {} inline bytes, the QP has {}",
                xlat + CRYPTO_BSF_LEN,
                room
            ),
        ));
    }
    let len: u64 = m.sgl.iter().map(|s| s.length as u64).sum();
    if len > u32::MAX as u64 {
        return Err(err(libc::EINVAL, format!("mapping of {len} bytes exceeds the BSF's 32-bit size")));
    }
    if m.engines & engines::SINGLE_BLOCK != 0
        && m.engines & engines::MULTI_BLOCK == 0
        && len > m.attr.data_unit_size as u64
    {
        return Err(err(
            libc::EINVAL,
            format!(
                "the device encrypts one data unit per mkey: {len} bytes exceed the data unit size {}",
                m.attr.data_unit_size
            ),
        ));
    }
    let bytes = crypto_wqe_len(m.sgl.len());
    if bytes / DS > super::wqe::MAX_DS as usize || bytes > p.max_wqe_bytes.max(64) as usize {
        return Err(err(
            libc::ENOMEM,
            format!("the UMR WQE needs {bytes} bytes, beyond the QP's WQE size {}", p.max_wqe_bytes),
        ));
    }
    Ok(len)
}

/// Size in bytes of a crypto configure WQE with `entries` ranges.
pub fn crypto_wqe_len(entries: usize) -> usize {
    16 + UMR_CTRL_LEN + MKEY_CTX_LEN + entries.div_ceil(4) * 64 + CRYPTO_BSF_LEN
}

/// The whole WQE, contiguous (as if the SQ did not wrap), for basic block `wqe_index`.
pub fn crypto_mkey_wqe(p: &SqParams, wqe_index: u16, m: &MkeyConfigure<'_>) -> Result<Vec<u8>> {
    let len = check_crypto_mkey_configure(p, m)?;
    let (klm, _) = klm_list(m.sgl);
    let bsf = crypto_bsf(m.attr, m.dek_id, m.engines)
        .ok_or_else(|| err(libc::EINVAL, "AES-XTS data unit size without a selector"))?;
    let total = crypto_wqe_len(m.sgl.len());
    let ds = (total / DS) as u8;
    let mut fm_ce_se = m.fm_cache;
    if p.sig_all {
        fm_ce_se |= ctrl_flags::CQ_UPDATE;
    }
    // imm = htobe32(mkey lkey): ctrl_seg stores its argument's memory bytes as-is.
    let imm_raw = u32::from_ne_bytes(m.mkey_lkey.to_be_bytes());
    let mut w = Vec::with_capacity(total);
    w.extend_from_slice(&ctrl_seg(wqe_index, OPCODE_UMR, p.qpn, ds, fm_ce_se, imm_raw));
    let klm_octowords = (klm.len() / DS) as u16;
    let bsf_octowords = (CRYPTO_BSF_LEN / DS) as u16;
    w.extend_from_slice(&umr_ctrl_seg(UMR_CTRL_FLAG_INLINE, klm_octowords, bsf_octowords, CRYPTO_CONFIGURE_MASK));
    w.extend_from_slice(&mkey_context_seg(m.access, m.mkey_lkey, len, true));
    w.extend_from_slice(&klm);
    w.extend_from_slice(&bsf);
    debug_assert_eq!(w.len(), total);
    Ok(w)
}

/// Validate and write a crypto mkey-configure UMR WQE into `sq` (the whole SQ ring, a power of
/// two of 64-byte blocks) at basic block `cur_post`, wrapping at the ring's end. Nothing is
/// written when the request is refused.
pub fn build_crypto_mkey_configure(
    sq: &mut [u8],
    cur_post: u32,
    p: &SqParams,
    m: &MkeyConfigure<'_>,
) -> Result<Built> {
    debug_assert!(sq.len().is_power_of_two() && sq.len() >= WQEBB);
    let w = crypto_mkey_wqe(p, cur_post as u16, m)?;
    let nbb = sq.len() / WQEBB;
    if w.len() > sq.len() {
        return Err(err(libc::ENOMEM, format!("the UMR WQE ({} bytes) is larger than the send queue", w.len())));
    }
    for (k, blk) in w.chunks(WQEBB).enumerate() {
        let slot = (cur_post as usize + k) & (nbb - 1);
        sq[slot * WQEBB..slot * WQEBB + blk.len()].copy_from_slice(blk);
    }
    let mut head = [0u8; 8];
    head.copy_from_slice(&w[..8]);
    Ok(Built {
        ds: (w.len() / DS) as u8,
        wqebbs: w.len().div_ceil(WQEBB) as u32,
        inline: true,
        ctrl_head: u64::from_ne_bytes(head),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    fn params() -> SqParams {
        SqParams {
            qpn: 0xb1c,
            qp_type: QpType::Rc,
            max_send_sge: 1,
            max_inline: 124,
            max_wqe_bytes: 320,
            sig_all: false,
            dc_key: 0,
        }
    }

    /// perftest's attributes: tweak 0..15, key tag 0, encrypt on transmit, signature after.
    fn perftest_attr(dus: u32) -> CryptoAttr {
        let mut tweak = [0u8; 16];
        for (i, t) in tweak.iter_mut().enumerate() {
            *t = i as u8;
        }
        CryptoAttr {
            encrypt_on_tx: true,
            signature_before_crypto_on_tx: false,
            initial_tweak: tweak,
            keytag: [0; 8],
            data_unit_size: dus,
        }
    }

    const RR_RW_LW: u32 = ibv_access::REMOTE_READ | ibv_access::REMOTE_WRITE | ibv_access::LOCAL_WRITE;

    #[test]
    fn selectors_and_orders_from_the_sources() {
        let got: Vec<_> = [512, 520, 4048, 4096, 4160, 1024, 0].iter().map(|&b| data_unit_selector(b)).collect();
        assert_eq!(got, [Some(1), Some(2), Some(6), Some(3), Some(4), None, None]);
        assert_eq!(encryption_order(true, false), 2, "encrypt on tx, signature after: RAW_WIRE");
        assert_eq!(encryption_order(true, true), 0, "encrypt on tx, signature before: ENCRYPTED_WIRE_SIGNATURE");
        assert_eq!(encryption_order(false, false), 1, "decrypt on tx, after: ENCRYPTED_MEMORY_SIGNATURE");
        assert_eq!(encryption_order(false, true), 3, "decrypt on tx, before: RAW_MEMORY");
        assert_eq!(mkc_access_flags(RR_RW_LW), 0x38);
        assert_eq!(mkc_access_flags(ibv_access::ALL), 0x78);
        assert_eq!(CRYPTO_CONFIGURE_MASK, 0x2000_0000 | 0x2000 | 0x3c_0000 | 1 | 0x1000);
    }

    #[test]
    fn umr_ctrl_segment_bytes() {
        let s = umr_ctrl_seg(UMR_CTRL_FLAG_INLINE, 4, 4, CRYPTO_CONFIGURE_MASK);
        // flags, 3 reserved, klm_octowords 4, bsf_octowords 4, mkey_mask be64, 32 reserved.
        assert_eq!(hex(&s[..16]), "800000000004000400000000203c3001");
        assert!(s[16..].iter().all(|&b| b == 0));
    }

    #[test]
    fn mkey_context_segment_bytes() {
        let s = mkey_context_seg(RR_RW_LW, 0x0012_3407, 0x1_0000, true);
        assert_eq!(hex(&s[..32]), "00003800ffffff070000000040000000" .to_string() + "00000000000000000000000000010000");
        assert!(s[32..].iter().all(|&b| b == 0), "bsf/translation sizes and page size stay 0");
        let s = mkey_context_seg(0, 0x100, 5, false);
        assert_eq!(hex(&s[..16]), "00000000ffffff000000000000000000");
    }

    #[test]
    fn klm_list_pads_to_four_entries() {
        let sg = [Sge { addr: 0x2_0000_0000, length: 65536, lkey: 0x123442 }];
        let (v, len) = klm_list(&sg);
        assert_eq!(len, 65536);
        assert_eq!(v.len(), 64);
        assert_eq!(hex(&v[..16]), "00010000001234420000000200000000");
        assert!(v[16..].iter().all(|&b| b == 0));
        let five = [sg[0]; 5];
        let (v, len) = klm_list(&five);
        assert_eq!((v.len(), len), (128, 5 * 65536));
        assert!(v[80..].iter().all(|&b| b == 0));
    }

    #[test]
    fn crypto_bsf_bytes_and_tweak_order() {
        let a = perftest_attr(4096);
        let b = crypto_bsf(&a, 0x00ab_cdef, engines::AES_XTS | engines::SINGLE_BLOCK).unwrap();
        assert_eq!(
            hex(&b),
            "81020000ffffffff0300000000000000".to_string()
                + "000102030405060708090a0b0c0d0e0f" // tweak as given (no multi-block engine)
                + "00abcdef000000000000000000000000" // dek id, rsvd, keytag 0
                + "00000000000000000000000000000000"
        );
        let b = crypto_bsf(&a, 0x12ab_cdef, engines::SINGLE_BLOCK | engines::MULTI_BLOCK).unwrap();
        assert_eq!(hex(&b[16..32]), "0f0e0d0c0b0a09080706050403020100", "multi-block: big-endian tweak");
        assert_eq!(hex(&b[32..36]), "00abcdef", "24-bit DEK id");
        let mut a2 = perftest_attr(512);
        a2.encrypt_on_tx = false;
        a2.signature_before_crypto_on_tx = true;
        a2.keytag = *b"KEYTAG01";
        let b = crypto_bsf(&a2, 1, 0).unwrap();
        assert_eq!((b[1], b[8]), (3, 1));
        assert_eq!(&b[40..48], b"KEYTAG01");
        assert!(crypto_bsf(&perftest_attr(1000), 1, 0).is_none());
    }

    fn conf<'a>(sgl: &'a [Sge], attr: &'a CryptoAttr) -> MkeyConfigure<'a> {
        MkeyConfigure {
            mkey_lkey: 0x0004_5600,
            max_entries: 1,
            sgl,
            access: RR_RW_LW,
            attr,
            dek_id: 0x77,
            engines: engines::AES_XTS | engines::SINGLE_BLOCK | engines::MULTI_BLOCK,
            update_tag: false,
            fm_cache: 0,
        }
    }

    #[test]
    fn whole_wqe_layout_for_perftest() {
        let attr = perftest_attr(4096);
        let sg = [Sge { addr: 0x2_0000_0000, length: 65536, lkey: 0x123442 }];
        let w = crypto_mkey_wqe(&params(), 5, &conf(&sg, &attr)).unwrap();
        assert_eq!(w.len(), 256);
        // ctrl: idx 5 << 8 | 0x25; qpn << 8 | ds 16; fm_ce_se 0 (unsignaled, no fence); imm = mkey.
        assert_eq!(hex(&w[..16]), "00000525000b1c100000000000045600");
        assert_eq!(&w[16..64], &umr_ctrl_seg(0x80, 4, 4, CRYPTO_CONFIGURE_MASK)[..]);
        assert_eq!(&w[64..128], &mkey_context_seg(RR_RW_LW, 0x45600, 65536, true)[..]);
        assert_eq!(&w[128..192], &klm_list(&sg).0[..]);
        assert_eq!(&w[192..256], &crypto_bsf(&attr, 0x77, conf(&sg, &attr).engines).unwrap()[..]);
        // sq_sig_all and a pending small fence show in fm_ce_se.
        let mut p = params();
        p.sig_all = true;
        let mut c = conf(&sg, &attr);
        c.fm_cache = INITIATOR_SMALL_FENCE;
        let w = crypto_mkey_wqe(&p, 0, &c).unwrap();
        assert_eq!(w[11], 0x28);
    }

    #[test]
    fn refusals() {
        let attr = perftest_attr(4096);
        let sg = [Sge { addr: 0x1000, length: 4096, lkey: 1 }];
        let two = [sg[0]; 2];
        let p = params();
        let e = check_crypto_mkey_configure(&p, &conf(&two, &attr)).unwrap_err();
        assert_eq!(e.errno, Some(libc::ENOMEM), "2 entries on a 1-entry mkey");
        let mut c = conf(&sg, &attr);
        c.access = 0x10;
        assert_eq!(check_crypto_mkey_configure(&p, &c).unwrap_err().errno, Some(libc::EINVAL));
        let bad = perftest_attr(1024);
        assert_eq!(check_crypto_mkey_configure(&p, &conf(&sg, &bad)).unwrap_err().errno, Some(libc::EINVAL));
        let mut ud = params();
        ud.qp_type = QpType::Ud;
        assert_eq!(check_crypto_mkey_configure(&ud, &conf(&sg, &attr)).unwrap_err().errno, Some(libc::EOPNOTSUPP));
        let mut small = params();
        small.max_inline = 60;
        assert_eq!(check_crypto_mkey_configure(&small, &conf(&sg, &attr)).unwrap_err().errno, Some(libc::ENOMEM));
        let mut c = conf(&sg, &attr);
        c.mkey_lkey = 0x45607;
        assert_eq!(check_crypto_mkey_configure(&p, &c).unwrap_err().errno, Some(libc::EOPNOTSUPP));
        c.update_tag = true;
        assert!(check_crypto_mkey_configure(&p, &c).is_ok());
        // Single-block engine: the mapping must fit one data unit.
        let big = [Sge { addr: 0x1000, length: 8192, lkey: 1 }];
        let mut c = conf(&big, &attr);
        c.engines = engines::AES_XTS | engines::SINGLE_BLOCK;
        assert_eq!(check_crypto_mkey_configure(&p, &c).unwrap_err().errno, Some(libc::EINVAL));
        c.engines |= engines::MULTI_BLOCK;
        assert!(check_crypto_mkey_configure(&p, &c).is_ok());
    }

    #[test]
    fn wraps_at_the_sq_end_by_blocks() {
        let attr = perftest_attr(512);
        let sg = [Sge { addr: 0x1000, length: 512, lkey: 1 }];
        let c = conf(&sg, &attr);
        let mut sq = vec![0xa5u8; 8 * 64];
        let b = build_crypto_mkey_configure(&mut sq, 6, &params(), &c).unwrap();
        assert_eq!((b.ds, b.wqebbs, b.inline), (16, 4, true));
        let w = crypto_mkey_wqe(&params(), 6, &c).unwrap();
        assert_eq!(&sq[6 * 64..8 * 64], &w[..128], "ctrl+umr ctrl, mkey context in slots 6, 7");
        assert_eq!(&sq[..128], &w[128..], "translation and BSF continue at slot 0");
        assert!(sq[128..6 * 64].iter().all(|&x| x == 0xa5), "nothing else touched");
        assert_eq!(b.ctrl_head.to_ne_bytes(), w[..8]);
        // A refusal writes nothing.
        let mut sq2 = vec![0u8; 8 * 64];
        let two = [sg[0]; 2];
        assert!(build_crypto_mkey_configure(&mut sq2, 0, &params(), &conf(&two, &attr)).is_err());
        assert!(sq2.iter().all(|&x| x == 0));
        // A ring smaller than the WQE is refused.
        let mut tiny = vec![0u8; 2 * 64];
        let mut p = params();
        p.max_wqe_bytes = 512;
        assert!(build_crypto_mkey_configure(&mut tiny, 0, &p, &c).is_err());
    }

    #[test]
    fn rc_geometry_admits_the_umr_wqe() {
        // libmlx5's default RC overhead includes ctrl + UMR ctrl + mkey context + 64 bytes of
        // translation (geometry::sq_overhead = 192), and a crypto UMR needs max_inline_data >=
        // 124 (translation + BSF within max_inline + 4). So every RC QP that passes the inline
        // check has WQEs of at least 192 + 128 = 320 bytes, room for the 256-byte UMR WQE.
        use super::super::abi::UctxResp;
        use super::super::geometry::qp_geometry;
        use uverbs::provider::{QpCaps, QpInitAttr};
        let dev = UctxResp(uverbs::sys::mlx5::AllocUcontextResp { max_sq_desc_sz: 1024, max_rq_desc_sz: 512, max_send_wqebb: 32768, max_recv_wr: 32768, ..Default::default() });
        for max_inline_data in [124u32, 200, 512] {
            let attr = QpInitAttr {
                qp_type: QpType::Rc,
                caps: QpCaps { max_send_wr: 64, max_recv_wr: 0, max_send_sge: 1, max_recv_sge: 0, max_inline_data },
                sq_sig_all: false,
                uses_srq: true,
            };
            let g = qp_geometry(&dev, &attr).unwrap();
            assert!(g.max_inline + 4 >= 128);
            assert!(g.sq_wqe_size as usize >= crypto_wqe_len(1), "inline {max_inline_data}: WQE {}", g.sq_wqe_size);
        }
        assert_eq!(super::super::geometry::sq_overhead(QpType::Rc), 16 + 48 + 64 + 64);
    }
}
