//! Replays the committed corpus of `qperf_wire` (`fuzz/corpus/qperf_wire/*`) through the body
//! the cargo-fuzz target runs (`qperf::fuzzing`), on the stable toolchain. See docs/fuzzing.md.

use qperf::fuzzing;
use uverbs::fuzzing::{replay, XorShift};

/// The corpus, then pseudo-random blocks of every length around the message sizes, so the
/// round-trip checks also see inputs the corpus lacks (garbage padding, clocks that run
/// backwards, huge counters).
#[test]
fn qperf_wire_on_the_corpus_and_generated_blocks() {
    replay("qperf_wire", fuzzing::qperf_wire);
    let mut x = XorShift::new(0x2545_f491_4f6c_dd1d);
    for len in (0..=300).chain([6, 40, 200, 256].into_iter().cycle().take(200)) {
        fuzzing::qperf_wire(&x.bytes(len));
    }
}
