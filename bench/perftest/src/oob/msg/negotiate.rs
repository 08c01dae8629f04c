//! The 6.28+ parameter-negotiation block and perftest's comparison of two of them.

use super::super::error::OobError;
use super::{AtomicType, ConnType, Verb, DEVICE_ATTR_LEN, NEGOTIATE_LEN, NEGOTIATE_LEN_NO_MLX5DV};

/// NEGOTIATE field names for the enum-valued fields, for mismatch messages.
const TEST_METHOD_NAMES: [&str; 3] = ["RUN_REGULAR", "RUN_ALL", "RUN_INFINITELY"];
const TST_NAMES: [&str; 4] = ["LAT", "BW", "LAT_BY_BW", "FS_RATE"];
const TEST_TYPE_NAMES: [&str; 2] = ["ITERATIONS", "DURATION"];
const REPORT_FMT_NAMES: [&str; 2] = ["GBS", "MBS"];
const ON_OFF: [&str; 2] = ["OFF", "ON"];

/// Whether the NEGOTIATE block carries the trailing mlx5dv comp_mask (320 vs 312 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NegotiateLayout {
    /// 320 bytes: builds with mlx5dv (the normal rdma-core build on x86-64 / aarch64).
    WithMlx5dv,
    /// 312 bytes.
    NoMlx5dv,
}

#[allow(clippy::len_without_is_empty)]
impl NegotiateLayout {
    pub fn len(self) -> usize {
        match self {
            NegotiateLayout::WithMlx5dv => NEGOTIATE_LEN,
            NegotiateLayout::NoMlx5dv => NEGOTIATE_LEN_NO_MLX5DV,
        }
    }
    pub fn from_len(len: usize) -> Option<Self> {
        match len {
            NEGOTIATE_LEN => Some(NegotiateLayout::WithMlx5dv),
            NEGOTIATE_LEN_NO_MLX5DV => Some(NegotiateLayout::NoMlx5dv),
            _ => None,
        }
    }
}

/// The parameter-negotiation block. Enum fields are kept as raw wire integers (a peer may send
/// values we do not know); use the `*_NAMES` tables or [`compare_negotiation`] to show them.
#[derive(Clone, Debug, PartialEq)]
pub struct Negotiate {
    /// 0 regular, 1 all (`-a`), 2 infinite.
    pub test_method: i32,
    pub connection_type: i32,
    pub verb: i32,
    /// 0 LAT, 1 BW.
    pub tst: i32,
    pub atomic_type: i32,
    /// 0 iterations, 1 duration.
    pub test_type: i32,
    /// 0 Gb/s, 1 MiB/s.
    pub report_fmt: i32,
    pub size: u64,
    pub iters: u64,
    pub aes_xts: i32,
    pub num_of_qps: i32,
    pub duration: i32,
    pub use_rdma_cm: i32,
    pub use_write_with_imm: i32,
    pub no_enhanced_reorder: i32,
    pub sig_offload: i32,
    pub data_validation: i32,
    /// Raw `struct ibv_device_attr` in the sender's host byte order.
    pub device_attr: [u8; DEVICE_ATTR_LEN],
    /// mlx5dv comp_mask (only in the 320-byte layout; 0 for non-Mellanox devices).
    pub mlx5dv_comp_mask: u64,
}

/// Offsets inside the raw `ibv_device_attr` blob.
pub const DEVICE_ATTR_VENDOR_ID_OFFSET: usize = 96;
pub const DEVICE_ATTR_VENDOR_PART_ID_OFFSET: usize = 100;
pub const DEVICE_ATTR_MAX_QP_RD_ATOM_OFFSET: usize = 144;

