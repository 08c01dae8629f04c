#!/bin/bash
# Issue #5, the last three refusals: the HW rate limiter (--rate_limit alone and
# --rate_limit_type HW: a static rate at RTR, QUERY_QP, C 6.06's fallback to SW or failure on
# rxe, its lines and exit codes), --use-null-mr (no null MR on rxe: one line, exit 1; C 6.06
# does not know the option) and --dont_xchg_versions (skips the version/SYSDATA/MTU exchanges:
# works ours<->ours; C 6.06 aborts with it, and both mixed pairs end bounded with an error).
# mode: full
# (not in bare: the bare image differs only by lacking rdma-core, which 19-bare-all-tools covers)
# timeout: 900
. "$VMTEST_LIB"
X=(-d "$RXE_DEV" -x "$RXE_GID_IDX")
full() { [ "$RXE_VM_MODE" = full ]; }
ESC=$'\e'
FALLBACK="${ESC}[31mThe QP failed to accept HW rate limit, providing SW rate limit ${ESC}[0m"
FAILED="${ESC}[31mThe QP failed to accept HW rate limit  ${ESC}[0m"
UNABLE=" Unable to Connect the HCA's through the link"

# exact_line FILE LINE WHAT: FILE has LINE as a whole line, exactly once
exact_line() {
    local n
    n=$(grep -cxF -- "$2" "$1")
    [ "$n" = 1 ] || { cat -A "$1"; fail "$3: line '$(printf '%q' "$2")' found $n times in $1, want 1"; }
}
# after_header FILE LINE: LINE comes after the header's last line (printed at connect time,
# not while parsing); only for our output (C's stdout is block-buffered into a file)
after_header() {
    local h l
    h=$(grep -n -m1 -F " Data ex. method" "$1" | cut -d: -f1)
    l=$(grep -n -m1 -xF -- "$2" "$1" | cut -d: -f1)
    [ -n "$h" ] && [ -n "$l" ] && [ "$l" -gt "$h" ] || { cat "$1"; fail "'$2' is not after the header in $1"; }
}
# hw_lines FILE: the HW-limiter and connect-failure lines of FILE, in order
hw_lines() { grep -E "HW rate limit|Unable to Connect the HCA" "$1" || true; }

# failing_pair SRV... -- CLI...: both sides must exit non-zero within a bound
# (client log: $VMTEST_TMP/client.out, server: $SERVER_LOG; rcs: $CLI_RC, $SERVER_RC)
failing_pair() {
    local srv=() cli=()
    while [ "$1" != "--" ]; do srv+=("$1"); shift; done
    shift; cli=("$@")
    start_server -t 60 "${srv[@]}"
    mark
    run with_timeout 120 "${cli[@]}"
    CLI_RC=$LAST_RC
    cp "$LAST_OUT" "$VMTEST_TMP/client.out"
    wait_server 60
    bound 90 "both sides ended"
    [ "$CLI_RC" != 0 ] && [ "$CLI_RC" != 124 ] || fail "client rc=$CLI_RC, want a failure (not 0, not killed)"
    [ "$SERVER_RC" != 0 ] || fail "server rc=$SERVER_RC, want a failure"
}

log "=== 1. HW rate limiter"
log "== --rate_limit 10 alone (implicit HW) write_bw ours <-> ours: both fall back to SW with C's line"
pair ib_write_bw rperftest ib_write_bw "${X[@]}" -n 200 -s 4096 --rate_limit 10 -- \
    rperftest ib_write_bw "${X[@]}" -n 200 -s 4096 --rate_limit 10 "$RXE_IP"
for f in "$VMTEST_TMP/client.out" "$SERVER_LOG"; do
    exact_line "$f" "$FALLBACK" "implicit HW"
    after_header "$f" "$FALLBACK"
done

log "== implicit HW, send_bw -c UD (the rate goes into the address handle), ours <-> ours"
pair ib_send_bw rperftest ib_send_bw "${X[@]}" -c UD -n 200 -s 1024 --rate_limit 10 -- \
    rperftest ib_send_bw "${X[@]}" -c UD -n 200 -s 1024 --rate_limit 10 "$RXE_IP"
exact_line "$VMTEST_TMP/client.out" "$FALLBACK" "implicit HW UD client"
exact_line "$SERVER_LOG" "$FALLBACK" "implicit HW UD server"

log "== implicit HW with -q 2: one line (after the first QP the limiter is SW)"
pair ib_write_bw rperftest ib_write_bw "${X[@]}" -q 2 -n 100 -s 4096 --rate_limit 25 -- \
    rperftest ib_write_bw "${X[@]}" -q 2 -n 100 -s 4096 --rate_limit 25 "$RXE_IP"
