//! Pure encoders and decoders for every block perftest exchanges out of band.
//!
//! No I/O here. Every decoder takes untrusted bytes and returns [`OobError`] instead of
//! panicking; every encoder produces exactly the bytes C perftest writes for the same inputs.
//! Layouts: docs/perftest-wire.md, "Block layouts" (TCP) and "Binary key struct" (rdma_cm).

use super::error::OobError;

/// Default TCP port of the exchange.
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
// Wire enums (docs/perftest-wire.md, "Wire enums")
// ------------------------------------------------------------------------------------------------

/// Connection type as perftest numbers it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConnType {
    Rc = 0,
    Uc = 1,
    Ud = 2,
    RawEth = 3,
    Xrc = 4,
    Dc = 5,
    Srd = 6,
}

impl ConnType {
    pub const NAMES: [&'static str; 7] = ["RC", "UC", "UD", "RawEth", "XRC", "DC", "SRD"];
    /// Header / JSON spelling (`RC`, `UD`, …).
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// Verb as perftest ≥ 6.20 numbers it (this numbering goes on the wire in NEGOTIATE).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verb {
    Send = 0,
    SendImm = 1,
    Write = 2,
    WriteImm = 3,
    Read = 4,
    Atomic = 5,
}

impl Verb {
    pub const NAMES: [&'static str; 6] = ["SEND", "SEND_IMM", "WRITE", "WRITE_IMM", "READ", "ATOMIC"];
    /// The test name printed in the header (`RDMA_Write`, `Send`, …).
    pub fn test_name(self) -> &'static str {
        match self {
            Verb::Send => "Send",
            Verb::SendImm => "Send_imm",
            Verb::Write => "RDMA_Write",
            Verb::WriteImm => "RDMA_Write_imm",
            Verb::Read => "RDMA_Read",
            Verb::Atomic => "Atomic",
        }
    }
    /// Latency is reported as RTT/2 for ping-pong verbs, as-is for read/atomic.
    pub fn rtt_factor(self) -> u32 {
        match self {
            Verb::Read | Verb::Atomic => 1,
            _ => 2,
        }
    }
}

/// Atomic operation (`-A`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicType {
    CmpAndSwap = 0,
    FetchAndAdd = 1,
}

impl AtomicType {
    pub const NAMES: [&'static str; 2] = ["CMP_AND_SWAP", "FETCH_AND_ADD"];
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// NEGOTIATE field names for the enum-valued fields, for mismatch messages.
const TEST_METHOD_NAMES: [&str; 3] = ["RUN_REGULAR", "RUN_ALL", "RUN_INFINITELY"];
const TST_NAMES: [&str; 4] = ["LAT", "BW", "LAT_BY_BW", "FS_RATE"];
const TEST_TYPE_NAMES: [&str; 2] = ["ITERATIONS", "DURATION"];
const REPORT_FMT_NAMES: [&str; 2] = ["GBS", "MBS"];
const ON_OFF: [&str; 2] = ["OFF", "ON"];

// ------------------------------------------------------------------------------------------------
// VERSION
// ------------------------------------------------------------------------------------------------

/// A perftest version string as received, with its `atof()` value (what every gate compares).
#[derive(Clone, Debug, PartialEq)]
pub struct PeerVersion {
    pub text: String,
    pub value: f64,
    /// The block carried [`RPERFTEST_MARK`] after its text: the peer is rperftest and takes
    /// part in the option exchange ([`OPTIONS_LEN`]).
    pub rperftest: bool,
}

impl PeerVersion {
    /// Parse like C `atof()`: the longest leading decimal number, 0.0 if there is none.
    pub fn from_text(text: &str) -> Self {
        PeerVersion { text: text.to_string(), value: atof(text), rperftest: false }
    }
    /// Every perftest ≥ 5.92 refuses peers older than 5.70.
    pub fn is_supported(&self) -> bool {
        self.value >= 5.70
    }
    /// Page size / cache line blocks are exchanged with peers ≥ 5.32.
    pub fn has_sysdata(&self) -> bool {
        self.value >= 5.32
    }
    /// Length of the MTU block the peer expects (None: not exchanged).
    pub fn mtu_len(&self) -> Option<usize> {
        if self.value >= 5.31 {
            Some(MTU_LEN)
        } else if self.value >= 5.1 {
            Some(MTU_LEN_OLD)
        } else {
            None
        }
    }
    /// Width of the iterations field of the report exchange.
    pub fn report_iters_len(&self) -> usize {
        if self.value >= 5.33 {
            8
        } else {
            4
        }
    }
    /// Whether NEGOTIATE is exchanged, given our own advertised version: 6.28 always sends it,
    /// 6.29 and later only to peers ≥ 6.28, older versions never.
    #[allow(clippy::approx_constant)] // 6.28 is a version number, not τ
    pub fn negotiates_with(&self, own: &PeerVersion) -> bool {
        if own.value == 6.28 || self.value == 6.28 {
            // 6.28 sends its block whatever the peer's version, and waits for one back.
            return true;
        }
        own.value >= 6.28 && self.value >= 6.28
    }
}

/// Where C's float scan (`atof`, `strtod`) finds its number in `s`: `(start, end)` byte offsets
/// of sign, digits, optional fraction and exponent, after the leading bytes `blank` accepts;
/// `None` when there is no digit. (qperf's option values share it, with a narrower blank.)
pub fn c_float_span(s: &str, blank: impl Fn(u8) -> bool) -> Option<(usize, usize)> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && blank(b[i]) {
        i += 1;
    }
    let start = i;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let mut digits = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
        digits += 1;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return None;
    }
    let mut end = i;
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        let exp_start = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > exp_start {
            end = j;
        }
    }
    Some((start, end))
}

