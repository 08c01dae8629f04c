//! The device's own formats the provider writes and reads in memory the HCA shares: the send
//! WQE segments, the address vector and the 64-byte CQE, as `<infiniband/mlx5dv.h>` declares
//! them. One definition each, with big-endian fields typed as such (zerocopy's byte-order
//! types, alignment 1, so a `repr(C)` struct has the C layout of these packed formats);
//! sizes are checked here at compile time and against the installed header by
//! providers/tests/mlx5_hw_layout.rs. The kernel ABI (driver data of the verbs commands) is
//! `uverbs::sys::mlx5`; the UMR segments are `umr.rs`.

use core::mem::size_of;

use zerocopy::byteorder::big_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `struct mlx5_wqe_ctrl_seg` (16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct CtrlSeg {
    /// WQE index (bits 8..23) and opcode (bits 0..7); opmod in bits 24..31.
    pub opmod_idx_opcode: U32,
    /// QP number (bits 8..31) and the WQE size in 16-byte units (bits 0..5).
    pub qpn_ds: U32,
    pub signature: u8,
    /// DCI streams: the stream this request runs on.
    pub dci_stream_channel_id: U16,
    pub fm_ce_se: u8,
    /// Immediate data, already in network order as the application gives it: kept as bytes.
    pub imm: [u8; 4],
}

/// `struct mlx5_wqe_raddr_seg` (16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct RaddrSeg {
    pub raddr: U64,
    pub rkey: U32,
    pub reserved: U32,
}

/// `struct mlx5_wqe_atomic_seg` (16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct AtomicSeg {
    /// The swap value (compare-and-swap) or the addend (fetch-and-add).
    pub swap_add: U64,
    pub compare: U64,
}

/// `struct mlx5_wqe_data_seg` (16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct DataSeg {
    pub byte_count: U32,
    pub lkey: U32,
    pub addr: U64,
}

/// The XRC segment of an XRC initiator's send WQE (libmlx5's `struct mlx5_wqe_xrc_seg`, 16
/// bytes): the target SRQ number.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct XrcSeg {
    pub xrc_srqn: U32,
    pub reserved: [u8; 12],
}

/// `struct mlx5_wqe_av` (48 bytes), the address vector a UD or DC send carries in its
/// datagram segment (`struct mlx5_wqe_datagram_seg` is exactly one).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct Av {
    /// UD: the Q_Key in the high 32 bits (`key.qkey.qkey`, then a reserved word); DC: the
    /// 64-bit access key (`key.dc_key`).
    pub key: U64,
    /// Destination QP or DCT number (bits 0..23) with `MLX5_EXTENDED_UD_AV` (bit 31).
    pub dqp_dct: U32,
    pub stat_rate_sl: u8,
    pub fl_mlid: u8,
    /// IB: the remote LID; RoCE: the UDP source port.
    pub rlid: U16,
    pub reserved0: [u8; 4],
    pub rmac: [u8; 6],
    pub tclass: u8,
    pub hop_limit: u8,
    /// GRH flag (bit 30), SGID index (bits 20..27) and flow label (bits 0..19).
    pub grh_gid_fl: U32,
    pub rgid: [u8; 16],
}

/// `struct mlx5_cqe64`, the fields a completion reads (64 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct Cqe64 {
    pub rsvd0: [u8; 17],
    pub ml_path: u8,
    pub rsvd20: [u8; 4],
    pub slid: U16,
    pub flags_rqpn: U32,
    pub hds_ip_ext: u8,
    pub l4_hdr_type_etc: u8,
    pub vlan_info: U16,
    pub srqn_uidx: U32,
    pub imm_inval_pkey: U32,
    pub rsvd40: [u8; 4],
    pub byte_cnt: U32,
    pub timestamp: U64,
    pub sop_drop_qpn: U32,
    pub wqe_counter: U16,
    pub signature: u8,
    pub op_own: u8,
}

/// `struct mlx5_err_cqe`: the same 64 bytes when the opcode is an error (64 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct ErrCqe {
    pub rsvd0: [u8; 32],
    pub srqn: U32,
    pub rsvd1: [u8; 18],
    pub vendor_err_synd: u8,
    pub syndrome: u8,
    pub s_wqe_opcode_qpn: U32,
    pub wqe_counter: U16,
    pub signature: u8,
    pub op_own: u8,
}

const _: () = assert!(size_of::<CtrlSeg>() == 16 && size_of::<RaddrSeg>() == 16 && size_of::<AtomicSeg>() == 16);
const _: () = assert!(size_of::<DataSeg>() == 16 && size_of::<XrcSeg>() == 16 && size_of::<Av>() == 48);
const _: () = assert!(size_of::<Cqe64>() == 64 && size_of::<ErrCqe>() == 64);

/// `struct mlx5_wqe_umr_ctrl_seg` (48 bytes), the UMR control segment after a UMR WQE's
/// control segment.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct UmrCtrlSeg {
    pub flags: u8,
    pub rsvd0: [u8; 3],
    pub klm_octowords: U16,
    /// Shares its slot with `translation_offset`.
    pub bsf_octowords: U16,
    pub mkey_mask: U64,
    pub rsvd1: [u8; 32],
}

/// `struct mlx5_wqe_mkey_context_seg` (64 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct MkeyContextSeg {
    pub free: u8,
    pub reserved1: u8,
    pub access_flags: u8,
    pub sf: u8,
    pub qpn_mkey: U32,
    pub reserved2: U32,
    pub flags_pd: U32,
    pub start_addr: U64,
    pub len: U64,
    pub bsf_octword_size: U32,
    pub reserved3: [U32; 4],
    pub translations_octword_size: U32,
    pub reserved4: [u8; 3],
    pub log_page_size: u8,
    pub reserved: U32,
}

/// `struct mlx5_crypto_bsf` (64 bytes; rdma-core's private wqe.h, not installed: umr.rs's unit
/// tests check its bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct CryptoBsf {
    pub size_type: u8,
    pub enc_order: u8,
    pub rsvd0: u8,
    pub enc_standard: u8,
    pub raw_data_size: U32,
    pub crypto_block_size_pointer: u8,
    pub rsvd1: [u8; 7],
    pub xts_init_tweak: [u8; 16],
    /// The DEK id in bits 0..23.
    pub rsvd_dek_pointer: U32,
    pub rsvd2: [u8; 4],
    pub keytag: [u8; 8],
    pub rsvd3: [u8; 16],
}

const _: () = assert!(size_of::<UmrCtrlSeg>() == 48 && size_of::<MkeyContextSeg>() == 64 && size_of::<CryptoBsf>() == 64);
