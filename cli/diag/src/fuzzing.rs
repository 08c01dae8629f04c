//! Fuzz target bodies for the diag tools' parsers of bytes from other hosts or the kernel:
//! rping's advertisement and payload, the C-style sysfs readers, the doctor's peer lines.
//!
//! Each `pub fn <target>(data: &[u8])` is run by the cargo-fuzz target of the same name
//! (`fuzz/fuzz_targets/<target>.rs`, nightly) and by the stable replay test
//! (`cli/diag/tests/fuzz_replay.rs`) over every file of `fuzz/corpus/<target>/`. A body panics
//! only when a property it checks fails. See docs/fuzzing.md.
#![doc(hidden)]

use crate::{csys, rping};

/// rping's untrusted inputs: the peer's 16-byte advertisement (decode is exact-length, encode
/// gives the bytes back, the length check never lets 0 or more than the buffer through), the
/// received payload as `%s` prints it, and the command line (NUL-separated arguments: parsed or
/// refused in one line, never a panic).
pub fn rping(data: &[u8]) {
    match rping::Adv::decode(data) {
        Ok(a) => {
            assert_eq!(data.len(), rping::ADV_LEN);
            assert_eq!(&a.encode()[..], data, "advertisement round-trips");
            for max in [1usize, 27, rping::BUF_MAX] {
                if let Ok(n) = a.checked_len(max) {
                    assert!(n >= 1 && n <= max && n == a.len as usize, "{n} of {max}");
                }
            }
        }
        Err(e) => {
            assert_ne!(data.len(), rping::ADV_LEN);
            assert!(e.starts_with("Received bogus data, size "), "{e}");
        }
    }
    let shown = rping::c_str(data);
    assert!(!shown.contains('\0') && shown.len() <= data.len() * 3, "c_str stops at the NUL");
    let args: Vec<String> = data.split(|&b| b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
    match rping::parse(&args) {
        Ok(Some(o)) => assert!(o.size >= rping::MIN_SIZE && o.size < rping::BUF_MAX, "-S {} accepted", o.size),
        Ok(None) => {}
        Err(e) => assert!(!e.trim().is_empty() && !e.trim_end().contains('\n'), "one line: {e:?}"),
    }
}

/// The diag tools' C-style sysfs readers (libibumad's semantics): any text is read without a
/// panic, and what the kernel writes reads back: a number in decimal and in `0x` hex, a GUID
/// and a GID in their sysfs form, built from the input's first bytes.
pub fn diag_sysfs(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let _ = (bench_core::cparse::strtoul(&text, 0), bench_core::cparse::strtoul(&text, 16), csys::guid_like_libibumad(&text), csys::gid_like_libibumad(&text));
    let mut w = [0u8; 16];
    for (d, s) in w.iter_mut().zip(data) {
        *d = *s;
    }
    let v = u64::from_le_bytes(w[..8].try_into().unwrap_or_default());
    assert_eq!(bench_core::cparse::strtoul(&format!("{v}"), 0), v, "decimal {v}");
    assert_eq!(bench_core::cparse::strtoul(&format!("0x{v:x}"), 0), v, "hex {v:x}");
    assert_eq!(bench_core::cparse::strtoul(&format!("{v:x}"), 16), v, "base 16 {v:x}");
    assert_eq!(bench_core::cparse::strtoul(&format!("{v}: STATE\n"), 0), v, "a number before text");
    let g: Vec<u16> = w.chunks(2).map(|c| u16::from_be_bytes([c[0], c[1]])).collect();
    let guid = format!("{:04x}:{:04x}:{:04x}:{:04x}\n", g[0], g[1], g[2], g[3]);
    assert_eq!(csys::guid_like_libibumad(&guid), Some(u64::from_be_bytes(w[..8].try_into().unwrap_or_default())), "{guid}");
    let gid = g.iter().map(|x| format!("{x:04x}")).collect::<Vec<_>>().join(":") + "\n";
    assert_eq!(csys::gid_like_libibumad(&gid), Some(w), "{gid}");
}

/// `rperftest doctor`'s peer messages (bytes from the other host): a hello is accepted or
/// refused in one line; an accepted one re-encodes to a line that parses to the same value,
/// within the line limit; the same for the closing result line.
pub fn doctor_wire(data: &[u8]) {
    use crate::doctor::wire::{Hello, Result1, MAX_LINE};
    match Hello::parse(data) {
        Ok(h) => {
            let line = h.encode();
            assert!(line.ends_with('\n') && line.matches('\n').count() == 1, "one line: {line:?}");
            let again = Hello::parse(line.as_bytes()).expect("an encoded hello parses");
            // Text fields travel with blanks and '=' as '_': compare the re-encoded lines.
            assert_eq!(again.encode(), line, "hello round-trips");
            assert!(matches!(h.mtu, 256 | 512 | 1024 | 2048 | 4096) && h.qpn <= 0xff_ffff);
            assert!(data.len() <= MAX_LINE);
        }
        Err(e) => assert!(!e.is_empty() && !e.contains('\n') && e.len() < 400, "one line: {e:?}"),
    }
    match Result1::parse(data) {
        Ok(r) => assert_eq!(Result1::parse(r.encode().as_bytes()), Ok(r), "result round-trips"),
        Err(e) => assert!(!e.contains('\n') && e.len() < 400, "one line: {e:?}"),
    }
}
