//! The key message: perftest's text form over TCP and its binary struct over rdma_cm.

use super::super::error::OobError;
use super::{show_text, HINT_PROTO, CM_KEY_LEN_V606, CM_KEY_LEN_V629};

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
