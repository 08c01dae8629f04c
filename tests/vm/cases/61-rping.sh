#!/bin/bash
# `rperftest rping` (rdma-core's rping over our own rdma_cm and verbs): `-C 10 -V` between
# ours and ours, and (full mode) ours client -> rdma-core's rping server and rping client ->
# ours server, also with -S 100 and -v; exit 0 on both sides, every run bounded. Then a dead
# peer: a client whose server is killed mid-run ends with one line within its --timeout;
# -P serves two clients in a row.
# mode: any
# timeout: 150
. "$VMTEST_LIB"

PORT=7174
# srv_cmd... -- cli_cmd...: both exit 0; the client prints 10 pings with -v.
rping_pair() {
    local srv=() name=$1; shift
    while [ "$1" != -- ]; do srv+=("$1"); shift; done; shift
    start_server -c "${srv[@]}"
    run with_timeout 40 "$@"
    if [ "$LAST_RC" != 0 ]; then
        wait_server 5
        fail "$name: client exited $LAST_RC"
    fi
    wait_server 15
    [ "$SERVER_RC" = 0 ] || fail "$name: server exited $SERVER_RC"
    case " $* " in *" -v "*)
        [ "$(grep -c '^ping data: rdma-ping-' "$LAST_OUT")" = 10 ] || fail "$name: not 10 'ping data' lines"
        expect_contains "ping data: rdma-ping-9: JKLMNOPQRSTUVWXYZ" ;;
    esac
    expect_contains "client DISCONNECT EVENT..."
    log "$name: ok"
}

mark
rping_pair "ours<->ours" rperftest rping -s -a "$RXE_IP" -p $PORT -V -- \
    rperftest rping -c -a "$RXE_IP" -p $PORT -C 10 -V -v
expect_contains "server DISCONNECT EVENT..." "$SERVER_LOG"
rping_pair "ours<->ours -S 100" rperftest rping -s -p $PORT -v -- \
    rperftest rping -c -a "$RXE_IP" -p $PORT -C 10 -V -S 100
[ "$(grep -c '^server ping data: rdma-ping-' "$SERVER_LOG")" = 10 ] || fail "server -v: not 10 lines"
bound 40 "ours<->ours"

if [ "$RXE_VM_MODE" = full ]; then
    require_cmd rping
    mark
    rping_pair "ours client -> rping server" rping -s -a "$RXE_IP" -p $PORT -V -- \
        rperftest rping -c -a "$RXE_IP" -p $PORT -C 10 -V -v
    rping_pair "ours client -> rping server -S 100" rping -s -a "$RXE_IP" -p $PORT -S 100 -- \
        rperftest rping -c -a "$RXE_IP" -p $PORT -C 10 -V -S 100
    rping_pair "rping client -> ours server" rperftest rping -s -a "$RXE_IP" -p $PORT -V -- \
        rping -c -a "$RXE_IP" -p $PORT -C 10 -V -v
    rping_pair "rping client -> ours server -S 100" rperftest rping -s -p $PORT -- \
        rping -c -a "$RXE_IP" -p $PORT -C 10 -V -S 100
    bound 60 "with rdma-core's rping"
fi

# -P: the server keeps serving, one client after another.
start_server -c rperftest rping -s -P -p $PORT
for n in 1 2; do
    expect_rc 0 with_timeout 30 rperftest rping -c -a "$RXE_IP" -p $PORT -C 3 -V
done
kill -0 "$SERVER_PID" 2>/dev/null || fail "-P server did not outlive its clients"
kill -TERM "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null
log "-P: two clients served"

# A dead peer: the server is killed while the client pings forever; the client ends with one
# clear line within its 3 s bound.
start_server -c rperftest rping -s -p $PORT
rperftest rping -c -a "$RXE_IP" -p $PORT --timeout 3 >"$VMTEST_TMP/dead.out" 2>&1 &
cpid=$!
sleep 1
kill -KILL "$SERVER_PID"
mark
wait_pid "$cpid" 20
cat "$VMTEST_TMP/dead.out"
[ "$PID_RC" = 1 ] || fail "client with a dead server exited $PID_RC, not 1"
[ "$(grep -c '^rping: ' "$VMTEST_TMP/dead.out")" = 1 ] || fail "not exactly one error line"
bound 15 "dead server noticed"
# Bad usage is one line and exit 2.
expect_rc 2 rperftest rping -c
expect_contains "rping: the client needs the server's address: -a ADDR"
log "ok"
