#!/bin/bash
# tests/hw/first-contact.sh --quick on the bed's rxe0: it ends within its bound, exits 0, and its
# one report (report.txt + report.json) parses and has every section: devinfo, the selftest's
# checks, the eight tools ours<->ours, UC/UD, a sample against C perftest both ways (full image), and
# SRD refused in one line naming the device (rxe has no SRD); nothing failed. Full image only: the
# bare run adds a minute to CI and differs only in skipping C perftest (which the report names).
# mode: full
# timeout: 150
. "$VMTEST_LIB"

fc=$(dirname "$VMTEST_LIB")/first-contact.bash
mark
expect_rc 0 with_timeout 140 bash "$fc" --quick -x "$RXE_GID_IDX" -o "$VMTEST_TMP/fc" "$RXE_DEV"
bound 140 "first contact"
r=$VMTEST_TMP/fc/report.json
expect_rc 0 rperftest check-json "$r"
for s in '"devinfo": [' '"selftest": [' '"loopback": [' '"c_perftest": [' '"hotpath": [' \
         '"fail": 0' '"device": "'"$RXE_DEV"'"' '"driver": "rxe"'; do
    expect_contains "$s" "$r"
done
t=$VMTEST_TMP/fc/report.txt
expect_contains "summary: " "$t"
expect_contains " 0 failed" "$t"
for tool in ib_write_bw ib_write_lat ib_read_bw ib_read_lat ib_send_bw ib_send_lat ib_atomic_bw ib_atomic_lat; do
    grep -qE "^  pass +RC $tool ours<->ours" "$t" || fail "RC $tool ours<->ours did not pass"
done
grep -qE "^  pass +UD ib_send_bw ours<->ours" "$t" || fail "UD ib_send_bw ours<->ours did not pass"
grep -qE "^  pass +RC SEND 1 MiB" "$t" || fail "the selftest's checks are not in the report"
grep -qE "^  refused +SRD ib_send_bw ours<->ours +\(-c SRD: device $RXE_DEV has no SRD" "$t" || fail "SRD on rxe is not refused in one line"
if [ "$RXE_VM_MODE" = full ]; then
    grep -qE "^  pass +RC ib_write_bw C client -> ours" "$t" || fail "no C perftest run in the report"
    grep -qE "^  pass +UD ib_send_lat ours -> C server" "$t" || fail "no C perftest run in the report"
    grep -qE "^  pass +UD ib_send_lat C client -> ours" "$t" || fail "no C perftest UD run in the report"
else
    expect_contains "C perftest is not installed" "$t"
fi
# -c SRD on rxe (no SRD): one line naming the device, exit 1, before any exchange.
expect_rc 1 with_timeout 20 rperftest ib_send_bw -d "$RXE_DEV" -c SRD
expect_contains "-c SRD: device $RXE_DEV has no SRD"
[ "$(grep -c . "$LAST_OUT")" = 1 ] || fail "-c SRD on rxe: more than one line"
# Bad usage: one line, exit 2, no report.
expect_rc 2 with_timeout 20 bash "$fc" --bin /nonexistent/rperftest "$RXE_DEV"
expect_contains "give the binary with --bin"
expect_rc 2 with_timeout 20 bash "$fc" mlx5_9
expect_contains "no device mlx5_9"
