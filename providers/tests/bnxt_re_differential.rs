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

use std::path::Path;
use std::process::Command;

const LIB: &str = "/usr/lib/x86_64-linux-gnu/libibverbs/libbnxt_re-rdmav34.so";
const SEEDS: &str = "1 2 3 4 5 6 7 8";

fn oracle_missing() -> Option<String> {
    let gcc = Command::new("gcc")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    let missing: Vec<&str> = [
        (!gcc).then_some("gcc"),
        (!Path::new("/usr/include/infiniband/verbs.h").exists()).then_some("libibverbs-dev"),
        (!Path::new(LIB).exists()).then_some("ibverbs-providers (libbnxt_re)"),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!missing.is_empty()).then(|| missing.join(", "))
}

#[test]
fn random_sequences_match_libbnxt_re() {
    if let Some(m) = oracle_missing() {
        eprintln!("SKIPPED bnxt_re differential test: needs {m} (apt-get install gcc libibverbs-dev ibverbs-providers)");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bnxt-differential");
    let _ = std::fs::remove_dir_all(&out);
    let st = Command::new("sh")
        .arg(root.join("tests/bnxt-oracle/run.sh"))
        .arg(&out)
        .env("BNXT_ORACLE_SEEDS", SEEDS)
        .env("BNXT_ORACLE_BUILD", out.join("build"))
        .status()
        .expect("run tests/bnxt-oracle/run.sh");
    assert!(st.success(), "the oracle failed: {st}");
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
    for f in ["static.jsonl", "variable.jsonl"] {
        let fresh = std::fs::read_to_string(out.join(f)).unwrap();
        let golden =
            std::fs::read_to_string(root.join("providers/tests/fixtures/bnxt_re").join(f)).unwrap();
        assert!(fresh == golden, "{f}: the oracle no longer writes the committed golden file (regenerate with tests/bnxt-oracle/run.sh)");
    }
}
