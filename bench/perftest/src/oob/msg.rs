//! Pure encoders and decoders for every block perftest exchanges out of band.
//!
//! No I/O here. Every decoder takes untrusted bytes and returns [`OobError`] instead of
//! panicking; every encoder produces exactly the bytes C perftest writes for the same inputs.
//! Layouts: docs/perftest-wire.md, "Block layouts" (TCP) and "Binary key struct" (rdma_cm).

mod enums;
mod key;
mod negotiate;
mod report;
mod sysdata;
mod version;

pub use enums::{AtomicType, ConnType, Verb};
pub use key::{KeyFormat, KeyMsg};
pub use negotiate::{compare_negotiation, device_attr_blob, Negotiate, NegotiateLayout};
pub use negotiate::{DEVICE_ATTR_MAX_QP_RD_ATOM_OFFSET, DEVICE_ATTR_VENDOR_ID_OFFSET, DEVICE_ATTR_VENDOR_PART_ID_OFFSET};
pub use report::{BwReport, ReportField};
pub use sysdata::{decode_cache_line, decode_page_size, encode_i32, SysData, MAX_PEER_CACHE_LINE, MAX_PEER_PAGE_SIZE};
pub use version::{check_version, PeerVersion, OPTIONS_LEN, RPERFTEST_MARK};
pub use version::{decode_options, decode_version, encode_options, encode_version, encode_version_marked, option_differences};

use super::error::OobError;

/// Default TCP port of the exchange (perftest's; `-p` and the `-h` texts use it, as does
/// `rperftest doctor`).
pub const DEFAULT_PORT: u16 = 18515;
/// Version block: ASCII, NUL-padded.
pub const VERSION_LEN: usize = 16;
/// The version we advertise by default (HEAD perftest; talks to 5.92 … 6.29 over TCP).
pub const DEFAULT_VERSION: &str = "6.29";
/// Each of the two SYSDATA blocks (page size, cache line): BE i32.
pub const SYSDATA_LEN: usize = 4;
/// MTU block for peers ≥ 5.31: ASCII digit + NUL.
pub const MTU_LEN: usize = 2;
/// MTU block for peers 5.1 … 5.30.
pub const MTU_LEN_OLD: usize = 4;
/// NEGOTIATE block of a build with mlx5dv (the normal rdma-core build).
pub const NEGOTIATE_LEN: usize = 320;
/// NEGOTIATE block of a build without mlx5dv.
pub const NEGOTIATE_LEN_NO_MLX5DV: usize = 312;
/// Size of the raw `struct ibv_device_attr` inside NEGOTIATE.
pub const DEVICE_ATTR_LEN: usize = 232;
/// One REPORT block (u64 or double).
pub const REPORT_FIELD_LEN: usize = 8;
/// What both sides write just before close() (never read by the peer).
pub const DONE: &[u8; 5] = b"done\0";
/// rdma_cm-mode key struct size up to 6.28.
pub const CM_KEY_LEN_V606: usize = 56;
/// rdma_cm-mode key struct size from 6.29 (tail_markers_vaddr added).
pub const CM_KEY_LEN_V629: usize = 64;

const HINT_PROTO: &str = "is the peer perftest (or rperftest) started with the same tool and options?";


// ------------------------------------------------------------------------------------------------
// MTU
// ------------------------------------------------------------------------------------------------

/// `ibv_mtu` enum of a byte size (256 … 4096): the verbs layer's one mapping.
pub use uverbs::device::mtu_enum;

/// Bytes of an `ibv_mtu` enum value (1 → 256 … 5 → 4096; `None` otherwise).
pub fn mtu_bytes(mtu_enum: u8) -> Option<u32> {
    uverbs::attr::mtu_bytes(mtu_enum.into())
}

/// The MTU block: the enum as an ASCII digit, NUL-terminated, in `len` bytes (2, or 4 for
/// peers 5.1 … 5.30).
pub fn encode_mtu(mtu_enum: u8, len: usize) -> Result<Vec<u8>, OobError> {
    if !(1..=5).contains(&mtu_enum) || len < 2 {
        return Err(OobError::InvalidLocal {
            what: "MTU",
            detail: format!("enum {mtu_enum} (must be 1..=5) in {len} bytes"),
        });
    }
    let mut v = vec![0u8; len];
    v[0] = b'0' + mtu_enum;
    Ok(v)
}

/// Decode the peer's MTU block like perftest's `strtol`: `Ok(Some(enum))` for a valid enum
/// 1..=5, `Ok(None)` for a number outside it (perftest then keeps its own MTU), an error for
/// anything that is not a decimal number.
pub fn decode_mtu(bytes: &[u8]) -> Result<Option<u8>, OobError> {
    const STEP: &str = "the MTU exchange";
    let end = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
    let text = &bytes[..end];
    let digits: Vec<u8> = text.iter().copied().skip_while(|c| *c == b' ').collect();
    if digits.is_empty() || digits.len() > 9 || !digits.iter().all(u8::is_ascii_digit) {
        return Err(OobError::malformed(
            STEP,
            format!("MTU block is not a decimal number (hex {})", hex(bytes)),
            "both sides must exchange the same messages; is the peer running with --dont_xchg_versions?",
        ));
    }
    let n: u32 = digits.iter().fold(0u32, |a, d| a * 10 + u32::from(d - b'0'));
    Ok(u8::try_from(n).ok().filter(|e| (1..=5).contains(e)))
}

/// Effective MTU enum: the smaller of the two (remote only if valid).
pub fn effective_mtu(local: u8, remote: Option<u8>) -> u8 {
    match remote {
        Some(r) => local.min(r),
        None => local,
    }
}

// ------------------------------------------------------------------------------------------------
// helpers
// ------------------------------------------------------------------------------------------------

/// Lower-case hex of up to 64 bytes (longer input is cut with "…").
pub fn hex(b: &[u8]) -> String {
    let mut s: String = b.iter().take(64).map(|x| format!("{x:02x}")).collect();
    if b.len() > 64 {
        s.push('…');
    }
    s
}

/// Printable rendering of received bytes for error messages (escapes, at most 128 bytes).
pub fn show_text(b: &[u8]) -> String {
    let mut s = String::from("\"");
    for &c in b.iter().take(128) {
        match c {
            0 => s.push_str("\\0"),
            0x20..=0x7e if c != b'"' && c != b'\\' => s.push(c as char),
            _ => s.push_str(&format!("\\x{c:02x}")),
        }
    }
    if b.len() > 128 {
        s.push('…');
    }
    s.push('"');
    s
}
