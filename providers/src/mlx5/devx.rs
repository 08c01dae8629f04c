//! mlx5 DEVX: PRM command mailboxes for the AES-XTS control path, and the ioctl calls that
//! carry them (`MLX5_IB_OBJECT_DEVX` / `MLX5_IB_OBJECT_DEVX_OBJ`).
//!
//! Every encoder is a pure function from parameters to the exact `cmd_in` bytes libmlx5 builds
//! (rdma-core v44 `providers/mlx5/verbs.c`, layouts from `providers/mlx5/mlx5_ifc.h`; the
//! fields used here are identical in v44.0 and rdma-core HEAD). Fields are written through
//! [`set_bits`], which follows `DEVX_SET`: PRM structures are big-endian, bit offset 0 is the
//! most significant bit of byte 0. Decoders read the device's `cmd_out` and never panic on
//! short or garbage input (missing bytes read as zero; status and lengths are checked).
//!
//! None of this has run against an mlx5 device or a DEVX-capable kernel: the bytes are checked
//! by hand against the `mlx5_ifc.h` offsets in the tests below.

use std::os::fd::AsFd;

use uverbs::cmd::{self, DriverMethod};
use uverbs::error::{Error, Result};
use uverbs::provider::SharedFd;

/// `RDMA_DRIVER_MLX5`, the driver id of every mlx5 ioctl.
pub use uverbs::sys::RDMA_DRIVER_MLX5 as DRIVER_ID;

// ---- ioctl ids (mlx5_user_ioctl_cmds.h; UVERBS_ID_NS_SHIFT = 12) ------------------------------

const NS: u16 = 1 << 12;
/// `MLX5_IB_OBJECT_DEVX`.
pub const OBJECT_DEVX: u16 = NS;
/// `MLX5_IB_OBJECT_DEVX_OBJ`.
pub const OBJECT_DEVX_OBJ: u16 = NS + 1;
/// `MLX5_IB_METHOD_DEVX_OTHER` (on `MLX5_IB_OBJECT_DEVX`).
pub const METHOD_DEVX_OTHER: u16 = NS;
/// `MLX5_IB_ATTR_DEVX_OTHER_CMD_IN` / `_CMD_OUT`.
pub const ATTR_DEVX_OTHER_CMD_IN: u16 = NS;
pub const ATTR_DEVX_OTHER_CMD_OUT: u16 = NS + 1;
/// `MLX5_IB_METHOD_DEVX_OBJ_CREATE` / `_DESTROY` (on `MLX5_IB_OBJECT_DEVX_OBJ`).
pub const METHOD_DEVX_OBJ_CREATE: u16 = NS;
pub const METHOD_DEVX_OBJ_DESTROY: u16 = NS + 1;
/// `MLX5_IB_ATTR_DEVX_OBJ_CREATE_HANDLE` / `_CMD_IN` / `_CMD_OUT`.
pub const ATTR_DEVX_OBJ_CREATE_HANDLE: u16 = NS;
pub const ATTR_DEVX_OBJ_CREATE_CMD_IN: u16 = NS + 1;
pub const ATTR_DEVX_OBJ_CREATE_CMD_OUT: u16 = NS + 2;
/// `MLX5_IB_ATTR_DEVX_OBJ_DESTROY_HANDLE`.
pub const ATTR_DEVX_OBJ_DESTROY_HANDLE: u16 = NS;

// ---- PRM constants (mlx5_ifc.h) ----------------------------------------------------------------

pub const CMD_OP_QUERY_HCA_CAP: u16 = 0x100;
pub const CMD_OP_CREATE_MKEY: u16 = 0x200;
pub const CMD_OP_DESTROY_MKEY: u16 = 0x202;
pub const CMD_OP_CREATE_GENERAL_OBJECT: u16 = 0xa00;
pub const CMD_OP_DESTROY_GENERAL_OBJECT: u16 = 0xa03;

/// `MLX5_OBJ_TYPE_DEK`.
pub const OBJ_TYPE_DEK: u16 = 0x000c;
/// `MLX5_OBJ_TYPE_CRYPTO_LOGIN`.
pub const OBJ_TYPE_CRYPTO_LOGIN: u16 = 0x001f;

