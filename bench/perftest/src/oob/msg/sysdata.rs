//! The two SYSDATA blocks: page size (perftest's cycle buffer) and cache line.

use super::super::error::OobError;
use super::{hex, HINT_PROTO, SYSDATA_LEN};

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
