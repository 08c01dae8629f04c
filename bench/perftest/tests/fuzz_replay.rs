//! Replays the committed fuzz corpora (`fuzz/corpus/<target>/*`) through the same target
//! bodies the cargo-fuzz targets run (`perftest::fuzzing`), on the stable toolchain. A missing or
//! empty corpus directory is a failure. See docs/fuzzing.md.

use uverbs::fuzzing::{replay, XorShift};
use perftest::fuzzing;

#[test]
fn oob_version() {
    replay("oob_version", fuzzing::oob_version);
}

#[test]
fn oob_sysdata() {
    replay("oob_sysdata", fuzzing::oob_sysdata);
}

#[test]
fn oob_mtu() {
    replay("oob_mtu", fuzzing::oob_mtu);
}

#[test]
fn oob_negotiate() {
    replay("oob_negotiate", fuzzing::oob_negotiate);
}

#[test]
fn oob_key() {
    replay("oob_key", fuzzing::oob_key);
}

#[test]
fn oob_cm_key() {
    replay("oob_cm_key", fuzzing::oob_cm_key);
}

#[test]
fn oob_report() {
    replay("oob_report", fuzzing::oob_report);
}

#[test]
fn params() {
    replay("params", fuzzing::params);
}

/// The targets whose checks grew with issue 18 (rperftest's version mark, the option block, the
/// report plausibility check), on pseudo-random blocks: also inputs the corpora lack, e.g.
/// version blocks with the mark and option blocks of text lines.
#[test]
fn issue_18_checks_hold_on_generated_blocks() {
    let mut x = XorShift::new(0x9e37_79b9_7f4a_7c15);
    let mut next = move || x.next_u64();
    let alphabet = b"0123456789abcdef:\t\n -=sqtmcnDA\0";
    for i in 0..20_000 {
        let len = match i % 4 {
            0 => 16,
            1 => 41,
            2 => perftest::oob::msg::OPTIONS_LEN,
            _ => (next() % 330) as usize,
        };
        let text = i % 3 != 0;
        let mut b: Vec<u8> = (0..len)
            .map(|_| if text { alphabet[(next() % alphabet.len() as u64) as usize] } else { next() as u8 })
            .collect();
        if i % 5 == 0 && len == 16 {
            b[..15].copy_from_slice(b"6.06\0rperftest1");
        }
        fuzzing::oob_version(&b);
        fuzzing::oob_negotiate(&b);
        fuzzing::oob_report(&b);
    }
}