/// `HCA_CAP_OPMOD_GET_CUR`.
pub const HCA_CAP_OPMOD_GET_CUR: u16 = 1;
/// `MLX5_SET_HCA_CAP_OP_MOD_GENERAL_DEVICE | HCA_CAP_OPMOD_GET_CUR`.
pub const OP_MOD_GENERAL_DEVICE_CUR: u16 = HCA_CAP_OPMOD_GET_CUR; // MLX5_SET_HCA_CAP_OP_MOD_GENERAL_DEVICE is 0
/// `MLX5_SET_HCA_CAP_OP_MOD_CRYPTO | HCA_CAP_OPMOD_GET_CUR`.
pub const OP_MOD_CRYPTO_CUR: u16 = (0x1a << 1) | HCA_CAP_OPMOD_GET_CUR;

/// `MLX5_CRYPTO_CAPS_WRAPPED_IMPORT_METHOD_AES` (a bit of `crypto_caps.wrapped_import_method`).
pub const WRAPPED_IMPORT_METHOD_AES: u8 = 0x4;
/// `MLX5_ENCRYPTION_KEY_OBJ_KEY_SIZE_SIZE_128` / `_256`.
pub const KEY_SIZE_128: u8 = 0x0;
pub const KEY_SIZE_256: u8 = 0x1;
/// `MLX5_ENCRYPTION_KEY_OBJ_KEY_PURPOSE_AES_XTS`.
pub const KEY_PURPOSE_AES_XTS: u8 = 0x3;
/// `MLX5_MKC_ACCESS_MODE_KLMS`.
pub const MKC_ACCESS_MODE_KLMS: u8 = 0x2;
/// `sizeof(struct mlx5_crypto_bsf)` (providers/mlx5/wqe.h): 64 bytes.
pub const CRYPTO_BSF_SIZE: u32 = 64;

// ---- mailbox sizes (DEVX_ST_SZ_BYTES) ----------------------------------------------------------

/// `query_hca_cap_in`.
pub const QUERY_HCA_CAP_IN_LEN: usize = 16;
/// `query_hca_cap_out`: header 0x80 bits + the 0x8000-bit capability union.
pub const QUERY_HCA_CAP_OUT_LEN: usize = 16 + 4096;
/// `create_crypto_login_obj_in` and `create_encryption_key_obj_in`: header + 0x800-bit object.
pub const CREATE_GENERAL_OBJ_IN_LEN: usize = 16 + 256;
/// `general_obj_out_cmd_hdr`.
pub const GENERAL_OBJ_OUT_LEN: usize = 16;
/// `create_mkey_in` (without the trailing `klm_pas_mtt[0]`): 0x880 bits.
pub const CREATE_MKEY_IN_LEN: usize = 272;
/// `create_mkey_out`.
pub const CREATE_MKEY_OUT_LEN: usize = 16;
/// `general_obj_in_cmd_hdr` (DESTROY_GENERAL_OBJECT's whole input) and `destroy_mkey_in`.
pub const DESTROY_IN_LEN: usize = 16;
/// The 48-byte login credential.
pub const CREDENTIAL_LEN: usize = 48;
/// `encryption_key_obj.key`: 32 dwords.
pub const DEK_KEY_FIELD_LEN: usize = 128;
/// A 128-bit AES-XTS key (two 128-bit keys) wrapped by the import KEK: 32 + 8 bytes.
pub const WRAPPED_AES_XTS_128_LEN: usize = 40;

// ---- bit fields --------------------------------------------------------------------------------

/// Write the `width`-bit `value` at PRM bit offset `bit` of `buf` (`DEVX_SET`): big-endian, bit 0
/// is the most significant bit of byte 0. Bits beyond `buf` are dropped; `value` is truncated to
/// `width` bits (`width` up to 64).
pub fn set_bits(buf: &mut [u8], bit: usize, width: usize, value: u64) {
    let width = width.min(64);
    for i in 0..width {
        let v = (value >> (width - 1 - i)) & 1;
        let p = bit + i;
        if let Some(b) = buf.get_mut(p / 8) {
            let mask = 0x80u8 >> (p % 8);
            if v == 1 {
                *b |= mask;
            } else {
                *b &= !mask;
            }
        }
    }
}

/// Read the `width`-bit field at PRM bit offset `bit` (`DEVX_GET`); bits beyond `buf` read as 0.
pub fn get_bits(buf: &[u8], bit: usize, width: usize) -> u64 {
    let width = width.min(64);
    let mut v = 0u64;
    for i in 0..width {
        let p = bit + i;
        let b = buf.get(p / 8).map_or(0, |b| (b >> (7 - p % 8)) & 1);
        v = (v << 1) | b as u64;
    }
    v
}

