//! Replays the committed fuzz corpora (`fuzz/corpus/<target>/*`) through the same target
//! bodies the cargo-fuzz targets run (`uverbs::fuzzing`), on the stable toolchain. A missing or
//! empty corpus directory is a failure. See docs/fuzzing.md.

use uverbs::fuzzing::{self, replay};

#[test]
fn netlink() {
    replay("netlink", fuzzing::netlink);
}

#[test]
fn sysfs() {
    replay("sysfs", fuzzing::sysfs);
}

#[test]
fn cm_event() {
    replay("cm_event", fuzzing::cm_event);
}