/// C `atof()` on a string: leading blanks, sign, digits, optional fraction and exponent.
pub fn atof(s: &str) -> f64 {
    c_float_span(s, |c| c == b' ' || (b'\t'..=b'\r').contains(&c))
        .and_then(|(start, end)| s.get(start..end))
        .and_then(|t| t.parse::<f64>().ok())
        .unwrap_or(0.0)
}

/// Our version block: the text NUL-padded to 16 bytes (at most 15 characters).
pub fn encode_version(version: &str) -> Result<[u8; VERSION_LEN], OobError> {
    let b = version.as_bytes();
    if b.len() >= VERSION_LEN || b.contains(&0) {
        return Err(OobError::InvalidLocal {
            what: "version string",
            detail: format!("{version:?} must be 1 to 15 bytes without NUL"),
        });
    }
    let mut out = [0u8; VERSION_LEN];
    out[..b.len()].copy_from_slice(b);
    Ok(out)
}

/// What rperftest writes after its version text's NUL. perftest reads the block as a C string
/// (`atof`, `strncmp`), so the bytes after the NUL are invisible to it (6.06..6.29 alike),
/// while two rperftest sides learn that they can compare their options before any traffic.
pub const RPERFTEST_MARK: &[u8] = b"rperftest1";

/// Our version block with [`RPERFTEST_MARK`] after the text's NUL (where it fits).
pub fn encode_version_marked(version: &str) -> Result<[u8; VERSION_LEN], OobError> {
    let mut out = encode_version(version)?;
    let at = version.len() + 1;
    if at + RPERFTEST_MARK.len() < VERSION_LEN {
        out[at..at + RPERFTEST_MARK.len()].copy_from_slice(RPERFTEST_MARK);
    }
    Ok(out)
}

/// Length of the rperftest-only option block (two rperftest sides, right after the version
/// exchange): `label\tvalue\n` lines, NUL-padded.
pub const OPTIONS_LEN: usize = 256;

