//! Running one of the C oracles (tests/bnxt-oracle, tests/efa-oracle): rdma-core 44's provider
//! library driven through the fake kernel, built with gcc from Debian's packages. The
//! differential tests of bnxt_re and EFA share this; what they replay differs.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What the oracle needs and this host lacks (gcc, `header` from libibverbs-dev, the provider
/// library `lib` from ibverbs-providers), or None when all is there.
pub fn missing(header: &str, lib: &str, provider: &str) -> Option<String> {
    let gcc = Command::new("gcc").arg("--version").output().map(|o| o.status.success()).unwrap_or(false);
    let missing: Vec<String> = [
        (!gcc).then(|| "gcc".to_string()),
        (!Path::new(header).exists()).then(|| "libibverbs-dev".to_string()),
        (!Path::new(lib).exists()).then(|| format!("ibverbs-providers ({provider})")),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!missing.is_empty()).then(|| missing.join(", "))
}

/// The workspace root.
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root")
}

/// Runs `tests/<name>/run.sh` into a fresh `<out_dir>` under the test target dir with
/// `<ENV>_SEEDS` and `<ENV>_BUILD` set, asserts that it succeeded, and returns the out dir.
pub fn run(name: &str, env: &str, out_dir: &str, seeds: &str) -> PathBuf {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(out_dir);
    let _ = std::fs::remove_dir_all(&out);
    let script = root().join("tests").join(name).join("run.sh");
    let st = Command::new("sh")
        .arg(&script)
        .arg(&out)
        .env(format!("{env}_SEEDS"), seeds)
        .env(format!("{env}_BUILD"), out.join("build"))
        .status()
        .unwrap_or_else(|e| panic!("run {}: {e}", script.display()));
    assert!(st.success(), "the oracle failed: {st}");
    out
}

/// The committed fixtures under `providers/tests/fixtures/<fixtures>` are what the oracle in
/// `out` wrote now.
pub fn assert_fixtures_fresh(out: &Path, fixtures: &str, files: &[&str], oracle: &str) {
    for f in files {
        let fresh = std::fs::read_to_string(out.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        let golden = std::fs::read_to_string(root().join("providers/tests/fixtures").join(fixtures).join(f))
            .unwrap_or_else(|e| panic!("{fixtures}/{f}: {e}"));
        assert!(fresh == golden, "{f}: the oracle no longer writes the committed file (regenerate with tests/{oracle}/run.sh)");
    }
}
