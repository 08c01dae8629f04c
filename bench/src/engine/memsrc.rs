//! Where the test buffer comes from and what it holds: `--mmap <file>` / `--mmap-offset`,
//! `--payload_file_path` and `--odp` (perftest_resources.c `create_single_mr`, `create_payload`,
//! `check_odp_support`).
//!
//! * `--mmap`: the buffer is `offset + total` bytes of the file mapped `MAP_SHARED` (uverbs
//!   [`uverbs::objects::MmapBuf::map_file`]); as in perftest 6.06 it is then filled like any other buffer
//!   (pseudo-random, zeros for write_lat), so the test writes into the file. Unlike perftest,
//!   which maps past the end of a short file and dies of SIGBUS on the first access, a file that
//!   is too small is refused in one line.
//! * `--payload_file_path` (perftest ≥ 6.16; not in 6.06's help): the file holds 32-bit words
//!   written `0xaaaaaaaa`, separated by commas (later ones also by newlines), each stored little
//!   endian; parsing stops at the message size and the bytes repeat over the whole buffer.
//!   write_lat keeps its zeros, as in perftest.
//! * `--odp`: the MR is registered with `IBV_ACCESS_ON_DEMAND` once the device's ODP
//!   capabilities allow the transport and verb; otherwise perftest's message.

use uverbs::attr::DeviceAttr;

use crate::params::{Connection, Params, Role, Tool, Verb};

/// What the buffer is filled with after registration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fill {
    /// write_lat: all zeros.
    Zero,
    /// Pseudo-random 32-bit words.
    Random,
    /// `--payload_file_path`: these bytes, repeated.
    Pattern(Vec<u8>),
}

impl Fill {
    /// The fill for this run: `payload` is the parsed `--payload_file_path` pattern, if any.
    pub fn for_tool(tool: Tool, payload: Option<Vec<u8>>) -> Fill {
        match (tool, payload) {
            (Tool::WriteLat, _) => Fill::Zero,
            (_, Some(v)) if !v.is_empty() => Fill::Pattern(v),
            _ => Fill::Random,
        }
    }

    /// The pattern cut at `max_size` bytes (perftest parses no further than the message size).
    pub fn truncated(self, max_size: u64) -> Fill {
        match self {
            Fill::Pattern(mut v) => {
                v.truncate(usize::try_from(max_size.max(1)).unwrap_or(usize::MAX));
                Fill::Pattern(v)
            }
            f => f,
        }
    }
}

/// Write `pattern` repeated into `chunk`, which starts at byte `off` of the buffer.
pub fn pattern_chunk(pattern: &[u8], off: usize, chunk: &mut [u8]) {
    if pattern.is_empty() {
        return;
    }
    let mut i = off % pattern.len();
    for b in chunk.iter_mut() {
        *b = pattern[i];
        i += 1;
        if i == pattern.len() {
            i = 0;
        }
    }
}

/// The bytes of a `--payload_file_path` file's text, at most `limit` of them; perftest's
/// messages (words counted from 0) on bad input.
pub fn parse_payload(text: &[u8], limit: usize) -> Result<Vec<u8>, String> {
    if text.is_empty() {
        return Err("Payload size should be greater than 0".into());
    }
    let limit = limit.max(1);
    let mut out: Vec<u8> = Vec::new();
    // perftest: the first token ends at a comma only, the later ones at a comma or a newline;
    // empty tokens are skipped (strtok).
    let mut rest = text;
    let mut first = true;
    loop {
        let is_delim = |c: u8| c == b',' || (!first && c == b'\n');
        let start = rest.iter().position(|&c| !is_delim(c));
        let Some(start) = start else { break };
        rest = &rest[start..];
        let end = rest.iter().position(|&c| is_delim(c)).unwrap_or(rest.len());
        let token = &rest[..end];
        rest = &rest[end..];
        first = false;
        let word = out.len() / 4;
        if token.len() != 10 {
            return Err(format!("Failed to parse DWORD number: {word}"));
        }
        // Little endian: the last two hex digits are the first byte. The "0x" is not checked.
        for i in (0..8).step_by(2) {
            let hi = token[8 - i];
            let lo = token[9 - i];
            let (Some(h), Some(l)) = ((hi as char).to_digit(16), (lo as char).to_digit(16)) else {
                return Err(format!("Invalid hex char in DWORD number: {word}"));
            };
            out.push((h * 16 + l) as u8);
            if out.len() == limit {
                return Ok(out);
            }
        }
    }
    if out.is_empty() {
        return Err("Failed to parse DWORD number: 0".into());
    }
    Ok(out)
}

/// Read and parse `--payload_file_path`: one line naming the option on failure.
pub fn load_payload(path: &str, limit: usize) -> Result<Vec<u8>, String> {
    let text = std::fs::read(path)
        .map_err(|e| format!(" Failed to open '{path}' (--payload_file_path): {e}"))?;
    parse_payload(&text, limit).map_err(|m| format!(" {m} (--payload_file_path '{path}')"))
}