/// Build a device-attr blob holding only the fields peers look at (native byte order, like a
/// C peer on the same architecture would send).
pub fn device_attr_blob(vendor_id: u32, vendor_part_id: u32, max_qp_rd_atom: i32) -> [u8; DEVICE_ATTR_LEN] {
    let mut b = [0u8; DEVICE_ATTR_LEN];
    b[DEVICE_ATTR_VENDOR_ID_OFFSET..][..4].copy_from_slice(&vendor_id.to_ne_bytes());
    b[DEVICE_ATTR_VENDOR_PART_ID_OFFSET..][..4].copy_from_slice(&vendor_part_id.to_ne_bytes());
    b[DEVICE_ATTR_MAX_QP_RD_ATOM_OFFSET..][..4].copy_from_slice(&max_qp_rd_atom.to_ne_bytes());
    b
}

fn ne_i32(b: &[u8], off: usize) -> i32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[off..off + 4]);
    i32::from_ne_bytes(a)
}

impl Negotiate {
    /// The peer's `max_qp_rd_atom` (host-endian field of the device-attr blob).
    pub fn max_qp_rd_atom(&self) -> i32 {
        ne_i32(&self.device_attr, DEVICE_ATTR_MAX_QP_RD_ATOM_OFFSET)
    }
    /// The peer's vendor id.
    pub fn vendor_id(&self) -> u32 {
        ne_i32(&self.device_attr, DEVICE_ATTR_VENDOR_ID_OFFSET) as u32
    }

    /// Encode in perftest's layout (BE integers, raw device-attr blob).
    pub fn encode(&self, layout: NegotiateLayout) -> Vec<u8> {
        let mut b = Vec::with_capacity(layout.len());
        for v in [
            self.test_method,
            self.connection_type,
            self.verb,
            self.tst,
            self.atomic_type,
            self.test_type,
            self.report_fmt,
        ] {
            b.extend_from_slice(&v.to_be_bytes());
        }
        b.extend_from_slice(&[0u8; 4]); // padding before the u64 size
        b.extend_from_slice(&self.size.to_be_bytes());
        b.extend_from_slice(&self.iters.to_be_bytes());
        for v in [
            self.aes_xts,
            self.num_of_qps,
            self.duration,
            self.use_rdma_cm,
            self.use_write_with_imm,
            self.no_enhanced_reorder,
            self.sig_offload,
            self.data_validation,
        ] {
            b.extend_from_slice(&v.to_be_bytes());
        }
        b.extend_from_slice(&self.device_attr);
        if layout == NegotiateLayout::WithMlx5dv {
            b.extend_from_slice(&self.mlx5dv_comp_mask.to_be_bytes());
        }
        debug_assert_eq!(b.len(), layout.len());
        b
    }

    /// Decode a 312- or 320-byte block.
    pub fn decode(bytes: &[u8]) -> Result<Negotiate, OobError> {
        if NegotiateLayout::from_len(bytes.len()).is_none() {
            return Err(OobError::malformed(
                "the parameter negotiation",
                format!("got {} bytes, expected {NEGOTIATE_LEN} or {NEGOTIATE_LEN_NO_MLX5DV}", bytes.len()),
                "the peer's perftest build differs (mlx5dv or not); use the same build on both sides",
            ));
        }
        let be32 = |off: usize| {
            let mut a = [0u8; 4];
            a.copy_from_slice(&bytes[off..off + 4]);
            i32::from_be_bytes(a)
        };
        let be64 = |off: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&bytes[off..off + 8]);
            u64::from_be_bytes(a)
        };
        let mut device_attr = [0u8; DEVICE_ATTR_LEN];
        device_attr.copy_from_slice(&bytes[80..80 + DEVICE_ATTR_LEN]);
        Ok(Negotiate {
            test_method: be32(0),
            connection_type: be32(4),
            verb: be32(8),
            tst: be32(12),
            atomic_type: be32(16),
            test_type: be32(20),
            report_fmt: be32(24),
            size: be64(32),
            iters: be64(40),
            aes_xts: be32(48),
            num_of_qps: be32(52),
            duration: be32(56),
            use_rdma_cm: be32(60),
            use_write_with_imm: be32(64),
            no_enhanced_reorder: be32(68),
            sig_offload: be32(72),
            data_validation: be32(76),
            device_attr,
            mlx5dv_comp_mask: if bytes.len() == NEGOTIATE_LEN { be64(312) } else { 0 },
        })
    }
}

