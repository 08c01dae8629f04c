#!/bin/bash
# Side-by-side benchmark: C perftest and rperftest on the same rxe device, in ONE VM of the test
# bed (tests/vm, full mode), alternating runs. A benchmark, not a test: nothing asserts a speed.
#
#   bench/scripts/side-by-side.sh [OUT_DIR]
#
# Builds the static rperftest (tests/vm/build-static.sh), makes sure the image exists, boots one
# VM that runs bench/scripts/side-by-side-guest.sh, then writes OUT_DIR/table.md from the raw
# rows (bench/scripts/side-by-side-table.sh). OUT_DIR defaults to
# ${CARGO_TARGET_DIR:-target}/side-by-side/<date>. Guest knobs (SBS_RUNS, SBS_BW_N, SBS_LAT_N,
# SBS_TOOLS_BW, SBS_TOOLS_LAT, SBS_URING, SBS_IMPLS, SBS_STARTUP) are passed through; see the guest script.
# SBS_TIMEOUT (default 1800 s) bounds the VM. RPERFTEST_BIN skips the build. RPERFTEST_ALT_BIN
# names a second rperftest (an A/B of a hot-path change): it runs as implementation "alt", so
# add it to SBS_IMPLS, e.g. SBS_IMPLS="c ours alt".
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/vm-bench.bash"
say() { echo "[side-by-side] $*" >&2; }
vmb_setup side-by-side "${1:-}"
cp bench/scripts/side-by-side-guest.sh "$STAGE/side-by-side-guest.sh"

vmb_env SBS_RUNS SBS_BW_N SBS_LAT_N SBS_TOOLS_BW SBS_TOOLS_LAT SBS_URING SBS_STARTUP SBS_IMPLS
vmb_meta "$*" "${ENV_ARGS[*]:-}" >"$OUT/meta.txt"
vmb_run side-by-side-guest.sh "${SBS_TIMEOUT:-1800}"
[ -s "$OUT/raw.tsv" ] || { say "no raw data"; exit 1; }
bench/scripts/side-by-side-table.sh "$OUT" >"$OUT/table.md"
cat "$OUT/table.md"
say "table: $OUT/table.md"
exit "$RC"
