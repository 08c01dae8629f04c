//! Replays the committed fuzz corpora (`fuzz/corpus/<target>/*`) through the same target
//! bodies the cargo-fuzz targets run (`bench::fuzzing`), on the stable toolchain. A missing or
//! empty corpus directory is a failure. See docs/fuzzing.md.

use uverbs::fuzzing::replay;
use bench::fuzzing;

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