exact_line "$VMTEST_TMP/client.out" "$FALLBACK" "implicit HW -q 2"

log "== --rate_limit_type HW (explicit) on the client, ours <-> ours: C's failure, exit 1"
failing_pair rperftest ib_write_bw "${X[@]}" -n 50 -- \
    rperftest ib_write_bw "${X[@]}" -n 50 --rate_limit 10 --rate_limit_type HW "$RXE_IP"
[ "$CLI_RC" = 1 ] || fail "explicit HW client rc=$CLI_RC, want 1"
exact_line "$VMTEST_TMP/client.out" "$FAILED" "explicit HW client"
exact_line "$VMTEST_TMP/client.out" "$UNABLE" "explicit HW client"
after_header "$VMTEST_TMP/client.out" "$FAILED"
expect_not_contains "#bytes" "$VMTEST_TMP/client.out"
OURS_EXPLICIT=$(hw_lines "$VMTEST_TMP/client.out")

log "== explicit HW on the server (no rate: static rate 0), ours <-> ours"
failing_pair rperftest ib_write_bw "${X[@]}" -n 50 --rate_limit_type HW -- \
    rperftest ib_write_bw "${X[@]}" -n 50 "$RXE_IP"
[ "$SERVER_RC" = 1 ] || fail "explicit HW server rc=$SERVER_RC, want 1"
exact_line "$SERVER_LOG" "$FAILED" "explicit HW server"
exact_line "$SERVER_LOG" "$UNABLE" "explicit HW server"

log "== explicit HW with --rate_units p: refused while parsing (C's message)"
expect_rc 1 with_timeout 10 rperftest ib_write_bw "${X[@]}" --rate_limit 10 --rate_units p --rate_limit_type HW
expect_contains "pps rate limit units is not supported when setting HW rate limit"

if full; then
    log "== implicit HW write_bw: ours -> C server"
    pair ib_write_bw ib_write_bw "${X[@]}" -n 200 -s 4096 --rate_limit 10 -- \
        rperftest ib_write_bw "${X[@]}" -n 200 -s 4096 --rate_limit 10 "$RXE_IP"
    exact_line "$VMTEST_TMP/client.out" "$FALLBACK" "implicit HW, ours -> C (ours)"
    exact_line "$SERVER_LOG" "$FALLBACK" "implicit HW, ours -> C (C)"
    log "== implicit HW write_bw: C client -> ours"
    pair ib_write_bw rperftest ib_write_bw "${X[@]}" -n 200 -s 4096 --rate_limit 10 -- \
        ib_write_bw "${X[@]}" -n 200 -s 4096 --rate_limit 10 "$RXE_IP"
    exact_line "$VMTEST_TMP/client.out" "$FALLBACK" "implicit HW, C -> ours (C)"
    exact_line "$SERVER_LOG" "$FALLBACK" "implicit HW, C -> ours (ours)"
    log "== explicit HW: C client -> ours server (C's own lines, to compare)"
    failing_pair rperftest ib_write_bw "${X[@]}" -n 50 -- \
        ib_write_bw "${X[@]}" -n 50 --rate_limit 10 --rate_limit_type HW "$RXE_IP"
    [ "$CLI_RC" = 1 ] || fail "C explicit HW client rc=$CLI_RC, want 1"
    C_EXPLICIT=$(hw_lines "$VMTEST_TMP/client.out")
    [ "$OURS_EXPLICIT" = "$C_EXPLICIT" ] || fail "explicit HW lines differ: ours [$OURS_EXPLICIT] C [$C_EXPLICIT]"
    log "explicit HW lines identical to C 6.06's"
    log "== explicit HW: ours client -> C server"
    failing_pair ib_write_bw "${X[@]}" -n 50 -- \
        rperftest ib_write_bw "${X[@]}" -n 50 --rate_limit 10 --rate_limit_type HW "$RXE_IP"
    [ "$CLI_RC" = 1 ] || fail "explicit HW client rc=$CLI_RC, want 1"
    exact_line "$VMTEST_TMP/client.out" "$FAILED" "explicit HW, ours -> C"
    log "== explicit HW on a C server, ours client"
    failing_pair ib_write_bw "${X[@]}" -n 50 --rate_limit_type HW --rate_limit 10 -- \
        rperftest ib_write_bw "${X[@]}" -n 50 "$RXE_IP"
    exact_line "$SERVER_LOG" "$FAILED" "explicit HW C server"
fi