/// Encode option lines; labels and values must not contain tabs, newlines or NULs.
pub fn encode_options(opts: &[(&str, String)]) -> Result<Vec<u8>, OobError> {
    let mut v = Vec::with_capacity(OPTIONS_LEN);
    for (k, val) in opts {
        if [k.as_bytes(), val.as_bytes()].iter().any(|b| b.iter().any(|c| matches!(c, b'\t' | b'\n' | 0))) {
            return Err(OobError::InvalidLocal { what: "option block", detail: format!("{k:?}={val:?} has a tab, newline or NUL") });
        }
        v.extend_from_slice(format!("{k}\t{val}\n").as_bytes());
    }
    if v.len() >= OPTIONS_LEN {
        return Err(OobError::InvalidLocal { what: "option block", detail: format!("{} bytes, at most {}", v.len(), OPTIONS_LEN - 1) });
    }
    v.resize(OPTIONS_LEN, 0);
    Ok(v)
}

/// Decode a peer's option block into (label, value) pairs, in its order.
pub fn decode_options(bytes: &[u8]) -> Result<Vec<(String, String)>, OobError> {
    const STEP: &str = "the rperftest option exchange";
    let end = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
    let text = std::str::from_utf8(&bytes[..end])
        .ok()
        .filter(|t| t.bytes().all(|c| c == b'\t' || c == b'\n' || (0x20..0x7f).contains(&c)))
        .ok_or_else(|| OobError::malformed(STEP, format!("option block is not text: {}", show_text(&bytes[..end])), HINT_PROTO))?;
    let mut out: Vec<(String, String)> = Vec::new();
    for l in text.lines() {
        let (k, v) = l
            .split_once('\t')
            .ok_or_else(|| OobError::malformed(STEP, format!("option line {l:?} has no tab"), HINT_PROTO))?;
        if out.iter().any(|(seen, _)| seen == k) {
            return Err(OobError::malformed(STEP, format!("option {k:?} appears twice"), HINT_PROTO));
        }
        out.push((k.to_string(), v.to_string()));
    }
    Ok(out)
}

/// One line per option whose value differs (`-s: this side 4096, peer 65536`); options only
/// one side sends are not compared (another rperftest version may know more of them).
pub fn option_differences(mine: &[(&str, String)], theirs: &[(String, String)]) -> Vec<String> {
    mine.iter()
        .filter_map(|(k, v)| {
            let (_, r) = theirs.iter().find(|(rk, _)| rk == k)?;
            (r != v).then(|| format!("{k}: this side {v}, peer {r}"))
        })
        .collect()
}

/// Decode the peer's version block. Text stops at the first NUL; it must be printable ASCII.
pub fn decode_version(bytes: &[u8]) -> Result<PeerVersion, OobError> {
    const STEP: &str = "the version exchange";
    if bytes.len() != VERSION_LEN {
        return Err(OobError::malformed(
            STEP,
            format!("got {} bytes, expected {VERSION_LEN}", bytes.len()),
            HINT_PROTO,
        ));
    }
    let end = bytes.iter().position(|&c| c == 0).unwrap_or(VERSION_LEN);
    let text = &bytes[..end];
    if !text.iter().all(|c| (0x20..0x7f).contains(c)) {
        return Err(OobError::malformed(
            STEP,
            format!("version block is not text (hex {})", hex(bytes)),
            "the peer is not perftest, or it runs with --dont_xchg_versions / another protocol",
        ));
    }
    // Printable ASCII is valid UTF-8.
    let mark = bytes.get(end + 1..end + 1 + RPERFTEST_MARK.len()) == Some(RPERFTEST_MARK);
    let text = String::from_utf8_lossy(text).into_owned();
    Ok(PeerVersion { rperftest: mark, ..PeerVersion::from_text(&text) })
}

/// Reject peers older than 5.70, as every perftest ≥ 5.92 does.
pub fn check_version(peer: &PeerVersion) -> Result<(), OobError> {
    if peer.is_supported() {
        Ok(())
    } else {
        Err(OobError::IncompatibleVersion { peer: peer.text.clone() })
    }
}

// ------------------------------------------------------------------------------------------------
// SYSDATA
// ------------------------------------------------------------------------------------------------

/// The two SYSDATA values: cycle buffer (page size) and cache line size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SysData {
    pub page_size: i32,
    pub cache_line: i32,
}