/// Copy `bytes` to byte offset `bit / 8` (`memcpy(DEVX_ADDR_OF(..))`), dropping what does not fit.
fn put_bytes(buf: &mut [u8], bit: usize, bytes: &[u8]) {
    let at = bit / 8;
    if at >= buf.len() {
        return;
    }
    let n = bytes.len().min(buf.len() - at);
    buf[at..at + n].copy_from_slice(&bytes[..n]);
}

/// PRM bit offsets (from `mlx5_ifc.h`, v44.0 = HEAD for these fields).
pub mod off {
    // general_obj_in_cmd_hdr
    pub const HDR_OPCODE: usize = 0x0;
    pub const HDR_OBJ_TYPE: usize = 0x30;
    pub const HDR_OBJ_ID: usize = 0x40;
    // query_hca_cap_in / create_mkey_in: op_mod
    pub const IN_OP_MOD: usize = 0x30;
    // *_out: status, syndrome
    pub const OUT_STATUS: usize = 0x0;
    pub const OUT_SYNDROME: usize = 0x20;
    // general_obj_out_cmd_hdr.obj_id
    pub const OUT_OBJ_ID: usize = 0x40;
    // create_mkey_out.mkey_index
    pub const OUT_MKEY_INDEX: usize = 0x48;
    // query_hca_cap_out.capability
    pub const CAPABILITY: usize = 0x80;
    // cmd_hca_cap (relative to capability)
    pub const CAP_HCA_CAP_2: usize = 0x20;
    pub const CAP_AES_XTS_SINGLE_BLOCK_LE_TWEAK: usize = 0x3f1;
    pub const CAP_AES_XTS_MULTI_BLOCK_BE_TWEAK: usize = 0x3f2;
    pub const CAP_GENERAL_OBJ_TYPES: usize = 0x400;
    pub const CAP_CRYPTO: usize = 0x469;
    // crypto_caps (relative to capability)
    pub const CC_WRAPPED_CRYPTO_OPERATIONAL: usize = 0x0;
    pub const CC_WRAPPED_CRYPTO_GOING_TO_COMMISSIONING: usize = 0x1;
    pub const CC_WRAPPED_IMPORT_METHOD: usize = 0x18;
    pub const CC_LOG_MAX_NUM_DEKS: usize = 0x2b;
    pub const CC_FAILED_SELFTESTS: usize = 0x40;
    // the object after general_obj_in_cmd_hdr
    pub const OBJ: usize = 0x80;
    // crypto_login_obj (relative to OBJ)
    pub const LOGIN_CREDENTIAL_POINTER: usize = 0x88;
    pub const LOGIN_SESSION_IMPORT_KEK_PTR: usize = 0xa8;
    pub const LOGIN_CREDENTIAL: usize = 0x200;
    // encryption_key_obj (relative to OBJ)
    pub const DEK_KEY_SIZE: usize = 0x54;
    pub const DEK_HAS_KEYTAG: usize = 0x58;
    pub const DEK_KEY_PURPOSE: usize = 0x5c;
    pub const DEK_PD: usize = 0x68;
    pub const DEK_OPAQUE: usize = 0x180;
    pub const DEK_KEY: usize = 0x200;
    // create_mkey_in.memory_key_mkey_entry, and mkc fields relative to it
    pub const MKEY_ENTRY: usize = 0x80;
    pub const MKC_FREE: usize = 0x1;
    pub const MKC_UMR_EN: usize = 0x10;
    pub const MKC_LR: usize = 0x15;
    pub const MKC_ACCESS_MODE_1_0: usize = 0x16;
    pub const MKC_QPN: usize = 0x20;
    pub const MKC_MKEY_7_0: usize = 0x38;
    pub const MKC_BSF_EN: usize = 0x61;
    pub const MKC_PD: usize = 0x68;
    pub const MKC_BSF_OCTWORD_SIZE: usize = 0x100;
    pub const MKC_TRANSLATIONS_OCTWORD_SIZE: usize = 0x1a0;
    pub const MKC_CRYPTO_EN: usize = 0x1e3;
    // destroy_mkey_in.mkey_index
    pub const DESTROY_MKEY_INDEX: usize = 0x48;
}

