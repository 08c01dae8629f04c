#!/bin/bash
# The project's whole test run (this is what .ci/run executes):
#   0. no new import circle between modules: tests/import-circles.py
#   1. unit tests:            cargo test --workspace --exclude vmtest
#   2. static release binary: tests/vm/build-static.sh (the musl target, added
#      with rustup when missing); tests/vm/check-musl.sh checks it is the musl
#      build and prints its size
#   3. real-kernel VM suite:  cargo test -p vmtest --test vm
#      (Debian kernel + rdma_rxe under qemu; modes full and bare, then the
#      four-VM cluster of tests/vm/cluster-suite.sh)
# Needs: a Rust toolchain, qemu-system-x86 (apt), apt-get with current lists
# (for the image's .debs); for the cluster: root, iproute2, openssh-client.  Respects CARGO_TARGET_DIR and RXE_VM_CACHE.
# Set RPERFTEST_SKIP_VM=1 to report the VM tests as ignored (no qemu needed).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
T0=$(date +%s)
TIMES=()
step() { echo; echo "=== run-all [$(( $(date +%s) - T0 ))s] $*"; }
mark() { TIMES+=("$1 $(( $(date +%s) - $2 ))s"); }

step "0/3 import circles: tests/import-circles.py"
python3 tests/import-circles.py

step "1/3 unit tests: cargo test --workspace --exclude vmtest"
t=$(date +%s)
cargo test --workspace --exclude vmtest
mark "unit-tests" "$t"

step "2/3 static release binary: tests/vm/build-static.sh"
t=$(date +%s)
BIN=$(tests/vm/build-static.sh)
echo "rperftest: $BIN"
# No C verbs library, ever: the product binary must not name libibverbs, librdmacm or a
# provider library (a static binary has no NEEDED entries at all).
NEEDED=$(readelf -d "$BIN" | grep NEEDED || true)
if echo "$NEEDED" | grep -Eq 'libibverbs|librdmacm|libmlx5|librxe|libefa|libbnxt_re'; then
    echo "FAILED: $BIN links an rdma-core library:"; echo "$NEEDED"; exit 1
fi
echo "readelf -d: ${NEEDED:-no NEEDED entries (static)}; size $(stat -c %s "$BIN") bytes"
# What the VM suite tests must be the product: the static musl binary (build-static.sh installs
# the musl target; it falls back to glibc only when it cannot).  A glibc static-pie passes only
# with RPERFTEST_ALLOW_GLIBC_STATIC=1.
MUSL=1
if ! tests/vm/check-musl.sh "$BIN"; then
    MUSL=0
    if [ "${RPERFTEST_ALLOW_GLIBC_STATIC:-}" = 1 ]; then
        echo "RPERFTEST_ALLOW_GLIBC_STATIC=1: testing $BIN, which is not the musl build"
    else
        echo "FAILED: $BIN is not the static musl binary (RPERFTEST_ALLOW_GLIBC_STATIC=1 to test it anyway)"
        exit 1
    fi
fi
# docs/benchmarks.md states the musl binary's size; say when this build is 5 % or more away from it
SIZE=$(stat -c %s "$BIN")
DOC_SIZE=$(grep -o '^| static binary | [0-9][0-9,]* bytes' docs/benchmarks.md | grep -o '[0-9][0-9,]*' | tr -d , || true)
if [ $MUSL = 1 ] && [ -n "$DOC_SIZE" ] && [ $(( (SIZE > DOC_SIZE ? SIZE - DOC_SIZE : DOC_SIZE - SIZE) * 20 )) -ge "$DOC_SIZE" ]; then
    echo "NOTE: this binary is $SIZE bytes, docs/benchmarks.md says $DOC_SIZE: refresh its tables (bench/scripts/binary-size.sh)"
fi
mark "static-build" "$t"
# The plots of the static binary: XML parse of every SVG, and with chromium installed a
# headless render of SVGs and an HTML overlay (tests/plot-render.sh; docs/plots.md).
tests/plot-render.sh --bin "$BIN"
# The matrix report at 64 nodes (fake-ssh, no network): text switched to the pairs not OK, the
# heatmap's 64 labels, the notes folded, rendered headless (about 25 s).
tests/matrix-fake/report-render.sh "$BIN"

step "3/3 VM suite: cargo test -p vmtest --test vm"
t=$(date +%s)
# The glibc GPU flavour (debug) and the CUDA and HSA test doubles for cases/35-gpu-double.sh.
GPU_DIR=$(tests/gpu-double/flavour.sh)
RPERFTEST_BIN=$BIN RPERFTEST_GPU_DIR=$GPU_DIR cargo test -p vmtest --test vm
mark "vm-suite" "$t"

step "all passed; binary $BIN, $SIZE bytes; timings: ${TIMES[*]}; total $(( $(date +%s) - T0 ))s"
