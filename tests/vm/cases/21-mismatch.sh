#!/bin/bash
# A mismatch the exchange does not catch (6.06 has no parameter negotiation) but the fabric
# does: ib_send_bw client -s 128 against a server posting 64-byte receives. Both sides must
# fail (non-zero) within a bound, and the message must point at -s. Also a client with no
# server: a clear error, non-zero, bounded.
# mode: any
# timeout: 180
. "$VMTEST_LIB"
X=(-d "$RXE_DEV" -x "$RXE_GID_IDX")
start_server -t 60 rperftest ib_send_bw "${X[@]}" -n 100 -s 64
run with_timeout 90 rperftest ib_send_bw "${X[@]}" -n 100 -s 128 "$RXE_IP"
[ "$LAST_RC" != 0 ] && [ "$LAST_RC" != 124 ] || fail "client rc=$LAST_RC (want a failure, not a hang)"
expect_contains "Completion with error at client"
expect_contains "-s"
wait_server 90
case "$SERVER_RC" in 0|124|"") fail "server rc=$SERVER_RC (want a failure)";; esac
grep -q "LOC_LEN_ERR\|Local length error\|Completion with error at server" "$SERVER_LOG" || fail "server did not name the length error"
grep -q -- "-s" "$SERVER_LOG" || fail "server message does not name -s"
if [ "$RXE_VM_MODE" = full ]; then
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
