//! The version block, C's `atof` that reads it, and the rperftest-only option block that
//! follows it between two rperftest sides.

use super::super::error::OobError;
use super::{hex, show_text, HINT_PROTO, MTU_LEN, MTU_LEN_OLD, VERSION_LEN};

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
        PeerVersion { text: text.to_string(), value: bench_core::cparse::atof(text), rperftest: false }
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