// ---- encoders ----------------------------------------------------------------------------------

/// QUERY_HCA_CAP with `op_mod` (e.g. [`OP_MOD_GENERAL_DEVICE_CUR`], [`OP_MOD_CRYPTO_CUR`]).
pub fn query_hca_cap_in(op_mod: u16) -> Vec<u8> {
    let mut b = vec![0u8; QUERY_HCA_CAP_IN_LEN];
    set_bits(&mut b, off::HDR_OPCODE, 16, CMD_OP_QUERY_HCA_CAP as u64);
    set_bits(&mut b, off::IN_OP_MOD, 16, op_mod as u64);
    b
}

fn general_obj_hdr(b: &mut [u8], opcode: u16, obj_type: u16) {
    set_bits(b, off::HDR_OPCODE, 16, opcode as u64);
    set_bits(b, off::HDR_OBJ_TYPE, 16, obj_type as u64);
}

/// CREATE_GENERAL_OBJECT of a crypto login object (`crypto_login_create`): the credential id
/// and import KEK id (24-bit pointers; `mlx5dv_crypto_login` callers such as perftest leave
/// both 0) and the 48-byte credential.
pub fn crypto_login_in(credential_id: u32, import_kek_id: u32, credential: &[u8; CREDENTIAL_LEN]) -> Vec<u8> {
    let mut b = vec![0u8; CREATE_GENERAL_OBJ_IN_LEN];
    general_obj_hdr(&mut b, CMD_OP_CREATE_GENERAL_OBJECT, OBJ_TYPE_CRYPTO_LOGIN);
    set_bits(&mut b, off::OBJ + off::LOGIN_CREDENTIAL_POINTER, 24, credential_id as u64);
    set_bits(&mut b, off::OBJ + off::LOGIN_SESSION_IMPORT_KEK_PTR, 24, import_kek_id as u64);
    put_bytes(&mut b, off::OBJ + off::LOGIN_CREDENTIAL, credential);
    b
}

/// What `mlx5dv_dek_create` puts in an AES-XTS DEK object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DekParams<'a> {
    /// [`KEY_SIZE_128`] or [`KEY_SIZE_256`].
    pub key_size: u8,
    pub has_keytag: bool,
    /// The PD number (`pdn`).
    pub pdn: u32,
    /// Caller data the device keeps with the key (perftest: `opaque[0] = 0x11`).
    pub opaque: [u8; 8],
    /// The wrapped key; libmlx5 copies the whole 128-byte `key` array, zero after the key.
    pub key: &'a [u8],
}

/// CREATE_GENERAL_OBJECT of an AES-XTS DEK (`_mlx5dv_dek_create`).
pub fn create_dek_in(p: &DekParams<'_>) -> Result<Vec<u8>> {
    if p.key.len() > DEK_KEY_FIELD_LEN {
        return Err(Error::msg("mlx5 create DEK", format!("a wrapped key of {} bytes, at most {DEK_KEY_FIELD_LEN}", p.key.len())));
    }
    if p.key_size > KEY_SIZE_256 {
        return Err(Error::msg("mlx5 create DEK", format!("key size code {}, expected 0 (128-bit) or 1 (256-bit)", p.key_size)));
    }
    let mut b = vec![0u8; CREATE_GENERAL_OBJ_IN_LEN];
    general_obj_hdr(&mut b, CMD_OP_CREATE_GENERAL_OBJECT, OBJ_TYPE_DEK);
    set_bits(&mut b, off::OBJ + off::DEK_KEY_SIZE, 4, p.key_size as u64);
    set_bits(&mut b, off::OBJ + off::DEK_HAS_KEYTAG, 1, p.has_keytag as u64);
    set_bits(&mut b, off::OBJ + off::DEK_KEY_PURPOSE, 4, KEY_PURPOSE_AES_XTS as u64);
    set_bits(&mut b, off::OBJ + off::DEK_PD, 24, p.pdn as u64);
    put_bytes(&mut b, off::OBJ + off::DEK_OPAQUE, &p.opaque);
    put_bytes(&mut b, off::OBJ + off::DEK_KEY, p.key);
    Ok(b)
}

/// libmlx5's descriptor count for an indirect mkey: `align(max_entries, 4)`.
pub fn mkey_num_desc(max_entries: u16) -> u32 {
    (max_entries as u32).div_ceil(4) * 4
}