/// Largest page size / cycle buffer we accept from a peer (it sizes our buffers).
pub const MAX_PEER_PAGE_SIZE: i32 = 1 << 30;
/// Largest cache line we accept from a peer.
pub const MAX_PEER_CACHE_LINE: i32 = 1 << 16;

impl SysData {
    /// Both sides use the maximum of local and remote values.
    pub fn merged(self, remote: SysData) -> SysData {
        SysData { page_size: self.page_size.max(remote.page_size), cache_line: self.cache_line.max(remote.cache_line) }
    }
}

/// One SYSDATA block: BE i32.
pub fn encode_i32(v: i32) -> [u8; SYSDATA_LEN] {
    v.to_be_bytes()
}

/// Decode the peer's page size block (positive, at most 1 GiB).
pub fn decode_page_size(bytes: &[u8]) -> Result<i32, OobError> {
    decode_sys_value(bytes, "the page size exchange", "page size", MAX_PEER_PAGE_SIZE)
}

/// Decode the peer's cache line block (positive, at most 64 KiB).
pub fn decode_cache_line(bytes: &[u8]) -> Result<i32, OobError> {
    decode_sys_value(bytes, "the cache line exchange", "cache line size", MAX_PEER_CACHE_LINE)
}

fn decode_sys_value(bytes: &[u8], step: &str, what: &str, max: i32) -> Result<i32, OobError> {
    let arr: [u8; 4] = bytes.try_into().map_err(|_| {
        OobError::malformed(step, format!("got {} bytes, expected {SYSDATA_LEN}", bytes.len()), HINT_PROTO)
    })?;
    let v = i32::from_be_bytes(arr);
    if v <= 0 || v > max {
        return Err(OobError::malformed(
            step,
            format!("peer {what} {v} (hex {}) is outside 1..={max}", hex(bytes)),
            HINT_PROTO,
        ));
    }
    Ok(v)
}

// ------------------------------------------------------------------------------------------------
// MTU
// ------------------------------------------------------------------------------------------------

/// Bytes of an `ibv_mtu` enum value (1 → 256 … 5 → 4096).
pub fn mtu_bytes(mtu_enum: u8) -> Option<u32> {
    (1..=5).contains(&mtu_enum).then(|| 1u32 << (7 + mtu_enum))
}

/// `ibv_mtu` enum of a byte size (256 … 4096).
pub fn mtu_enum(bytes: u32) -> Option<u8> {
    (1u8..=5).find(|&e| 1u32 << (7 + e) == bytes)
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
// NEGOTIATE (≥ 6.28)
// ------------------------------------------------------------------------------------------------

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

// ------------------------------------------------------------------------------------------------
// KEY messages (text form over TCP)
// ------------------------------------------------------------------------------------------------

/// Which text layout a key message uses; chosen from the *local* settings (GID index in use,
/// data validation). Both sides must agree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyFormat {
    /// 59 bytes: no GID (IB without `-x`).
    Short,
    /// 108 bytes: with GID (RoCE, or IB with `-x`).
    Gid,
    /// 76 bytes: short + tail_markers_vaddr (6.29 `--data_validation`).
    ShortDv,
    /// 125 bytes: GID + tail_markers_vaddr.
    GidDv,
}

