#!/bin/bash
# -R/-z errors are one clear line and come within a bound: a client given 127.0.0.1 is told to
# use the RDMA interface's address; a client with nobody listening is told so; a host name that
# does not resolve is named. -T (ToS) is accepted with -R (ours<->ours, and towards C perftest)
# and rejected without it.
# mode: full
# (not in bare: the bare image differs only by lacking rdma-core, which 19-bare-all-tools covers)
# timeout: 300
. "$VMTEST_LIB"

elapsed_below() {  # T0 LIMIT WHAT
    local t1; t1=$(_uptime)
    awk -v a="$1" -v b="$t1" -v l="$2" 'BEGIN { exit !(b - a < l) }' || fail "$3 took $(awk -v a="$1" -v b="$t1" 'BEGIN{print b-a}') s (limit $2 s)"
}

log "== 127.0.0.1: no RDMA route"
t0=$(_uptime)
run with_timeout 30 rperftest ib_write_bw -d "$RXE_DEV" -R -n 10 127.0.0.1
[ "$LAST_RC" != 0 ] && [ "$LAST_RC" != 124 ] || fail "expected a non-zero exit (not a timeout), got $LAST_RC"
expect_contains "rdma_cm cannot route to 127.0.0.1; give the RDMA interface's address"
elapsed_below "$t0" 10 "the 127.0.0.1 error"

log "== -z to 127.0.0.1 as well"
run with_timeout 30 rperftest ib_write_bw -d "$RXE_DEV" -z -n 10 127.0.0.1
[ "$LAST_RC" != 0 ] && [ "$LAST_RC" != 124 ] || fail "expected a non-zero exit, got $LAST_RC"
expect_contains "give the RDMA interface's address"

log "== nobody listening"
t0=$(_uptime)
run with_timeout 60 rperftest ib_write_bw -d "$RXE_DEV" -R -p 18600 -n 10 "$RXE_IP"
[ "$LAST_RC" != 0 ] && [ "$LAST_RC" != 124 ] || fail "expected a non-zero exit (not a timeout), got $LAST_RC"
grep -qE "rejected|UNREACHABLE" "$LAST_OUT" || fail "no REJECTED/UNREACHABLE message"
grep -qE "nobody listens|is the server running" "$LAST_OUT" || fail "no hint about the missing server"
elapsed_below "$t0" 20 "the nobody-listening error"

log "== a host name that does not resolve"
t0=$(_uptime)
run with_timeout 60 rperftest ib_write_bw -d "$RXE_DEV" -R -n 10 no-such-host.invalid
[ "$LAST_RC" != 0 ] && [ "$LAST_RC" != 124 ] || fail "expected a non-zero exit, got $LAST_RC"
expect_contains "cannot resolve host no-such-host.invalid"
elapsed_below "$t0" 30 "the unresolvable-host error"

log "== -T without -R is refused"
run with_timeout 30 rperftest ib_write_bw -d "$RXE_DEV" -T 32 -n 10 "$RXE_IP"
[ "$LAST_RC" != 0 ] || fail "-T without -R was accepted"
expect_contains "TOS only valid for rdma_cm based QP"

log "== -T 32 with -R, ours <-> ours"
start_server -c -t 60 rperftest ib_write_bw -d "$RXE_DEV" -R -T 32 -n 100
run with_timeout 120 rperftest ib_write_bw -d "$RXE_DEV" -R -T 32 -n 100 "$RXE_IP"
cp "$LAST_OUT" "$VMTEST_TMP/client.out"
wait_server 60
[ "$LAST_RC" = 0 ] || fail "client rc=$LAST_RC with -T 32"
[ "$SERVER_RC" = 0 ] || fail "server rc=$SERVER_RC with -T 32"
bw_sane "$VMTEST_TMP/client.out"
grep -qE "TOS +: 32" "$VMTEST_TMP/client.out" || fail "client header does not show TOS 32"
if [ "$RXE_VM_MODE" = full ]; then
    log "== -T 32 with -R, ours -> C server"
    start_server -c -t 60 ib_write_bw -d "$RXE_DEV" -R -T 32 -n 100
    run with_timeout 120 rperftest ib_write_bw -d "$RXE_DEV" -R -T 32 -n 100 "$RXE_IP"
    cp "$LAST_OUT" "$VMTEST_TMP/client.out"
    wait_server 60
    [ "$LAST_RC" = 0 ] || fail "client rc=$LAST_RC with -T 32 against C"
    [ "$SERVER_RC" = 0 ] || fail "C server rc=$SERVER_RC with -T 32"
    bw_sane "$VMTEST_TMP/client.out"
fi
log "rdma_cm errors and ToS: ok"
