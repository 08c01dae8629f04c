//! Replays the committed corpus of `qperf_wire` (`fuzz/corpus/qperf_wire/*`) through the body
//! the cargo-fuzz target runs (`qperf::fuzzing`), on the stable toolchain. See docs/fuzzing.md.

use qperf::fuzzing;
use uverbs::fuzzing::replay;

#[test]
fn qperf_wire() {
    replay("qperf_wire", fuzzing::qperf_wire);
}

/// `qperf_wire` on pseudo-random blocks of every length around the message sizes, so its
/// round-trip checks also see inputs the corpus lacks (garbage padding, clocks that run
/// backwards, huge counters).
#[test]
fn qperf_wire_holds_on_generated_blocks() {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for len in (0..=300).chain([6, 40, 200, 256].into_iter().cycle().take(200)) {
        let block: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        fuzzing::qperf_wire(&block);
    }
}