log "=== 2. --use-null-mr"
nullmr() {
    mark
    expect_rc 1 with_timeout 20 rperftest "$@"
    bound 10 "--use-null-mr refusal"
    expect_contains "Couldn't create null MR: --use-null-mr needs a device with a null memory key"
    expect_contains "$RXE_DEV (rxe) has none"
    [ "$(wc -l <"$LAST_OUT")" = 1 ] || fail "--use-null-mr: not one line"
}
log "== server: refused before listening (rxe has no null MR)"
nullmr ib_write_bw "${X[@]}" --use-null-mr
log "== client, read_lat"
nullmr ib_read_lat "${X[@]}" --use-null-mr "$RXE_IP"
log "== send_bw: perftest's verb check (write/read only)"
expect_rc 1 with_timeout 10 rperftest ib_send_bw "${X[@]}" --use-null-mr
expect_contains "Perftest supports using a null memory region with write/read verbs only"
if full; then
    log "== C 6.06 does not know --use-null-mr (added in 6.13)"
    expect_rc 1 with_timeout 10 ib_write_bw "${X[@]}" --use-null-mr
    expect_contains "unrecognized option '--use-null-mr'"
fi

log "=== 3. --dont_xchg_versions"
log "== write_bw, both sides with the flag, ours <-> ours"
pair ib_write_bw rperftest ib_write_bw "${X[@]}" -n 200 -s 4096 --dont_xchg_versions -- \
    rperftest ib_write_bw "${X[@]}" -n 200 -s 4096 --dont_xchg_versions "$RXE_IP"
grep -q "Mtu             : 1024\[B\]" "$VMTEST_TMP/client.out" || fail "no local MTU in the header"
log "== send_lat, both sides with the flag, ours <-> ours"
pair ib_send_lat rperftest ib_send_lat "${X[@]}" -n 100 -s 64 --dont_xchg_versions -- \
    rperftest ib_send_lat "${X[@]}" -n 100 -s 64 --dont_xchg_versions "$RXE_IP"
log "== read_bw -b, both sides with the flag, ours <-> ours"
pair ib_read_bw rperftest ib_read_bw "${X[@]}" -b -n 100 -s 4096 --dont_xchg_versions -- \
    rperftest ib_read_bw "${X[@]}" -b -n 100 -s 4096 --dont_xchg_versions "$RXE_IP"
log "== only the client has the flag: the server sees a key record where the version belongs"
failing_pair rperftest ib_write_bw "${X[@]}" -n 50 -- \
    rperftest ib_write_bw "${X[@]}" -n 50 --dont_xchg_versions "$RXE_IP"
expect_contains "give --dont_xchg_versions to both sides or to neither" "$SERVER_LOG"
expect_contains "peer closed the connection during the key exchange" "$VMTEST_TMP/client.out"
log "== only the server has the flag: both wait for bytes that never come, bounded (OOB timeout 10 s)"
failing_pair env RPERFTEST_OOB_TIMEOUT=10 rperftest ib_write_bw "${X[@]}" -n 50 --dont_xchg_versions -- \
    env RPERFTEST_OOB_TIMEOUT=10 rperftest ib_write_bw "${X[@]}" -n 50 "$RXE_IP"
# the server got the client's 16-byte version block where a 108-byte key record belongs
expect_contains "during the key exchange (received 16 of 108 bytes)" "$SERVER_LOG"
expect_contains "no answer from peer for 10 s during the version exchange" "$VMTEST_TMP/client.out"
if full; then
    C_ABORT="Current implementation is not compatible with versions older than 5.70"
    log "== C 6.06 with the flag on both sides: it aborts after connecting (its own behaviour)"
    failing_pair ib_write_bw "${X[@]}" -n 50 --dont_xchg_versions -- \
        ib_write_bw "${X[@]}" -n 50 --dont_xchg_versions "$RXE_IP"
    exact_line "$VMTEST_TMP/client.out" "$C_ABORT" "C client"
    exact_line "$SERVER_LOG" "$C_ABORT" "C server"
    log "== ours client -> C server, both with the flag: C aborts, ours ends with an error"
    failing_pair ib_write_bw "${X[@]}" -n 50 --dont_xchg_versions -- \
        rperftest ib_write_bw "${X[@]}" -n 50 --dont_xchg_versions "$RXE_IP"
    exact_line "$SERVER_LOG" "$C_ABORT" "C server"
    [ "$CLI_RC" = 1 ] || fail "ours client rc=$CLI_RC, want 1"
    log "== C client -> ours server, both with the flag: C aborts, ours ends with an error"
    failing_pair rperftest ib_write_bw "${X[@]}" -n 50 --dont_xchg_versions -- \
        ib_write_bw "${X[@]}" -n 50 --dont_xchg_versions "$RXE_IP"
    exact_line "$VMTEST_TMP/client.out" "$C_ABORT" "C client"
    [ "$SERVER_RC" = 1 ] || fail "ours server rc=$SERVER_RC, want 1"
fi
log "all HW options checked"