#[allow(clippy::len_without_is_empty)]
impl KeyFormat {
    pub fn new(uses_gid: bool, data_validation: bool) -> Self {
        match (uses_gid, data_validation) {
            (false, false) => KeyFormat::Short,
            (true, false) => KeyFormat::Gid,
            (false, true) => KeyFormat::ShortDv,
            (true, true) => KeyFormat::GidDv,
        }
    }
    /// Block size including the terminating NUL.
    pub fn len(self) -> usize {
        match self {
            KeyFormat::Short => 59,
            KeyFormat::Gid => 108,
            KeyFormat::ShortDv => 76,
            KeyFormat::GidDv => 125,
        }
    }
    pub fn has_gid(self) -> bool {
        matches!(self, KeyFormat::Gid | KeyFormat::GidDv)
    }
    pub fn has_dv(self) -> bool {
        matches!(self, KeyFormat::ShortDv | KeyFormat::GidDv)
    }
    /// Number of `:`-separated fields (the GID forms end with an empty field after the trailing `:`).
    fn fields(self) -> usize {
        match self {
            KeyFormat::Short => 7,
            KeyFormat::ShortDv => 8,
            KeyFormat::Gid => 24,
            KeyFormat::GidDv => 25,
        }
    }
    fn from_len(len: usize) -> Option<Self> {
        [KeyFormat::Short, KeyFormat::Gid, KeyFormat::ShortDv, KeyFormat::GidDv].into_iter().find(|f| f.len() == len)
    }
}

/// One QP's connection data (`struct pingpong_dest` without the local-only gid_index).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct KeyMsg {
    pub lid: u16,
    /// Outstanding reads/atomics the sender's QP accepts (1 for write/send).
    pub out_reads: u16,
    /// 24-bit QP number.
    pub qpn: u32,
    /// 24-bit initial PSN.
    pub psn: u32,
    pub rkey: u32,
    pub vaddr: u64,
    /// Only carried by the data-validation formats (else 0).
    pub tail_markers_vaddr: u64,
    /// Raw GID bytes (network order); only carried by the GID formats (else zeros).
    pub gid: [u8; 16],
    pub srqn: u32,
}

impl KeyMsg {
    /// The NUL-terminated text block, byte-exact with perftest's `sprintf`.
    pub fn encode(&self, fmt: KeyFormat) -> Result<Vec<u8>, OobError> {
        if self.qpn > 0xff_ffff || self.psn > 0xff_ffff {
            return Err(OobError::InvalidLocal {
                what: "key message",
                detail: format!("QPN {:#x} / PSN {:#x} must fit in 24 bits", self.qpn, self.psn),
            });
        }
        let mut s = format!(
            "{:04x}:{:04x}:{:06x}:{:06x}:{:08x}:{:016x}",
            self.lid, self.out_reads, self.qpn, self.psn, self.rkey, self.vaddr
        );
        if fmt.has_dv() {
            s.push_str(&format!(":{:016x}", self.tail_markers_vaddr));
        }
        if fmt.has_gid() {
            for g in self.gid {
                s.push_str(&format!(":{g:02x}"));
            }
            s.push_str(&format!(":{:08x}:", self.srqn));
        } else {
            s.push_str(&format!(":{:08x}", self.srqn));
        }
        let mut v = s.into_bytes();
        v.push(0);
        debug_assert_eq!(v.len(), fmt.len());
        Ok(v)
    }

