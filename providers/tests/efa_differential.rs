//! Differential test of the EFA provider: random sequences of posts on a UD and an SRD QP (every
//! request kind: SGEs, inline, immediate, RDMA read) and device completions of random
//! outstanding requests in random order (random statuses, lengths, immediates), run through
//! rdma-core 44's libefa against the fake kernel now (tests/efa-oracle/, built from Debian's
//! packages, about 1 s), then replayed through our provider (support/efa.rs), which must write
//! the same bytes, ring the same doorbells and report the same completions. Seeds 1..=6.
//!
//! Skipped, with a line saying so, where gcc, libibverbs-dev or ibverbs-providers is missing
//! (.ci/run installs them).

mod support;

use support::oracle;

const LIB: &str = "/usr/lib/x86_64-linux-gnu/libefa.so";
const SEEDS: &str = "1 2 3 4 5 6";

#[test]
fn random_sequences_match_libefa() {
    if let Some(m) = oracle::missing("/usr/include/infiniband/efadv.h", LIB, "libefa") {
        eprintln!("SKIPPED EFA differential test: needs {m} (apt-get install gcc libibverbs-dev ibverbs-providers)");
        return;
    }
    let out = oracle::run("efa-oracle", "EFA_ORACLE", "efa-differential", SEEDS);
    for seed in SEEDS.split(' ') {
        let f = out.join(format!("random-{seed}.jsonl"));
        eprintln!("replaying {}", f.display());
        let counts = support::efa::replay(&support::efa::events_at(f.to_str().unwrap()));
        assert!(
            counts["send"] > 100 && counts["recv"] > 50 && counts["poll"] > 150,
            "{}: {counts:?}",
            f.display()
        );
    }
    // The committed captures are what this libefa writes.
    oracle::assert_fixtures_fresh(
        &out,
        "efa",
        &[
            "golden.jsonl",
            "random.jsonl",
            "setup.jsonl",
            "events.jsonl",
            "setup-events.jsonl",
        ],
        "efa-oracle",
    );
}