/// CREATE_MKEY as `mlx5dv_create_mkey` builds it for an indirect mkey (with `crypto`: the
/// crypto flag too): free, UMR-enabled, KLM access mode, local read, `qpn` 0xffffff, variant
/// byte 0, `translations_octword_size` = [`mkey_num_desc`]; a crypto mkey also gets
/// `crypto_en` 1 and a BSF of `sizeof(mlx5_crypto_bsf) / 16` octwords.
pub fn create_mkey_in(pdn: u32, max_entries: u16, crypto: bool) -> Vec<u8> {
    let mut b = vec![0u8; CREATE_MKEY_IN_LEN];
    let m = off::MKEY_ENTRY;
    set_bits(&mut b, off::HDR_OPCODE, 16, CMD_OP_CREATE_MKEY as u64);
    set_bits(&mut b, m + off::MKC_ACCESS_MODE_1_0, 2, MKC_ACCESS_MODE_KLMS as u64);
    set_bits(&mut b, m + off::MKC_FREE, 1, 1);
    set_bits(&mut b, m + off::MKC_UMR_EN, 1, 1);
    set_bits(&mut b, m + off::MKC_PD, 24, pdn as u64);
    set_bits(&mut b, m + off::MKC_TRANSLATIONS_OCTWORD_SIZE, 32, mkey_num_desc(max_entries) as u64);
    set_bits(&mut b, m + off::MKC_LR, 1, 1);
    set_bits(&mut b, m + off::MKC_QPN, 24, 0xff_ffff);
    set_bits(&mut b, m + off::MKC_MKEY_7_0, 8, 0);
    if crypto {
        set_bits(&mut b, m + off::MKC_CRYPTO_EN, 2, 1);
        set_bits(&mut b, m + off::MKC_BSF_EN, 1, 1);
        set_bits(&mut b, m + off::MKC_BSF_OCTWORD_SIZE, 32, (CRYPTO_BSF_SIZE / 16) as u64);
    }
    b
}

/// DESTROY_GENERAL_OBJECT of object `obj_id` of type `obj_type`. (The kernel builds and runs
/// this itself when a DEVX object is destroyed; kept for models and golden comparisons.)
pub fn destroy_general_obj_in(obj_type: u16, obj_id: u32) -> Vec<u8> {
    let mut b = vec![0u8; DESTROY_IN_LEN];
    general_obj_hdr(&mut b, CMD_OP_DESTROY_GENERAL_OBJECT, obj_type);
    set_bits(&mut b, off::HDR_OBJ_ID, 32, obj_id as u64);
    b
}

/// DESTROY_MKEY of mkey index `mkey_index` (the kernel's own destroy command for a DEVX mkey).
pub fn destroy_mkey_in(mkey_index: u32) -> Vec<u8> {
    let mut b = vec![0u8; DESTROY_IN_LEN];
    set_bits(&mut b, off::HDR_OPCODE, 16, CMD_OP_DESTROY_MKEY as u64);
    set_bits(&mut b, off::DESTROY_MKEY_INDEX, 24, mkey_index as u64);
    b
}

// ---- decoders ----------------------------------------------------------------------------------

/// The name of a PRM command status (`MLX5_CMD_STAT_*`).
pub fn status_name(status: u8) -> &'static str {
    match status {
        0x0 => "OK",
        0x1 => "INT_ERR",
        0x2 => "BAD_OP_ERR",
        0x3 => "BAD_PARAM_ERR",
        0x4 => "BAD_SYS_STATE_ERR",
        0x5 => "BAD_RES_ERR",
        0x6 => "RES_BUSY",
        0x8 => "LIM_ERR",
        0x9 => "BAD_RES_STATE_ERR",
        0xa => "IX_ERR",
        0xf => "NO_RES_ERR",
        0x10 => "BAD_QP_STATE_ERR",
        0x30 => "BAD_PKT_ERR",
        0x40 => "BAD_SIZE_OUTS_CQES_ERR",
        0x50 => "BAD_INP_LEN_ERR",
        0x51 => "BAD_OUTP_LEN_ERR",
        _ => "unknown status",
    }
}

