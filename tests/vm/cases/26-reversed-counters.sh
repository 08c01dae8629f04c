#!/bin/bash
# --reversed (the side without a host sends, the side with the host receives; the TCP roles do
# not change) for write/send/read/atomic_bw, ours<->ours and against C perftest 6.06 both ways;
# -W/--report-counters with rxe's hw_counters (non-zero packet deltas after the result line,
# perftest's "\t<name>=<delta>" lines), and a counter that does not exist (one line, exit 1);
# -O/--dualport (and --report-per-port) on one-port rxe: one line naming rxe0 and its port count.
# mode: full
# (not in bare: the bare image differs only by lacking rdma-core, which 19-bare-all-tools covers)
# timeout: 600
. "$VMTEST_LIB"
X=(-d "$RXE_DEV" -x "$RXE_GID_IDX")
full() { [ "$RXE_VM_MODE" = full ]; }
O=(-s 4096 -n 1000)
# result_line FILE: the (first) BW result line of FILE
result_line() { awk '/^ [0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+/ { print; exit }' "$1"; }
# peak FILE: column 3 of the result line
peak() { result_line "$1" | awk '{ print $3 + 0 }'; }

# reversed TOOL SRV_KIND CLI_KIND: one --reversed pair (KIND: ours or C). The TCP server (no
# host) is the test client: it sends, shows "TX depth" in its header and prints its own line.
# The TCP client is the test server: no "TX depth", and perftest 6.06 prints its "Waiting for
# client" banner there.
reversed() {
    local tool=$1 sk=$2 ck=$3 srv=() cli=() O=(-s 4096 -n 1000)
    [ "$tool" = ib_atomic_bw ] && O=(-n 1000)
    if [ "$sk" = ours ]; then srv=(rperftest "$tool"); else srv=("$tool"); fi
    if [ "$ck" = ours ]; then cli=(rperftest "$tool"); else cli=("$tool"); fi
    log "== $tool --reversed: $ck client (receives) -> $sk server (sends)"
    pair "$tool" "${srv[@]}" "${X[@]}" "${O[@]}" --reversed -- "${cli[@]}" "${X[@]}" "${O[@]}" --reversed "$RXE_IP"
    local C=$VMTEST_TMP/client.out S=$SERVER_LOG
    grep -q "TX depth" "$S" || fail "$tool: the sending TCP server has no TX depth line"
    ! grep -q "TX depth" "$C" || fail "$tool: the receiving TCP client shows a TX depth line"
    grep -q "Waiting for client to connect" "$C" || fail "$tool: no banner on the test server (the TCP client)"
    ! grep -q "Waiting for client to connect" "$S" || fail "$tool: banner on the test client (the TCP server)"
    local lc ls
    lc=$(result_line "$C"); ls=$(result_line "$S")
    log "receiver (TCP client): $lc"
    log "sender   (TCP server): $ls"
    if [ "$tool" = ib_send_bw ]; then
        # The receiver measures its own receives: its own line, peak 0 as perftest's receivers.
        [ "$(peak "$C")" = 0 ] || fail "send_bw receiver line has a peak: $lc"
        echo "$lc" | awk '{ exit !($2 == 1000) }' || fail "send_bw receiver counted other than 1000 messages: $lc"
    else
        # The receiver prints the sender's numbers from the report exchange: the same line.
        [ "$lc" = "$ls" ] || fail "$tool: the receiver's line differs from the sender's"
    fi
}

for t in ib_write_bw ib_send_bw; do
    reversed "$t" ours ours
    if full; then
        reversed "$t" C ours
        reversed "$t" ours C
    fi
done
reversed ib_read_bw ours ours
reversed ib_atomic_bw ours ours
if full; then
    reversed ib_read_bw C ours
    reversed ib_atomic_bw ours C
fi

log "== --reversed is refused where it cannot work: latency tools, rdma_cm"
expect_rc 1 with_timeout 10 rperftest ib_send_lat "${X[@]}" --reversed
expect_contains "--reversed"; [ "$(wc -l <"$LAST_OUT")" = 1 ] || fail "not one line"
expect_rc 1 with_timeout 10 rperftest ib_write_bw "${X[@]}" -R --reversed
expect_contains "--reversed"; [ "$(wc -l <"$LAST_OUT")" = 1 ] || fail "not one line"