    /// Decode a key block that must be in format `fmt` (what our own settings imply).
    pub fn decode(bytes: &[u8], fmt: KeyFormat) -> Result<KeyMsg, OobError> {
        const STEP: &str = "the key exchange";
        let hint_fmt = "both sides must agree on the GID setting: use the same -x on both (RoCE always uses a GID)";
        if bytes.len() != fmt.len() {
            return Err(OobError::malformed(
                STEP,
                format!("got a {}-byte block, expected {} bytes", bytes.len(), fmt.len()),
                hint_fmt,
            ));
        }
        let Some(nul) = bytes.iter().position(|&c| c == 0) else {
            return Err(OobError::malformed(
                STEP,
                format!(
                    "{}-byte key block is not NUL-terminated (peer's record is longer): {}",
                    bytes.len(),
                    show_text(bytes)
                ),
                hint_fmt,
            ));
        };
        let text = &bytes[..nul];
        if nul != fmt.len() - 1 {
            // Tell a format disagreement apart from garbage.
            let looks_short = nul == KeyFormat::Short.len() - 1 || nul == KeyFormat::ShortDv.len() - 1;
            let detail = format!(
                "key text is {} characters, expected {}{}: {}",
                nul,
                fmt.len() - 1,
                if looks_short && fmt.has_gid() { " (peer sends keys without a GID)" } else { "" },
                show_text(text)
            );
            return Err(OobError::malformed(STEP, detail, hint_fmt));
        }
        let text = std::str::from_utf8(text).map_err(|_| {
            OobError::malformed(STEP, format!("key block is not ASCII: {}", show_text(bytes)), HINT_PROTO)
        })?;
        let parts: Vec<&str> = text.split(':').collect();
        if parts.len() != fmt.fields() {
            return Err(OobError::malformed(
                STEP,
                format!("key has {} ':'-separated fields, expected {}: {:?}", parts.len(), fmt.fields(), text),
                hint_fmt,
            ));
        }
        let field = |i: usize, name: &str, width: usize| -> Result<u64, OobError> {
            let p = parts[i];
            if p.is_empty() || p.len() > width || !p.bytes().all(|c| c.is_ascii_hexdigit()) {
                return Err(OobError::malformed(
                    STEP,
                    format!("key field {name} is {p:?}, expected up to {width} hex digits, in {text:?}"),
                    HINT_PROTO,
                ));
            }
            u64::from_str_radix(p, 16)
                .map_err(|_| OobError::malformed(STEP, format!("key field {name} {p:?} is not hex"), HINT_PROTO))
        };
        let mut k = KeyMsg {
            lid: field(0, "LID", 4)? as u16,
            out_reads: field(1, "out_reads", 4)? as u16,
            qpn: field(2, "QPN", 6)? as u32,
            psn: field(3, "PSN", 6)? as u32,
            rkey: field(4, "RKey", 8)? as u32,
            vaddr: field(5, "VAddr", 16)?,
            ..KeyMsg::default()
        };
        let mut i = 6;
        if fmt.has_dv() {
            k.tail_markers_vaddr = field(i, "tail_markers_vaddr", 16)?;
            i += 1;
        }
        if fmt.has_gid() {
            for g in 0..16 {
                k.gid[g] = field(i, "GID byte", 2)? as u8;
                i += 1;
            }
            k.srqn = field(i, "SRQN", 8)? as u32;
            i += 1;
            if !parts[i].is_empty() {
                return Err(OobError::malformed(STEP, format!("key has trailing data {:?}", parts[i]), HINT_PROTO));
            }
        } else {
            k.srqn = field(i, "SRQN", 8)? as u32;
        }
        Ok(k)
    }

    /// Guess the format of a complete key block from its length (for diagnostics and for
    /// accepting any peer format in tests).
    pub fn detect_format(bytes: &[u8]) -> Option<KeyFormat> {
        KeyFormat::from_len(bytes.len())
    }

    // --------------------------------------------------------------------------------------------
    // rdma_cm mode: raw struct pingpong_dest, integers big-endian
    // --------------------------------------------------------------------------------------------

    /// Binary key struct used over rdma_cm (`-z`/`-R`): 56 bytes (≤ 6.28) or 64 (6.29).
    pub fn encode_cm(&self, len: usize, gid_index: i32) -> Result<Vec<u8>, OobError> {
        if len != CM_KEY_LEN_V606 && len != CM_KEY_LEN_V629 {
            return Err(OobError::InvalidLocal {
                what: "rdma_cm key",
                detail: format!("length {len} is not 56 or 64"),
            });
        }
        let mut b = Vec::with_capacity(len);
        b.extend_from_slice(&u32::from(self.lid).to_be_bytes());
        b.extend_from_slice(&u32::from(self.out_reads).to_be_bytes());
        b.extend_from_slice(&self.qpn.to_be_bytes());
        b.extend_from_slice(&self.psn.to_be_bytes());
        b.extend_from_slice(&self.rkey.to_be_bytes());
        b.extend_from_slice(&[0u8; 4]);
        b.extend_from_slice(&self.vaddr.to_be_bytes());
        if len == CM_KEY_LEN_V629 {
            b.extend_from_slice(&self.tail_markers_vaddr.to_be_bytes());
        }
        b.extend_from_slice(&self.gid);
        b.extend_from_slice(&self.srqn.to_be_bytes());
        b.extend_from_slice(&gid_index.to_be_bytes());
        debug_assert_eq!(b.len(), len);
        Ok(b)
    }

