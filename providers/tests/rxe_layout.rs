//! Every offset/size constant of `providers::rxe::layout` against the installed uAPI headers
//! (`<rdma/rdma_user_rxe.h>`, `<rdma/ib_user_verbs.h>`), through a gcc-compiled `offsetof`
//! probe (tests/support/c_probe.rs).

#[path = "../../tests/support/c_probe.rs"]
mod c_probe;

use providers::rxe::layout::C_LAYOUT;

#[test]
fn layout_matches_the_kernel_headers() {
    let exprs: Vec<&str> = C_LAYOUT.iter().map(|(e, _)| *e).collect();
    let c = c_probe::c_values("rxe-layout", &["rdma/rdma_user_rxe.h", "rdma/ib_user_verbs.h"], "", &exprs);
    let bad = c_probe::mismatches(C_LAYOUT.iter().map(|(e, ours)| (*e, *ours as u64, *e)), &c);
    assert!(bad.is_empty(), "layout mismatches:\n{}", bad.join("\n"));
}
