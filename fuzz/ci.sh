#!/usr/bin/env bash
# Usage: fuzz/ci.sh
#
# The CI fuzz step (called by .ci/run after tests/run-all.sh): every target for
# FUZZ_CI_SECONDS (default 4) through fuzz/run.sh, which fails on a finding. Skipped, with
# one line saying why, when there is no nightly toolchain, when cargo-fuzz is missing and
# cannot be installed within FUZZ_CI_INSTALL_TIMEOUT seconds (default 300), or when
# RPERFTEST_SKIP_FUZZ=1. A target that does not build or a finding fails the step.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
T0=$(date +%s)
skip() { echo "=== fuzz/ci.sh: fuzz step SKIPPED: $*"; exit 0; }

[ "${RPERFTEST_SKIP_FUZZ:-0}" = 1 ] && skip "RPERFTEST_SKIP_FUZZ=1"
command -v rustup >/dev/null 2>&1 || skip "no rustup, so no nightly toolchain"
rustup toolchain list | grep -q '^nightly' || skip "no nightly toolchain (rustup toolchain install nightly)"
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "=== fuzz/ci.sh: installing cargo-fuzz (at most ${FUZZ_CI_INSTALL_TIMEOUT:-300}s)"
    timeout "${FUZZ_CI_INSTALL_TIMEOUT:-300}" cargo install cargo-fuzz --locked ||
        skip "cargo install cargo-fuzz --locked failed or timed out"
fi
rc=0
# The instrumented build (about 5 min from cold on 2 cores) is cached beside the VM image
# cache, outside the fresh clone CI runs in; only what changed is rebuilt.
export FUZZ_TARGET_DIR=${FUZZ_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/rperftest/fuzz-target}
fuzz/run.sh "${FUZZ_CI_SECONDS:-4}" || rc=$?
echo "=== fuzz/ci.sh: fuzz step took $(( $(date +%s) - T0 ))s, exit $rc"
exit "$rc"
