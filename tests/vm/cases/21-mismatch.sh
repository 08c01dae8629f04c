#!/bin/bash
# ib_send_bw client -s 128 against a server posting 64-byte receives: between two rperftest
# sides the option exchange names it at once; against C perftest 6.06 (no negotiation) the
# fabric does. Both sides must fail (non-zero) within a bound, and the message must point at
# -s. Also a client with no server: a clear error, non-zero, bounded.
# mode: full
# (not in bare: the bare image differs only by lacking rdma-core, which 19-bare-all-tools covers)
# timeout: 180
. "$VMTEST_LIB"
X=(-d "$RXE_DEV" -x "$RXE_GID_IDX")
# Two rperftest sides compare their options first (56-mismatch-ours has the others).
start_server -t 60 rperftest ib_send_bw "${X[@]}" -n 100 -s 64
run with_timeout 90 rperftest ib_send_bw "${X[@]}" -n 100 -s 128 "$RXE_IP"
[ "$LAST_RC" = 1 ] || fail "client rc=$LAST_RC, want 1"
expect_contains "-s: this side 128, peer 64"
wait_server 90
[ "$SERVER_RC" = 1 ] || fail "server rc=$SERVER_RC, want 1"
grep -qF -- "-s: this side 64, peer 128" "$SERVER_LOG" || fail "server message does not name -s"
if [ "$RXE_VM_MODE" = full ]; then
    log "== C client -s 128 -> our server -s 64: the fabric's length error, named"
    start_server -t 60 rperftest ib_send_bw "${X[@]}" -n 100 -s 64
    run with_timeout 90 ib_send_bw "${X[@]}" -n 100 -s 128 "$RXE_IP"
    [ "$LAST_RC" != 0 ] && [ "$LAST_RC" != 124 ] || fail "C client rc=$LAST_RC (want a failure, not a hang)"
    wait_server 90
    case "$SERVER_RC" in 0|124|"") fail "server rc=$SERVER_RC (want a failure)";; esac
    grep -q "LOC_LEN_ERR\|Local length error\|Completion with error at server" "$SERVER_LOG" || fail "server did not name the length error"
    grep -q -- "-s" "$SERVER_LOG" || fail "server message does not name -s"
    log "== same mismatch, C server"
    start_server -t 60 ib_send_bw "${X[@]}" -n 100 -s 64
    run with_timeout 150 rperftest ib_send_bw "${X[@]}" -n 100 -s 128 "$RXE_IP"
    [ "$LAST_RC" != 0 ] && [ "$LAST_RC" != 124 ] || fail "client rc=$LAST_RC"
    expect_contains "Completion with error at client"
    wait_server 150
fi
log "== no server"
run with_timeout 60 rperftest ib_write_bw "${X[@]}" -p 18999 "$RXE_IP"
[ "$LAST_RC" = 1 ] || fail "rc=$LAST_RC, want 1"
expect_contains "Couldn't connect to $RXE_IP:18999"
