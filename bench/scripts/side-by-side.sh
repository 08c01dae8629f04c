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

ENV_ARGS=()
for v in SBS_RUNS SBS_BW_N SBS_LAT_N SBS_TOOLS_BW SBS_TOOLS_LAT SBS_URING SBS_STARTUP SBS_IMPLS; do
    [ -n "${!v+x}" ] && ENV_ARGS+=(-e "$v=${!v}")
done

vmb_meta "$*" "${ENV_ARGS[*]:-}" >"$OUT/meta.txt"

# Sample the host load every 30 s while the VM runs (other work on the machine distorts figures).
( while sleep 30; do echo "$(date -u +%H:%M:%S) $(cat /proc/loadavg)"; done ) >"$OUT/host-load.txt" 2>/dev/null &
LOADPID=$!

say "booting the VM (results in $OUT)"
rc=0
tests/vm/run-in-vm.sh -q --mode full --timeout "${SBS_TIMEOUT:-1800}" --share "$OUT" \
    --timing-file "$OUT/vm-timing.txt" "${ENV_ARGS[@]}" \
    "$STAGE/bin" "$STAGE/side-by-side-guest.sh" "$STAGE/tcp-listening.bash" \
    -- bash -c 'export PATH=/mnt/host/bin:$PATH; exec bash /mnt/host/side-by-side-guest.sh' || rc=$?
kill "$LOADPID" 2>/dev/null || true
echo "host load after: $(uptime)" >>"$OUT/meta.txt"
say "VM exit $rc"
[ -s "$OUT/raw.tsv" ] || { say "no raw data"; exit 1; }
bench/scripts/side-by-side-table.sh "$OUT" >"$OUT/table.md"
cat "$OUT/table.md"
say "table: $OUT/table.md"
exit "$rc"