/// Before connecting: the `--mmap` file must open read-write, the offset must be page aligned,
/// and the file must hold `offset + need` bytes (`need` as far as it is known now).
pub fn precheck_mmap(path: &str, offset: u64, need: u64, page_size: u64) -> Result<(), String> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| format!(" Unable to open '{path}' (--mmap): {e}"))?;
    let size = f.metadata().map_err(|e| format!(" Unable to stat '{path}' (--mmap): {e}"))?.len();
    mmap_size_problem(path, offset, need, size, page_size).map_or(Ok(()), Err)
}

/// [`precheck_mmap`] with the exact buffer size, as an optional line.
pub fn mmap_file_problem(path: &str, offset: u64, need: u64, page_size: u64) -> Option<String> {
    precheck_mmap(path, offset, need, page_size).err()
}

/// The size and alignment rules of `--mmap` as one line, or None.
pub fn mmap_size_problem(path: &str, offset: u64, need: u64, size: u64, page_size: u64) -> Option<String> {
    if page_size > 0 && !offset.is_multiple_of(page_size) {
        return Some(format!(
            " --mmap-offset {offset} is not a multiple of the page size ({page_size}): mmap(2) needs an aligned offset"
        ));
    }
    let total = offset.saturating_add(need);
    if size < total {
        return Some(format!(
            " --mmap file '{path}' is too small: the buffer needs {need} bytes from offset {offset} ({total} bytes), the file has {size} bytes (grow it, e.g. truncate -s {total} {path})"
        ));
    }
    None
}

/// The checks that need no connection, run once the device is open: `--odp` against the
/// device's capabilities, `--payload_file_path` read and parsed (returned), the `--mmap` file
/// against the buffer size (UD messages are cut to the MTU later, so its estimate assumes at
/// most 4096 bytes). One line on failure.
pub fn prepare(p: &Params, attr: &DeviceAttr, page_size: u64, cache_line: u64) -> Result<Option<Vec<u8>>, String> {
    if p.odp {
        if let Some(m) = odp_problem(attr, p) {
            return Err(m);
        }
    }
    let max_size = p.sizes().into_iter().max().unwrap_or(p.size);
    let payload = match &p.payload_file_path {
        Some(path) => Some(load_payload(path, usize::try_from(max_size).unwrap_or(usize::MAX))?),
        None => None,
    };
    if let Some(path) = &p.mmap_file {
        let ud = p.connection == Connection::Ud;
        let size = if ud { max_size.min(4096) } else { max_size };
        let need = super::verbs::BufLayout::new(p.num_qps as usize, size, page_size, cache_line, ud).total();
        precheck_mmap(path, p.mmap_offset, need, page_size)?;
    }
    Ok(payload)
}

const ODP_SUPPORT: u64 = 1 << 0;
const ODP_SEND: u32 = 1 << 0;
const ODP_RECV: u32 = 1 << 1;
const ODP_WRITE: u32 = 1 << 2;
const ODP_READ: u32 = 1 << 3;
const ODP_ATOMIC: u32 = 1 << 4;
const ODP_SRQ_RECV: u32 = 1 << 5;