/// The errno libmlx5 turns a status into (`mlx5_cmd_status_to_err`).
pub fn status_errno(status: u8) -> i32 {
    match status {
        0x0 => 0,
        0x1 | 0x4 | 0x50 | 0x51 => libc::EIO,
        0x2 | 0x3 | 0x5 | 0x9 | 0xa | 0x10 | 0x30 | 0x40 => libc::EINVAL,
        0x6 => libc::EBUSY,
        0x8 => libc::ENOMEM,
        0xf => libc::EAGAIN,
        _ => libc::EIO,
    }
}

/// The status and syndrome of a command output (`mbox_out`), or `None` when it is shorter than
/// the 8 bytes that hold them.
pub fn out_status(out: &[u8]) -> Option<(u8, u32)> {
    (out.len() >= 8).then(|| (get_bits(out, off::OUT_STATUS, 8) as u8, get_bits(out, off::OUT_SYNDROME, 32) as u32))
}

/// Check a command output: a non-OK status becomes an error naming the command, the status
/// and the syndrome.
pub fn check_out(command: &str, out: &[u8]) -> Result<()> {
    match out_status(out) {
        None => Err(Error::msg(format!("mlx5 {command}"), format!("command output of {} bytes, shorter than its 8-byte header", out.len()))),
        Some((0, _)) => Ok(()),
        Some((st, syn)) => {
            let mut e = Error::msg(
                format!("mlx5 {command}"),
                format!("device status {} ({st:#x}), syndrome {syn:#010x}", status_name(st)),
            );
            e.errno = Some(status_errno(st));
            Err(e.with_hint("the device refused the command; the syndrome identifies why (see the firmware's PRM or `mlxfwreset`/`dmesg`)"))
        }
    }
}

/// The object id of a CREATE_GENERAL_OBJECT output (after [`check_out`]).
pub fn general_obj_out_id(command: &str, out: &[u8]) -> Result<u32> {
    check_out(command, out)?;
    if out.len() < GENERAL_OBJ_OUT_LEN {
        return Err(Error::msg(format!("mlx5 {command}"), format!("output of {} bytes, expected {GENERAL_OBJ_OUT_LEN}", out.len())));
    }
    Ok(get_bits(out, off::OUT_OBJ_ID, 32) as u32)
}

/// The mkey index of a CREATE_MKEY output (after [`check_out`]).
pub fn create_mkey_out_index(out: &[u8]) -> Result<u32> {
    check_out("CREATE_MKEY", out)?;
    if out.len() < CREATE_MKEY_OUT_LEN {
        return Err(Error::msg("mlx5 CREATE_MKEY", format!("output of {} bytes, expected {CREATE_MKEY_OUT_LEN}", out.len())));
    }
    Ok(get_bits(out, off::OUT_MKEY_INDEX, 24) as u32)
}

/// The key a work request names an mkey by: `mkey_index << 8 | variant` (libmlx5 uses variant 0).
pub fn mkey_key(mkey_index: u32, variant: u8) -> u32 {
    (mkey_index << 8) | variant as u32
}

/// What libmlx5 reads from the general-device capabilities for crypto (`get_hca_general_caps`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GeneralCaps {
    /// `cmd_hca_cap.crypto` (`MLX5DV_CRYPTO_CAPS_CRYPTO`).
    pub crypto: bool,
    /// `aes_xts_single_block_le_tweak`.
    pub aes_xts_single_block: bool,
    /// `aes_xts_multi_block_be_tweak` (implies single block too).
    pub aes_xts_multi_block: bool,
    /// `general_obj_types`: bit n set = general object type n supported.
    pub general_obj_types: u64,
}

impl GeneralCaps {
    /// libmlx5's `crypto_engines` has an AES-XTS engine.
    pub fn aes_xts(&self) -> bool {
        self.aes_xts_single_block || self.aes_xts_multi_block
    }
    /// libmlx5's `crypto_caps.crypto_engines` (`MLX5DV_CRYPTO_ENGINES_CAP_*`, the
    /// [`super::umr::engines`] bits) as `get_hca_general_caps` derives them: single-block
    /// little-endian tweak gives SINGLE_BLOCK, multi-block big-endian tweak gives SINGLE_BLOCK |
    /// MULTI_BLOCK (v44 never sets the plain AES_XTS bit).
    pub fn crypto_engines(&self) -> u8 {
        use super::umr::engines;
        let mut e = 0;
        if self.aes_xts_single_block {
            e |= engines::SINGLE_BLOCK;
        }
        if self.aes_xts_multi_block {
            e |= engines::SINGLE_BLOCK | engines::MULTI_BLOCK;
        }
        e
    }
    pub fn obj_type(&self, t: u16) -> bool {
        t < 64 && self.general_obj_types & (1u64 << t) != 0
    }
}