fn enum_name(table: &[&str], v: i32) -> String {
    usize::try_from(v).ok().and_then(|i| table.get(i)).map_or_else(|| format!("<unknown {v}>"), |s| s.to_string())
}

/// Compare the two NEGOTIATE blocks in perftest's order; the first difference is an
/// [`OobError::Mismatch`] whose `perftest_lines()` are C perftest's two stderr lines.
pub fn compare_negotiation(local: &Negotiate, remote: &Negotiate) -> Result<(), OobError> {
    type Row<'a> = (&'static str, i64, i64, Option<&'a [&'a str]>, &'static str);
    let rows: [Row; 17] = [
        (
            "test_method",
            local.test_method.into(),
            remote.test_method.into(),
            Some(&TEST_METHOD_NAMES),
            "-a / --run_infinitely",
        ),
        ("connection_type", local.connection_type.into(), remote.connection_type.into(), Some(&ConnType::NAMES), "-c"),
        (
            "verb",
            local.verb.into(),
            remote.verb.into(),
            Some(&Verb::NAMES),
            "tool (and --write_with_imm / --send_with_imm)",
        ),
        ("tst", local.tst.into(), remote.tst.into(), Some(&TST_NAMES), "tool (bw vs lat)"),
        ("atomicType", local.atomic_type.into(), remote.atomic_type.into(), Some(&AtomicType::NAMES), "-A"),
        ("test_type", local.test_type.into(), remote.test_type.into(), Some(&TEST_TYPE_NAMES), "-D / -n"),
        ("report_fmt", local.report_fmt.into(), remote.report_fmt.into(), Some(&REPORT_FMT_NAMES), "--report_gbits"),
        ("size", local.size as i64, remote.size as i64, None, "-s / -a"),
        ("iters", local.iters as i64, remote.iters as i64, None, "-n"),
        ("aes_xts", local.aes_xts.into(), remote.aes_xts.into(), Some(&ON_OFF), "--aes_xts"),
        ("num_of_qps", local.num_of_qps.into(), remote.num_of_qps.into(), None, "-q / -O"),
        ("duration", local.duration.into(), remote.duration.into(), None, "-D"),
        ("use_rdma_cm", local.use_rdma_cm.into(), remote.use_rdma_cm.into(), Some(&ON_OFF), "-R / -z"),
        (
            "use_write_with_imm",
            local.use_write_with_imm.into(),
            remote.use_write_with_imm.into(),
            Some(&ON_OFF),
            "--write_with_imm",
        ),
        (
            "no_enhanced_reorder",
            local.no_enhanced_reorder.into(),
            remote.no_enhanced_reorder.into(),
            Some(&ON_OFF),
            "--no_enhanced_reorder",
        ),
        ("sig_offload", local.sig_offload.into(), remote.sig_offload.into(), Some(&ON_OFF), "--sig_offload"),
        (
            "data_validation",
            local.data_validation.into(),
            remote.data_validation.into(),
            Some(&ON_OFF),
            "--data_validation",
        ),
    ];
    for (field, l, r, names, option) in rows {
        if l == r {
            continue;
        }
        let show = |v: i64| match names {
            Some(t) => enum_name(t, i32::try_from(v).unwrap_or(-1)),
            None => match field {
                // u64 fields: show unsigned like perftest's %lu
                "size" | "iters" => (v as u64).to_string(),
                _ => (v as i32 as u32 as u64).to_string(),
            },
        };
        return Err(OobError::Mismatch { field, local: show(l), remote: show(r), option });
    }
    Ok(())
}