    /// Decode a binary key struct of either size (the length tells the layout); returns the
    /// key and the peer's gid_index.
    pub fn decode_cm(bytes: &[u8]) -> Result<(KeyMsg, i32), OobError> {
        const STEP: &str = "the rdma_cm key exchange";
        let v629 = match bytes.len() {
            CM_KEY_LEN_V606 => false,
            CM_KEY_LEN_V629 => true,
            n => {
                return Err(OobError::malformed(
                    STEP,
                    format!("got {n} bytes, expected {CM_KEY_LEN_V606} (perftest ≤6.28) or {CM_KEY_LEN_V629} (6.29)"),
                    HINT_PROTO,
                ))
            }
        };
        let be32 = |off: usize| {
            let mut a = [0u8; 4];
            a.copy_from_slice(&bytes[off..off + 4]);
            u32::from_be_bytes(a)
        };
        let be64 = |off: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&bytes[off..off + 8]);
            u64::from_be_bytes(a)
        };
        let (lid, out_reads, qpn, psn) = (be32(0), be32(4), be32(8), be32(12));
        let bad = |what: &str, v: u32, max: u32| {
            OobError::malformed(STEP, format!("{what} {v:#x} exceeds {max:#x}"), HINT_PROTO)
        };
        if lid > 0xffff {
            return Err(bad("LID", lid, 0xffff));
        }
        if out_reads > 0xffff {
            return Err(bad("out_reads", out_reads, 0xffff));
        }
        if qpn > 0xff_ffff {
            return Err(bad("QPN", qpn, 0xff_ffff));
        }
        if psn > 0xff_ffff {
            return Err(bad("PSN", psn, 0xff_ffff));
        }
        let gid_off = if v629 { 40 } else { 32 };
        let mut gid = [0u8; 16];
        gid.copy_from_slice(&bytes[gid_off..gid_off + 16]);
        let k = KeyMsg {
            lid: lid as u16,
            out_reads: out_reads as u16,
            qpn,
            psn,
            rkey: be32(16),
            vaddr: be64(24),
            tail_markers_vaddr: if v629 { be64(32) } else { 0 },
            gid,
            srqn: be32(gid_off + 16),
        };
        Ok((k, be32(gid_off + 20) as i32))
    }
}

// ------------------------------------------------------------------------------------------------
// REPORT exchange
// ------------------------------------------------------------------------------------------------

/// One side's BW results as exchanged by `xchg_bw_reports` (values in the sender's unit): the
/// statistics' own result type.
pub use crate::stats::BwResult as BwReport;

/// The fields of the report exchange, in wire order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportField {
    Size,
    Iters,
    BwPeak,
    BwAvg,
    MsgRate,
    BwAvgP1,
    MsgRateP1,
    BwAvgP2,
    MsgRateP2,
}

impl ReportField {
    pub fn name(self) -> &'static str {
        match self {
            ReportField::Size => "size",
            ReportField::Iters => "iterations",
            ReportField::BwPeak => "BW peak",
            ReportField::BwAvg => "BW average",
            ReportField::MsgRate => "message rate",
            ReportField::BwAvgP1 => "BW port 1",
            ReportField::MsgRateP1 => "message rate port 1",
            ReportField::BwAvgP2 => "BW port 2",
            ReportField::MsgRateP2 => "message rate port 2",
        }
    }
}

const REPORT_FIELDS: [ReportField; 9] = [
    ReportField::Size,
    ReportField::Iters,
    ReportField::BwPeak,
    ReportField::BwAvg,
    ReportField::MsgRate,
    ReportField::BwAvgP1,
    ReportField::MsgRateP1,
    ReportField::BwAvgP2,
    ReportField::MsgRateP2,
];