/// A QUERY_HCA_CAP output: the status checked and the whole capability present.
fn check_hca_cap_out(what: &str, out: &[u8]) -> Result<()> {
    check_out(what, out)?;
    if out.len() < QUERY_HCA_CAP_OUT_LEN {
        return Err(Error::msg(format!("mlx5 {what}"), format!("output of {} bytes, expected {QUERY_HCA_CAP_OUT_LEN}", out.len())));
    }
    Ok(())
}

/// Decode a QUERY_HCA_CAP (general device) output.
pub fn parse_general_caps(out: &[u8]) -> Result<GeneralCaps> {
    check_hca_cap_out("QUERY_HCA_CAP (general device)", out)?;
    let c = off::CAPABILITY;
    Ok(GeneralCaps {
        crypto: get_bits(out, c + off::CAP_CRYPTO, 1) == 1,
        aes_xts_single_block: get_bits(out, c + off::CAP_AES_XTS_SINGLE_BLOCK_LE_TWEAK, 1) == 1,
        aes_xts_multi_block: get_bits(out, c + off::CAP_AES_XTS_MULTI_BLOCK_BE_TWEAK, 1) == 1,
        general_obj_types: get_bits(out, c + off::CAP_GENERAL_OBJ_TYPES, 64),
    })
}

/// What libmlx5 reads from the crypto capabilities (`get_crypto_caps`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CryptoCaps {
    pub wrapped_crypto_operational: bool,
    pub wrapped_crypto_going_to_commissioning: bool,
    /// Bit mask; [`WRAPPED_IMPORT_METHOD_AES`] = wrapped AES-XTS DEK import.
    pub wrapped_import_method: u8,
    pub log_max_num_deks: u8,
    pub failed_selftests: u16,
}

impl CryptoCaps {
    /// libmlx5's `MLX5DV_CRYPTO_WRAPPED_IMPORT_METHOD_CAP_AES_XTS`.
    pub fn wrapped_aes_xts_import(&self) -> bool {
        self.wrapped_import_method & WRAPPED_IMPORT_METHOD_AES != 0
    }
}

/// Decode a QUERY_HCA_CAP (crypto) output.
pub fn parse_crypto_caps(out: &[u8]) -> Result<CryptoCaps> {
    check_hca_cap_out("QUERY_HCA_CAP (crypto)", out)?;
    let c = off::CAPABILITY;
    Ok(CryptoCaps {
        wrapped_crypto_operational: get_bits(out, c + off::CC_WRAPPED_CRYPTO_OPERATIONAL, 1) == 1,
        wrapped_crypto_going_to_commissioning: get_bits(out, c + off::CC_WRAPPED_CRYPTO_GOING_TO_COMMISSIONING, 1) == 1,
        wrapped_import_method: get_bits(out, c + off::CC_WRAPPED_IMPORT_METHOD, 8) as u8,
        log_max_num_deks: get_bits(out, c + off::CC_LOG_MAX_NUM_DEKS, 5) as u8,
        failed_selftests: get_bits(out, c + off::CC_FAILED_SELFTESTS, 16) as u16,
    })
}

// ---- ioctl calls -------------------------------------------------------------------------------

/// The error of a failed DEVX call: the device's status and syndrome when the kernel copied a
/// device refusal into the command output (`EREMOTEIO`), else the kernel's errno.
fn devx_error(command: &str, errno: i32, out: &[u8]) -> Error {
    // A device refusal: name the status and syndrome.
    if let Err(e) = check_out(command, out) {
        if out_status(out).is_some_and(|(st, _)| st != 0) {
            return e;
        }
    }
    let mut e = cmd::command_error(&format!("mlx5 {command} (DEVX)"), errno);
    if e.hint.is_none() && (errno == libc::EOPNOTSUPP || errno == libc::EPERM || errno == libc::EINVAL || errno == libc::ENOENT) {
        e = e.with_hint("DEVX needs an mlx5 device, a kernel with mlx5 DEVX and a context opened for DEVX");
    }
    e
}

