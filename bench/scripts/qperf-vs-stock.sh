#!/bin/bash
# `rperftest qperf` against Debian's qperf 0.4.11 in ONE VM of the test bed (tests/vm, full
# mode): tcp_bw, tcp_lat, rc_bw -cm1 and rc_lat -cm1, both sides ours against both sides stock,
# alternating rounds. A benchmark, not a test: nothing asserts a speed.
#
#   bench/scripts/qperf-vs-stock.sh [OUT_DIR]
#
# Builds the static rperftest (tests/vm/build-static.sh; RPERFTEST_BIN skips that), makes sure
# the image exists, boots one VM that runs bench/scripts/qperf-vs-stock-guest.sh, then writes
# OUT_DIR/table.md (bench/scripts/qperf-vs-stock-table.sh). OUT_DIR defaults to
# ${CARGO_TARGET_DIR:-target}/qperf-vs-stock/<date>. QVS_RUNS (rounds, default 5) and QVS_TIME
# (-t, default 2) are passed to the guest; QVS_TIMEOUT (default 1200 s) bounds the VM.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/vm-bench.bash"
say() { echo "[qperf-vs-stock] $*" >&2; }
vmb_setup qperf-vs-stock "${1:-}"
cp bench/scripts/qperf-vs-stock-guest.sh "$STAGE/qperf-vs-stock-guest.sh"

vmb_env QVS_RUNS QVS_TIME
vmb_meta "$*" "${ENV_ARGS[*]:-}" >"$OUT/meta.txt"
vmb_run qperf-vs-stock-guest.sh "${QVS_TIMEOUT:-1200}"
[ -s "$OUT/raw.tsv" ] || { say "no raw data"; exit 1; }
bench/scripts/qperf-vs-stock-table.sh "$OUT" >"$OUT/table.md"
cat "$OUT/table.md"
say "table: $OUT/table.md"
exit "$RC"