/// perftest's `check_odp_support`: the device's ODP capabilities against the transport, verb
/// and role. `None` when ODP may be used; else perftest's line plus what to do.
pub fn odp_problem(attr: &DeviceAttr, p: &Params) -> Option<String> {
    let hint = " (run without --odp)";
    if attr.odp_general_caps & ODP_SUPPORT == 0 {
        return Some(format!(" The device does not support On-Demand Paging.{hint}"));
    }
    let (caps, name) = match p.connection {
        Connection::Rc => (attr.rc_odp_caps, "RC"),
        Connection::Ud => (attr.ud_odp_caps, "UD"),
        Connection::Xrc => (attr.xrc_odp_caps, "XRC"),
        Connection::Uc => return Some(format!(" ODP is not available on UC transport.{hint}")),
        Connection::Srd => return Some(format!(" ODP is not available on SRD transport.{hint}")),
        Connection::Dc => return None,
    };
    let recv = caps & (ODP_RECV | ODP_SRQ_RECV) != 0;
    let send = caps & ODP_SEND != 0;
    let missing = match p.verb {
        Verb::Send | Verb::SendImm if p.duplex => (!(send && recv)).then_some("ODP bidirectional Send is"),
        Verb::Send | Verb::SendImm if p.machine == Role::Client => (!send).then_some("ODP Send is"),
        Verb::Send | Verb::SendImm => (!recv).then_some("ODP Recv is"),
        Verb::Write | Verb::WriteImm => (caps & ODP_WRITE == 0).then_some("ODP Write is"),
        Verb::Read => (caps & ODP_READ == 0).then_some("ODP Read is"),
        Verb::Atomic => (caps & ODP_ATOMIC == 0).then_some("ODP Atomics are"),
    };
    missing.map(|m| format!(" {m} not supported for {name} transport.{hint}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::parsed;


    #[test]
    fn payload_words_are_little_endian_and_stop_at_the_size() {
        let v = parse_payload(b"0x11223344,0xaabbccdd\n", 100).unwrap();
        assert_eq!(v, [0x44, 0x33, 0x22, 0x11, 0xdd, 0xcc, 0xbb, 0xaa]);
        // Newlines separate words after the first; empty tokens are skipped.
        let v = parse_payload(b"0x00000001,,\n0x00000002\n0x00000003", 100).unwrap();
        assert_eq!(v, [1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0]);
        // Cut at the message size, even inside a word; later garbage is never read.
        assert_eq!(parse_payload(b"0x11223344,0xaabbccdd,zz", 6).unwrap(), [0x44, 0x33, 0x22, 0x11, 0xdd, 0xcc]);
        // The prefix is not checked (perftest reads only the 8 digits).
        assert_eq!(parse_payload(b"XX0000ff00", 4).unwrap(), [0, 0xff, 0, 0]);
    }

    #[test]
    fn bad_payloads_get_perftests_messages() {
        assert_eq!(parse_payload(b"", 8).unwrap_err(), "Payload size should be greater than 0");
        assert_eq!(parse_payload(b"0x1234", 8).unwrap_err(), "Failed to parse DWORD number: 0");
        assert_eq!(parse_payload(b"0x12345678,0x1234567g", 8).unwrap_err(), "Invalid hex char in DWORD number: 1");
        // The first word ends only at a comma (perftest's strtok call), so a lone word with a
        // newline is 11 characters.
        assert_eq!(parse_payload(b"0x12345678\n", 8).unwrap_err(), "Failed to parse DWORD number: 0");
        assert_eq!(parse_payload(b",,,", 8).unwrap_err(), "Failed to parse DWORD number: 0");
        let e = load_payload("/nonexistent/payload.txt", 8).unwrap_err();
        assert!(e.contains("--payload_file_path") && e.contains("/nonexistent/payload.txt") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn the_pattern_repeats_over_the_buffer() {
        let pat = [1u8, 2, 3];
        let mut a = [0u8; 8];
        pattern_chunk(&pat, 0, &mut a);
        assert_eq!(a, [1, 2, 3, 1, 2, 3, 1, 2]);
        let mut b = [0u8; 4];
        pattern_chunk(&pat, 8, &mut b);
        assert_eq!(b, [3, 1, 2, 3]);
        assert_eq!(Fill::for_tool(Tool::WriteLat, Some(vec![1])), Fill::Zero);
        assert_eq!(Fill::for_tool(Tool::SendBw, Some(vec![1, 2, 3])).truncated(2), Fill::Pattern(vec![1, 2]));
        assert_eq!(Fill::for_tool(Tool::SendBw, None), Fill::Random);
    }

    #[test]
    fn mmap_rules_name_the_file_and_sizes() {
        let m = mmap_size_problem("/tmp/f", 4096, 8192, 10000, 4096).unwrap();
        assert!(m.contains("'/tmp/f'") && m.contains("8192") && m.contains("12288") && m.contains("10000"), "{m}");
        assert!(!m.contains('\n'));
        assert!(mmap_size_problem("/tmp/f", 100, 1, 1 << 20, 4096).unwrap().contains("--mmap-offset 100"));
        assert_eq!(mmap_size_problem("/tmp/f", 4096, 8192, 12288, 4096), None);
        assert!(precheck_mmap("/nonexistent/x", 0, 1, 4096).unwrap_err().contains("Unable to open '/nonexistent/x' (--mmap)"));
    }

    #[test]
    fn odp_follows_perftests_capability_checks() {
        let mut a = DeviceAttr::default();
        let wb = parsed(Tool::WriteBw, &["--odp"]);
        assert_eq!(odp_problem(&a, &wb).unwrap(), " The device does not support On-Demand Paging. (run without --odp)");
        a.odp_general_caps = ODP_SUPPORT;
        assert!(odp_problem(&a, &wb).unwrap().starts_with(" ODP Write is not supported for RC transport."));
        a.rc_odp_caps = ODP_WRITE | ODP_SEND;
        assert_eq!(odp_problem(&a, &wb), None);
        // send_bw: the client needs SEND, the server RECV (or SRQ RECV), -b both.
        let client = parsed(Tool::SendBw, &["--odp", "host"]);
        let server = parsed(Tool::SendBw, &["--odp"]);
        let duplex = parsed(Tool::SendBw, &["--odp", "-b"]);
        assert_eq!(odp_problem(&a, &client), None);
        assert!(odp_problem(&a, &server).unwrap().starts_with(" ODP Recv is not supported for RC"));
        assert!(odp_problem(&a, &duplex).unwrap().starts_with(" ODP bidirectional Send is not supported"));
        a.rc_odp_caps |= ODP_SRQ_RECV;
        assert_eq!(odp_problem(&a, &server), None);
        assert!(odp_problem(&a, &parsed(Tool::ReadBw, &["--odp"])).unwrap().starts_with(" ODP Read is"));
        assert!(odp_problem(&a, &parsed(Tool::AtomicBw, &["--odp"])).unwrap().starts_with(" ODP Atomics are"));
        assert!(odp_problem(&a, &parsed(Tool::WriteBw, &["--odp", "-c", "UC"])).unwrap().contains("UC transport"));
    }
}