/// Run a DEVX driver method that carries one command mailbox and return the new object handle
/// (when the method creates one) and the command output. A failed call becomes
/// [`devx_error`]; the output's own status is left to the caller.
fn devx_call(fd: &SharedFd, command: &str, m: &DriverMethod<'_>) -> Result<(Option<u32>, Vec<u8>)> {
    let r = cmd::driver_method(fd.as_fd(), DRIVER_ID, m)?;
    let out = r.outs.into_iter().next().unwrap_or_default();
    match r.errno {
        Some(errno) => Err(devx_error(command, errno, &out)),
        None => Ok((r.handle, out)),
    }
}

/// MLX5_IB_METHOD_DEVX_OTHER: run a general command (QUERY_HCA_CAP...) and return its checked
/// output.
pub fn general_cmd(fd: &SharedFd, command: &str, cmd_in: &[u8], out_len: usize) -> Result<Vec<u8>> {
    let m = DriverMethod {
        name: command,
        object: OBJECT_DEVX,
        method: METHOD_DEVX_OTHER,
        ins: vec![(ATTR_DEVX_OTHER_CMD_IN, cmd_in)],
        outs: vec![(ATTR_DEVX_OTHER_CMD_OUT, out_len)],
        ..Default::default()
    };
    let (_, out) = devx_call(fd, command, &m)?;
    check_out(command, &out)?;
    Ok(out)
}

/// A DEVX object (`MLX5_IB_OBJECT_DEVX_OBJ`) just created: its uobject handle and the command
/// output (already status-checked).
pub struct Created {
    pub handle: u32,
    pub out: Vec<u8>,
}

/// The MLX5_IB_METHOD_DEVX_OBJ_CREATE method for one command mailbox.
fn obj_create_method<'a>(name: &'a str, cmd_in: &'a [u8], out_len: usize) -> DriverMethod<'a> {
    DriverMethod {
        name,
        object: OBJECT_DEVX_OBJ,
        method: METHOD_DEVX_OBJ_CREATE,
        idr_new: Some(ATTR_DEVX_OBJ_CREATE_HANDLE),
        ins: vec![(ATTR_DEVX_OBJ_CREATE_CMD_IN, cmd_in)],
        outs: vec![(ATTR_DEVX_OBJ_CREATE_CMD_OUT, out_len)],
        ..Default::default()
    }
}

/// MLX5_IB_METHOD_DEVX_OBJ_CREATE.
pub fn obj_create(fd: &SharedFd, command: &str, cmd_in: &[u8], out_len: usize) -> Result<Created> {
    let (handle, out) = devx_call(fd, command, &obj_create_method(command, cmd_in, out_len))?;
    let handle = handle.ok_or_else(|| Error::msg(format!("mlx5 {command} (DEVX)"), "the kernel returned no object handle"))?;
    if let Err(e) = check_out(command, &out) {
        // Success with a failed status should not happen; do not leak the object.
        let _ = obj_destroy(fd, handle);
        return Err(e);
    }
    Ok(Created { handle, out })
}

/// MLX5_IB_METHOD_DEVX_OBJ_DESTROY: the kernel runs the object's destroy command.
pub fn obj_destroy(fd: &SharedFd, handle: u32) -> Result<()> {
    let m = DriverMethod {
        name: "DEVX_OBJ_DESTROY",
        object: OBJECT_DEVX_OBJ,
        method: METHOD_DEVX_OBJ_DESTROY,
        idr_in: Some((ATTR_DEVX_OBJ_DESTROY_HANDLE, handle)),
        ..Default::default()
    };
    let r = cmd::driver_method(fd.as_fd(), DRIVER_ID, &m)?;
    match r.errno {
        None => Ok(()),
        Some(e) => Err(cmd::command_error("mlx5 DEVX_OBJ_DESTROY", e)),
    }
}

/// The ioctl bytes of a DEVX_OBJ_CREATE with explicit buffer addresses (for byte comparisons).
pub fn encode_obj_create(cmd_in: &[u8], cmd_in_ptr: u64, cmd_out_ptr: u64, out_len: usize) -> Result<Vec<u8>> {
    cmd::encode_driver_method(DRIVER_ID, &obj_create_method("DEVX_OBJ_CREATE", cmd_in, out_len), &[cmd_in_ptr], &[cmd_out_ptr])
}

#[cfg(test)]
mod tests;
