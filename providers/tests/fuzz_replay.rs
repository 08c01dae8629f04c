//! Replays the committed fuzz corpora (`fuzz/corpus/<target>/*`) through the same target
//! bodies the cargo-fuzz targets run (`providers::fuzzing`), on the stable toolchain. A missing or
//! empty corpus directory is a failure. See docs/fuzzing.md.

use uverbs::fuzzing::replay;
use providers::fuzzing;

#[test]
fn rxe_cqe() {
    replay("rxe_cqe", fuzzing::rxe_cqe);
}

#[test]
fn rxe_ring() {
    replay("rxe_ring", fuzzing::rxe_ring);
}

#[test]
fn rxe_wqe() {
    replay("rxe_wqe", fuzzing::rxe_wqe);
}

#[test]
fn mlx5_cqe() {
    replay("mlx5_cqe", fuzzing::mlx5_cqe);
}

#[test]
fn efa_cqe() {
    replay("efa_cqe", fuzzing::efa_cqe);
}

#[test]
fn mlx5_abi() {
    replay("mlx5_abi", fuzzing::mlx5_abi);
}

#[test]
fn bnxt_re_cqe() {
    replay("bnxt_re_cqe", fuzzing::bnxt_re_cqe);
}