# counter_ok FILE NAME: a "\tNAME=<n>" line with n > 0 after the result line
counter_ok() {
    awk -v n="$2" 'seen && $0 ~ "^\t" n "=[0-9]+$" { split($0, a, "="); if (a[2] + 0 > 0) ok = 1 }
        /^ [0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+/ { seen = 1 } END { exit !ok }' "$1" \
        || { cat "$1"; fail "no non-zero $2 delta after the result line in $1"; }
}
W=hw_counters/sent_pkts,hw_counters/rcvd_pkts
log "== -W $W (write_bw ours <-> ours, both sides)"
cat "/sys/class/infiniband/$RXE_DEV/ports/1/hw_counters/sent_pkts"
pair ib_write_bw rperftest ib_write_bw "${X[@]}" "${O[@]}" -W "$W" -- rperftest ib_write_bw "${X[@]}" "${O[@]}" -W "$W" "$RXE_IP"
cat "/sys/class/infiniband/$RXE_DEV/ports/1/hw_counters/sent_pkts"
for f in "$VMTEST_TMP/client.out" "$SERVER_LOG"; do
    counter_ok "$f" hw_counters/sent_pkts
    counter_ok "$f" hw_counters/rcvd_pkts
done
# 1000 writes of 4096 B at MTU 1024 are at least 4000 packets, seen by the client.
awk -F= '/^\thw_counters\/sent_pkts=/ { exit !($2 >= 4000) }' "$VMTEST_TMP/client.out" || fail "sent_pkts delta below 4000"
log "== -W with --reversed (send_bw): the receiver's own line is followed by the deltas"
pair ib_send_bw rperftest ib_send_bw "${X[@]}" "${O[@]}" --reversed -W "$W" -- rperftest ib_send_bw "${X[@]}" "${O[@]}" --reversed -W "$W" "$RXE_IP"
counter_ok "$VMTEST_TMP/client.out" hw_counters/rcvd_pkts
counter_ok "$SERVER_LOG" hw_counters/sent_pkts
if full; then
    log "== -W: C client -> ours server, the same counter lines on both sides"
    pair ib_write_bw rperftest ib_write_bw "${X[@]}" "${O[@]}" -W "$W" -- ib_write_bw "${X[@]}" "${O[@]}" -W "$W" "$RXE_IP"
    counter_ok "$VMTEST_TMP/client.out" hw_counters/sent_pkts
    counter_ok "$SERVER_LOG" hw_counters/sent_pkts
    # The layout after the result line: the same counter names in the same order, then an
    # empty line (C's values are its own).
    shape() { awk '/^ [0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+/ { s = 1; next } s && /^\t/ { sub(/=[0-9]+$/, "="); print; next } s { print "[" $0 "]"; exit }' "$1"; }
    [ "$(shape "$VMTEST_TMP/client.out")" = "$(shape "$SERVER_LOG")" ] || {
        shape "$VMTEST_TMP/client.out"; shape "$SERVER_LOG"; fail "counter lines differ between C and ours"; }
fi
log "== -W with a latency tool (send_lat ours <-> ours)"
pair ib_send_lat rperftest ib_send_lat "${X[@]}" -n 200 -W hw_counters/sent_pkts -- rperftest ib_send_lat "${X[@]}" -n 200 -W hw_counters/sent_pkts "$RXE_IP"
counter_ok "$VMTEST_TMP/client.out" hw_counters/sent_pkts

log "== -W with a counter that does not exist: one line naming it, exit 1, nothing started"
mark
expect_rc 1 with_timeout 10 rperftest ib_write_bw "${X[@]}" -W hw_counters/no_such_counter
bound 5 "refusal"
expect_contains "Unable to access performance counters"
expect_contains "no_such_counter"
[ "$(wc -l <"$LAST_OUT")" = 1 ] || fail "not one line"
expect_not_contains "Waiting for client"
expect_rc 1 with_timeout 10 rperftest ib_write_bw "${X[@]}" -W ../../../../../../etc/passwd
expect_contains "report-counters"
if full; then
    run with_timeout 10 ib_write_bw "${X[@]}" -W hw_counters/no_such_counter
    log "C 6.06 with the same counter: rc=$LAST_RC (logged only)"
fi

log "== -O/--dualport on one-port rxe: one line naming the device and its port count, exit 1"
for extra in "" "-D 2 --report-per-port"; do
    mark
    expect_rc 1 with_timeout 10 rperftest ib_write_bw "${X[@]}" -O $extra
    bound 5 "-O $extra refusal"
    expect_contains "-O/--dualport: $RXE_DEV has 1 port;"
    [ "$(wc -l <"$LAST_OUT")" = 1 ] || fail "not one line"
    expect_not_contains "Waiting for client"
done
# the client side refuses before connecting too (no server is listening)
expect_rc 1 with_timeout 10 rperftest ib_send_bw "${X[@]}" -O "$RXE_IP"
expect_contains "$RXE_DEV has 1 port;"
log "all --reversed, -W and -O checks passed"
