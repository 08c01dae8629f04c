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
//!
//! What the options ask for is decided in `tool::prepare` (this module knows no `Params`).

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
