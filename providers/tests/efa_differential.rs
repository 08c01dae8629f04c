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

use std::path::Path;
use std::process::Command;

const LIB: &str = "/usr/lib/x86_64-linux-gnu/libefa.so";
const SEEDS: &str = "1 2 3 4 5 6";

fn oracle_missing() -> Option<String> {
    let gcc = Command::new("gcc")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    let missing: Vec<&str> = [
        (!gcc).then_some("gcc"),
        (!Path::new("/usr/include/infiniband/efadv.h").exists()).then_some("libibverbs-dev"),
        (!Path::new(LIB).exists()).then_some("ibverbs-providers (libefa)"),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!missing.is_empty()).then(|| missing.join(", "))
}

#[test]
fn random_sequences_match_libefa() {
    if let Some(m) = oracle_missing() {
        eprintln!("SKIPPED EFA differential test: needs {m} (apt-get install gcc libibverbs-dev ibverbs-providers)");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("efa-differential");
    let _ = std::fs::remove_dir_all(&out);
    let st = Command::new("sh")
        .arg(root.join("tests/efa-oracle/run.sh"))
        .arg(&out)
        .env("EFA_ORACLE_SEEDS", SEEDS)
        .env("EFA_ORACLE_BUILD", out.join("build"))
        .status()
        .expect("run tests/efa-oracle/run.sh");
    assert!(st.success(), "the oracle failed: {st}");
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
    for f in ["golden.jsonl", "random.jsonl", "setup.jsonl"] {
        let fresh = std::fs::read_to_string(out.join(f)).unwrap();
        let golden =
            std::fs::read_to_string(root.join("providers/tests/fixtures/efa").join(f)).unwrap();
        assert!(fresh == golden, "{f}: the oracle no longer writes the committed file (regenerate with tests/efa-oracle/run.sh)");
    }
}
