//! Replays the committed corpora of the diag fuzz targets (`fuzz/corpus/<target>/*`) through
//! the bodies the cargo-fuzz targets run (`diag::fuzzing`), on stable. See docs/fuzzing.md.

use diag::fuzzing;
use uverbs::fuzzing::replay;

#[test]
fn rping() {
    replay("rping", fuzzing::rping);
}

#[test]
fn diag_sysfs() {
    replay("diag_sysfs", fuzzing::diag_sysfs);
}

#[test]
fn doctor_wire() {
    replay("doctor_wire", fuzzing::doctor_wire);
}
