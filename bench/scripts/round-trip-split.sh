#!/bin/bash
# Where a latency round trip goes, C perftest next to rperftest: in ONE VM of the test bed (full
# mode), each client run is traced with the kernel's raw_syscalls events on write(2), and every
# iteration is split into the time inside the rxe doorbell write() and the time between two
# doorbells. A benchmark instrument, not a test: nothing asserts a speed.
#
#   bench/scripts/round-trip-split.sh [OUT_DIR]
#
# Builds the static rperftest (tests/vm/build-static.sh) unless RPERFTEST_BIN names one;
# RPERFTEST_ALT_BIN adds a second one as implementation "alt" (put it in RTS_IMPLS). Guest knobs
# RTS_RUNS, RTS_N, RTS_SIZE, RTS_TOOLS, RTS_IMPLS, RTS_EVENTS are passed through (see
# round-trip-split-guest.sh); RTS_GUEST_ENV="NAME=VALUE ..." is exported in the guest for every
# run (e.g. a knob only the alt binary reads); RTS_TIMEOUT (default 1200 s) bounds the VM.
# Writes OUT_DIR/table.md (bench/scripts/round-trip-split-table.sh) and OUT_DIR/tail.md (the
# ping-pong halves and the slow iterations, bench/scripts/round-trip-tail.sh) from the traces;
# RTS_EVENTS="sched/sched_switch irq_vectors/local_timer_entry irq/irq_handler_entry" gives the
# latter what else ran during the slow iterations. OUT_DIR defaults to
# ${CARGO_TARGET_DIR:-target}/round-trip-split/<date>.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/vm-bench.bash"
say() { echo "[round-trip-split] $*" >&2; }
vmb_setup round-trip-split "${1:-}"
cp bench/scripts/round-trip-split-guest.sh "$STAGE/round-trip-split-guest.sh"

ENV_ARGS=()
for v in RTS_RUNS RTS_N RTS_SIZE RTS_TOOLS RTS_IMPLS RTS_EVENTS; do
    [ -n "${!v+x}" ] && ENV_ARGS+=(-e "$v=${!v}")
done
for kv in ${RTS_GUEST_ENV:-}; do
    ENV_ARGS+=(-e "$kv")
done
vmb_meta "$*" "${ENV_ARGS[*]:-}" >"$OUT/meta.txt"

say "booting the VM (results in $OUT)"
rc=0
tests/vm/run-in-vm.sh -q --mode full --timeout "${RTS_TIMEOUT:-1200}" --share "$OUT" "${ENV_ARGS[@]}" \
    "$STAGE/bin" "$STAGE/round-trip-split-guest.sh" "$STAGE/tcp-listening.bash" \
    -- bash -c 'export PATH=/mnt/host/bin:$PATH; exec bash /mnt/host/round-trip-split-guest.sh' \
    >"$OUT/guest.log" 2>&1 || rc=$?
echo "host load after: $(uptime)" >>"$OUT/meta.txt"
say "VM exit $rc (guest log: $OUT/guest.log)"
bench/scripts/round-trip-split-table.sh "$OUT" >"$OUT/table.md"
cat "$OUT/table.md"
bench/scripts/round-trip-tail.sh "$OUT" >"$OUT/tail.md" || say "no tail table (see above)"
say "tables: $OUT/table.md, $OUT/tail.md"
exit "$rc"
