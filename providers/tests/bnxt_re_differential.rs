//! Differential test of the bnxt_re provider: random sequences of posts (every opcode, flag, SGE
//! count and inline size a QP type allows), device completions (successes and errors), polls and
//! arms, run through rdma-core 44's libbnxt_re against the fake kernel now (tests/bnxt-oracle/,
//! built from Debian's packages, about 3 s), then replayed through our provider, which must write
//! the same bytes, ring the same doorbells and report the same completions
//! (support/bnxt_re.rs). Seeds 1..=8, each in static and variable WQE mode (seeds 1..=14 were
//! run when this was written).
//!
//! Skipped, with a line saying so, where gcc, libibverbs-dev or ibverbs-providers is missing
//! (.ci/run installs them).

mod support;

use support::oracle;

const LIB: &str = "/usr/lib/x86_64-linux-gnu/libibverbs/libbnxt_re-rdmav34.so";
const SEEDS: &str = "1 2 3 4 5 6 7 8";

#[test]
fn random_sequences_match_libbnxt_re() {
    if let Some(m) = oracle::missing("/usr/include/infiniband/verbs.h", LIB, "libbnxt_re") {
        eprintln!("SKIPPED bnxt_re differential test: needs {m} (apt-get install gcc libibverbs-dev ibverbs-providers)");
        return;
    }
    let out = oracle::run("bnxt-oracle", "BNXT_ORACLE", "bnxt-differential", SEEDS);
    let mut runs = 0;
    for seed in SEEDS.split(' ') {
        for mode in ["static", "variable"] {
            let f = out.join(format!("random-{seed}-{mode}.jsonl"));
            let text =
                std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            eprintln!("replaying {}", f.display());
            let counts = support::bnxt_re::replay(&text);
            assert!(
                counts["post_send"] > 100 && counts["poll"] > 50 && counts["cqe"] > 50,
                "{}: {counts:?}",
                f.display()
            );
            runs += 1;
        }
    }
    assert_eq!(runs, 2 * SEEDS.split(" ").count());
    // The fixed cases come out as committed: the golden files are what this libbnxt_re writes.
    oracle::assert_fixtures_fresh(&out, "bnxt_re", &["static.jsonl", "variable.jsonl"], "bnxt-oracle");
}
