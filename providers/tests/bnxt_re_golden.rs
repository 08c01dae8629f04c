//! Golden-byte tests of the bnxt_re provider: the committed captures of rdma-core 44's libbnxt_re
//! against a fake kernel (providers/tests/fixtures/bnxt_re/, from tests/bnxt-oracle/) replayed
//! through our provider (support/bnxt_re.rs says what is compared).

mod support;

fn golden(file: &str) {
    let path = format!(
        "{}/tests/fixtures/bnxt_re/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let counts = support::bnxt_re::replay(&text);
    // The file covers what it should: a truncated capture must not pass quietly.
    assert!(
        counts["post_send"] >= 340 && counts["poll"] >= 120 && counts["cqe"] >= 70,
        "{counts:?}"
    );
}

#[test]
fn static_wqes_whitney_chip() {
    golden("static.jsonl");
}

#[test]
fn variable_wqes_thor_chip() {
    golden("variable.jsonl");
}
