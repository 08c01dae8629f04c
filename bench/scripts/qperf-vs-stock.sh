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

ENV_ARGS=()
for v in QVS_RUNS QVS_TIME; do
    [ -n "${!v+x}" ] && ENV_ARGS+=(-e "$v=${!v}")
done
vmb_meta "$*" "${ENV_ARGS[*]:-}" >"$OUT/meta.txt"

# Sample the host load every 30 s while the VM runs (other work on the machine distorts figures).
( while sleep 30; do echo "$(date -u +%H:%M:%S) $(cat /proc/loadavg)"; done ) >"$OUT/host-load.txt" 2>/dev/null &
LOADPID=$!

say "booting the VM (results in $OUT)"
rc=0
tests/vm/run-in-vm.sh -q --mode full --timeout "${QVS_TIMEOUT:-1200}" --share "$OUT" \
    --timing-file "$OUT/vm-timing.txt" "${ENV_ARGS[@]}" \
    "$STAGE/bin" "$STAGE/qperf-vs-stock-guest.sh" "$STAGE/tcp-listening.bash" \
    -- bash -c 'export PATH=/mnt/host/bin:$PATH; exec bash /mnt/host/qperf-vs-stock-guest.sh' || rc=$?
kill "$LOADPID" 2>/dev/null || true
echo "host load after: $(uptime)" >>"$OUT/meta.txt"
say "VM exit $rc"
[ -s "$OUT/raw.tsv" ] || { say "no raw data"; exit 1; }
bench/scripts/qperf-vs-stock-table.sh "$OUT" >"$OUT/table.md"
cat "$OUT/table.md"
say "table: $OUT/table.md"
exit "$rc"
