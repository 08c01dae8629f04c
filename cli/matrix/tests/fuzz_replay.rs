//! Replays the committed corpora of the matrix fuzz targets (`fuzz/corpus/<target>/*`) through
//! the bodies the cargo-fuzz targets run (`matrix::fuzzing`), on stable. See docs/fuzzing.md.

use matrix::fuzzing;
use uverbs::fuzzing::replay;

#[test]
fn matrix_results() {
    replay("matrix_results", fuzzing::matrix_results);
}

#[test]
fn matrix_probe() {
    replay("matrix_probe", fuzzing::matrix_probe);
}

#[test]
fn matrix_hostlist() {
    replay("matrix_hostlist", fuzzing::matrix_hostlist);
}

#[test]
fn matrix_node_lines() {
    replay("matrix_node_lines", fuzzing::matrix_node_lines);
}