impl BwReport {
    /// Exchanged fields: 5, or 9 with `--report-per-port` (a local flag both must give).
    pub fn fields(per_port: bool) -> &'static [ReportField] {
        if per_port {
            &REPORT_FIELDS
        } else {
            &REPORT_FIELDS[..5]
        }
    }

    /// Byte length of one field; `iters_len` is 8 (peer ≥ 5.33) or 4.
    pub fn field_len(f: ReportField, iters_len: usize) -> usize {
        if f == ReportField::Iters {
            iters_len
        } else {
            REPORT_FIELD_LEN
        }
    }

    /// One field's block (BE u64 / BE IEEE-754 double; 4-byte iterations for old peers).
    pub fn encode_field(&self, f: ReportField, iters_len: usize) -> Vec<u8> {
        match f {
            ReportField::Size => self.size.to_be_bytes().to_vec(),
            ReportField::Iters if iters_len == 4 => (self.iters as u32).to_be_bytes().to_vec(),
            ReportField::Iters => self.iters.to_be_bytes().to_vec(),
            ReportField::BwPeak => self.bw_peak.to_bits().to_be_bytes().to_vec(),
            ReportField::BwAvg => self.bw_avg.to_bits().to_be_bytes().to_vec(),
            ReportField::MsgRate => self.msg_rate.to_bits().to_be_bytes().to_vec(),
            ReportField::BwAvgP1 => self.bw_avg_p1.to_bits().to_be_bytes().to_vec(),
            ReportField::MsgRateP1 => self.msg_rate_p1.to_bits().to_be_bytes().to_vec(),
            ReportField::BwAvgP2 => self.bw_avg_p2.to_bits().to_be_bytes().to_vec(),
            ReportField::MsgRateP2 => self.msg_rate_p2.to_bits().to_be_bytes().to_vec(),
        }
    }

    /// Store one received field. Any bit pattern is accepted (a uni-directional C server sends
    /// uninitialised memory); only the length is checked.
    pub fn decode_field(&mut self, f: ReportField, bytes: &[u8]) -> Result<(), OobError> {
        let want = if f == ReportField::Iters && bytes.len() == 4 { 4 } else { REPORT_FIELD_LEN };
        if bytes.len() != want {
            return Err(OobError::malformed(
                "the report exchange",
                format!("{} field is {} bytes, expected {want}", f.name(), bytes.len()),
                HINT_PROTO,
            ));
        }
        let v = if want == 4 {
            let mut a = [0u8; 4];
            a.copy_from_slice(bytes);
            u64::from(u32::from_be_bytes(a))
        } else {
            let mut a = [0u8; 8];
            a.copy_from_slice(bytes);
            u64::from_be_bytes(a)
        };
        let d = f64::from_bits(v);
        match f {
            ReportField::Size => self.size = v,
            ReportField::Iters => self.iters = v,
            ReportField::BwPeak => self.bw_peak = d,
            ReportField::BwAvg => self.bw_avg = d,
            ReportField::MsgRate => self.msg_rate = d,
            ReportField::BwAvgP1 => self.bw_avg_p1 = d,
            ReportField::MsgRateP1 => self.msg_rate_p1 = d,
            ReportField::BwAvgP2 => self.bw_avg_p2 = d,
            ReportField::MsgRateP2 => self.msg_rate_p2 = d,
        }
        Ok(())
    }

    /// Summed duplex line: local + remote peak, average and message rate (size and iterations
    /// stay local).
    pub fn summed(&self, remote: &BwReport) -> BwReport {
        BwReport {
            bw_peak: self.bw_peak + remote.bw_peak,
            bw_avg: self.bw_avg + remote.bw_avg,
            msg_rate: self.msg_rate + remote.msg_rate,
            bw_avg_p1: self.bw_avg_p1 + remote.bw_avg_p1,
            msg_rate_p1: self.msg_rate_p1 + remote.msg_rate_p1,
            bw_avg_p2: self.bw_avg_p2 + remote.bw_avg_p2,
            msg_rate_p2: self.msg_rate_p2 + remote.msg_rate_p2,
            ..*self
        }
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
