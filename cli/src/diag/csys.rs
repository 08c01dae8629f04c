//! sysfs reads with the semantics of the C tools we imitate, so that odd attribute text turns
//! into the same output: libibumad reads a string of at most `len - 1` bytes and cuts it at the
//! last newline, and turns numbers into integers with `strtoul(text, NULL, 0)` (decimal, `0x`
//! hex or leading-zero octal, stopping at the first character that is not a digit, 0 when
//! there is none). `"4: ACTIVE"` is 4, `"2.5 Gb/sec (1X SDR)"` is 2, `"0x0"` is 0.

use std::io::Read;
use std::path::Path;

/// Read at most `max_len - 1` bytes of `path` and drop everything from the last newline on.
/// `None` when the file cannot be opened or read.
pub fn read_string(path: &Path, max_len: usize) -> Option<String> {
    let f = std::fs::File::open(path).ok()?;
    let mut buf = Vec::with_capacity(max_len.min(4096));
    f.take(max_len.saturating_sub(1) as u64)
        .read_to_end(&mut buf)
        .ok()?;
    if let Some(nl) = buf.iter().rposition(|&b| b == b'\n') {
        buf.truncate(nl);
    }
    // A NUL ends a C string.
    if let Some(z) = buf.iter().position(|&b| b == 0) {
        buf.truncate(z);
    }
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// `strtoul(text, NULL, base)` for base 0 (auto) or 16, truncated to 64 bits (overflow
/// saturates as in C).
pub fn strtoul(text: &str, base: u32) -> u64 {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() && (b[i] == b' ' || (b'\t'..=b'\r').contains(&b[i])) {
        i += 1;
    }
    let mut neg = false;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        neg = b[i] == b'-';
        i += 1;
    }
    let mut radix = base;
    let has_hex_prefix = i + 1 < b.len()
        && b[i] == b'0'
        && (b[i + 1] == b'x' || b[i + 1] == b'X')
        && b.get(i + 2).is_some_and(|c| c.is_ascii_hexdigit());
    if (radix == 0 || radix == 16) && has_hex_prefix {
        radix = 16;
        i += 2;
    } else if radix == 0 {
        radix = if b.get(i) == Some(&b'0') { 8 } else { 10 };
    }
    let mut v: u64 = 0;
    let mut overflow = false;
    while i < b.len() {
        let d = match (b[i] as char).to_digit(radix) {
            Some(d) => d,
            None => break,
        };
        match v.checked_mul(radix as u64).and_then(|x| x.checked_add(d as u64)) {
            Some(x) => v = x,
            None => overflow = true,
        }
        i += 1;
    }
    if overflow {
        return u64::MAX;
    }
    if neg {
        v.wrapping_neg()
    } else {
        v
    }
}

/// An attribute as libibumad's `sys_read_uint`: a 32-byte read, then `strtoul(.., 0)` kept
/// to 32 bits (C's `unsigned`).
pub fn read_uint(path: &Path) -> Option<u32> {
    read_string(path, 32).map(|t| strtoul(&t, 0) as u32)
}

/// Split as `strsep` on any of `": \t\n"` does, giving the first `n` fields (empty fields
/// included); `None` if there are fewer.
fn fields(text: &str, n: usize) -> Option<Vec<&str>> {
    let v: Vec<&str> = text.split([':', ' ', '\t', '\n']).take(n).collect();
    (v.len() == n).then_some(v)
}

/// A GUID file (`fc3c:7aff:feba:5df3`) as libibumad reads it: four fields, each hex and kept
/// to 16 bits. `None` with fewer than four fields.
pub fn parse_guid(text: &str) -> Option<u64> {
    let f = fields(text, 4)?;
    Some(f.iter().fold(0u64, |g, s| (g << 16) | (strtoul(s, 16) & 0xffff)))
}

/// A GID file as libibumad reads it: eight hex fields of 16 bits.
pub fn parse_gid(text: &str) -> Option<[u8; 16]> {
    let f = fields(text, 8)?;
    let mut out = [0u8; 16];
    for (i, s) in f.iter().enumerate() {
        let w = (strtoul(s, 16) & 0xffff) as u16;
        out[2 * i..2 * i + 2].copy_from_slice(&w.to_be_bytes());
    }
    Some(out)
}

/// Directory entry names, sorted by bytes as `scandir(.., alphasort)` in the C locale and
/// `ls` do; empty when the directory cannot be read.
pub fn sorted_names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect(),
        Err(_) => Vec::new(),
    };
    v.sort();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strtoul_like_c() {
        assert_eq!(strtoul("4: ACTIVE", 0), 4);
        assert_eq!(strtoul("2.5 Gb/sec (1X SDR)", 0), 2);
        assert_eq!(strtoul("100 Gb/sec (4X EDR)", 0), 100);
        assert_eq!(strtoul("0x0", 0), 0);
        assert_eq!(strtoul("0x00010000\n", 0), 0x10000);
        assert_eq!(strtoul("010", 0), 8);
        assert_eq!(strtoul("  12abc", 0), 12);
        assert_eq!(strtoul("abc", 0), 0);
        assert_eq!(strtoul("", 0), 0);
        assert_eq!(strtoul("0x", 0), 0);
        assert_eq!(strtoul("-1", 0), u64::MAX);
        assert_eq!(strtoul("99999999999999999999999", 0), u64::MAX);
        assert_eq!(strtoul("fc3c", 16), 0xfc3c);
        assert_eq!(strtoul("0xfc3c", 16), 0xfc3c);
    }

    #[test]
    fn guids_and_gids_like_libibumad() {
        assert_eq!(parse_guid("fc3c:7aff:feba:5df3"), Some(0xfc3c_7aff_feba_5df3));
        assert_eq!(parse_guid("1:2:3:4"), Some(0x0001_0002_0003_0004));
        assert_eq!(parse_guid("1:2:3"), None);
        assert_eq!(parse_guid("12345:0:0:0"), Some(0x2345_0000_0000_0000));
        let g = parse_gid("fe80:0000:0000:0000:fc3c:7aff:feba:5df3").unwrap();
        assert_eq!(&g[..2], &[0xfe, 0x80]);
        assert_eq!(&g[8..], &[0xfc, 0x3c, 0x7a, 0xff, 0xfe, 0xba, 0x5d, 0xf3]);
        assert_eq!(parse_gid("fe80::1"), None);
    }

    #[test]
    fn read_string_cuts_like_c() {
        let d = crate::diag::fake::FakeSys::new();
        d.file("a", "hello\n");
        d.file("b", "0123456789abcdef");
        d.file("c", "x\ny\n");
        assert_eq!(read_string(&d.path("a"), 20).as_deref(), Some("hello"));
        assert_eq!(read_string(&d.path("b"), 8).as_deref(), Some("0123456"));
        assert_eq!(read_string(&d.path("c"), 20).as_deref(), Some("x\ny"));
        assert_eq!(read_string(&d.path("missing"), 20), None);
    }
}
