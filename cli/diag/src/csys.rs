//! sysfs reads with the semantics of the C tools we imitate, so that odd attribute text turns
//! into the same output: libibumad reads a string of at most `len - 1` bytes and cuts it at the
//! last newline, and turns numbers into integers with `strtoul(text, NULL, 0)` (decimal, `0x`
//! hex or leading-zero octal, stopping at the first character that is not a digit, 0 when
//! there is none). `"4: ACTIVE"` is 4, `"2.5 Gb/sec (1X SDR)"` is 2, `"0x0"` is 0.

use bench_core::cparse::strtoul;
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
/// to 16 bits. `None` with fewer than four fields. Lenient on purpose, so that ibstat prints
/// what the C tool prints for odd text (`12345:zz:0:0` is `2345:0000:0000:0000`); device
/// discovery, which must refuse such text, uses [`uverbs::discovery::sysfs::parse_guid`].
pub fn guid_like_libibumad(text: &str) -> Option<u64> {
    let f = fields(text, 4)?;
    Some(f.iter().fold(0u64, |g, s| (g << 16) | (strtoul(s, 16) & 0xffff)))
}

/// A GID file as libibumad reads it: eight hex fields of 16 bits, each as lenient as in
/// [`guid_like_libibumad`]. Discovery's strict reader is [`uverbs::discovery::sysfs::parse_gid`].
pub fn gid_like_libibumad(text: &str) -> Option<[u8; 16]> {
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
    fn guids_and_gids_like_libibumad() {
        assert_eq!(guid_like_libibumad("fc3c:7aff:feba:5df3"), Some(0xfc3c_7aff_feba_5df3));
        assert_eq!(guid_like_libibumad("1:2:3:4"), Some(0x0001_0002_0003_0004));
        assert_eq!(guid_like_libibumad("1:2:3"), None);
        assert_eq!(guid_like_libibumad("12345:0:0:0"), Some(0x2345_0000_0000_0000));
        let g = gid_like_libibumad("fe80:0000:0000:0000:fc3c:7aff:feba:5df3").unwrap();
        assert_eq!(&g[..2], &[0xfe, 0x80]);
        assert_eq!(&g[8..], &[0xfc, 0x3c, 0x7a, 0xff, 0xfe, 0xba, 0x5d, 0xf3]);
        assert_eq!(gid_like_libibumad("fe80::1"), None);
    }

    // What the kernel writes reads the same both ways; odd text that discovery refuses reads
    // as libibumad reads it.
    #[test]
    fn agrees_with_discovery_on_kernel_text_only() {
        use uverbs::discovery::sysfs;
        for t in ["fc3c:7aff:feba:5df3\n", "0000:0000:0000:0001\n", "ffff:ffff:ffff:ffff\n"] {
            assert_eq!(guid_like_libibumad(t), Some(sysfs::parse_guid(t).unwrap()), "{t}");
        }
        let gid = "fe80:0000:0000:0000:fc3c:7aff:feba:5df3\n";
        assert_eq!(gid_like_libibumad(gid), Some(sysfs::parse_gid(gid).unwrap()));
        assert!(sysfs::parse_guid("12345:zz:0:0").is_err());
        assert_eq!(guid_like_libibumad("12345:zz:0:0"), Some(0x2345_0000_0000_0000));
        let odd = "fe80:0:0:0:0:0:0:zz";
        assert!(sysfs::parse_gid(odd).is_err());
        assert_eq!(gid_like_libibumad(odd).map(|g| g[0]), Some(0xfe));
    }

    #[test]
    fn read_string_cuts_like_c() {
        let d = crate::fake::FakeSys::new();
        d.file("a", "hello\n");
        d.file("b", "0123456789abcdef");
        d.file("c", "x\ny\n");
        assert_eq!(read_string(&d.path("a"), 20).as_deref(), Some("hello"));
        assert_eq!(read_string(&d.path("b"), 8).as_deref(), Some("0123456"));
        assert_eq!(read_string(&d.path("c"), 20).as_deref(), Some("x\ny"));
        assert_eq!(read_string(&d.path("missing"), 20), None);
    }
}
