#!/bin/bash
# Signals and killed peers (issue #8 items 2 and 5): Ctrl-C (SIGINT) and SIGTERM stop a server
# waiting for its client, a client in the middle of the test and a latency server within 2 s,
# with exit 128+signal and one line; the peer then ends too, naming what happened. kill -9 of one
# side mid-test: the survivor ends within 2 s (it watches the OOB connection during the test)
# instead of at the data-path stall timeout. No QP is left behind.
# mode: full
# (not in bare: the bare image differs only by lacking rdma-core, which 19-bare-all-tools covers)
# timeout: 300
. "$VMTEST_LIB"
X=(-d "$RXE_DEV" -x "$RXE_GID_IDX")
no_qps_left() {
    local n
    n=$(rdma resource show qp 2>/dev/null | grep -v "lqpn 1 " | grep -c "rperftest")
    [ "$n" = 0 ] || { rdma resource show qp; fail "$n QP(s) of rperftest left"; }
}

log "== SIGINT to a server waiting for its client"
start_server rperftest ib_write_bw "${X[@]}"
mark; kill -INT "$SERVER_PID"
wait_server 10
bound 2 "server waiting for a client"
[ "$SERVER_RC" = 130 ] || fail "server rc=$SERVER_RC, want 130"
grep -qF "stopped by SIGINT (Ctrl-C) during the wait for a client" "$SERVER_LOG" || fail "message"

log "== SIGINT to a client in the middle of a 60 s test; the server then ends too"
start_server rperftest ib_write_bw "${X[@]}" -D 60
rperftest ib_write_bw "${X[@]}" -D 60 "$RXE_IP" >client.log 2>&1 &
C=$!; _VMTEST_BG+=("$C")
wait_for_text client.log "#bytes" 60
sleep 1
mark; kill -INT "$C"
wait_pid "$C" 10; cat client.log
bound 2 "client"
[ "$PID_RC" = 130 ] || fail "client rc=$PID_RC, want 130"
grep -qF "stopped by SIGINT (Ctrl-C) during the test; resources released" client.log || fail "client message"
wait_server 10
bound 3 "server after the client's Ctrl-C"
[ "$SERVER_RC" = 1 ] || fail "server rc=$SERVER_RC, want 1"
grep -qF "peer closed the connection during the key exchange" "$SERVER_LOG" || fail "server message"
no_qps_left

log "== SIGTERM to a latency server in the middle of the test (both sides in the data path)"
start_server rperftest ib_send_lat "${X[@]}" -D 60
rperftest ib_send_lat "${X[@]}" -D 60 "$RXE_IP" >client.log 2>&1 &
C=$!; _VMTEST_BG+=("$C")
wait_for_text client.log "#bytes" 60
sleep 1
mark; kill -TERM "$SERVER_PID"
wait_server 10
bound 2 "latency server"
[ "$SERVER_RC" = 143 ] || fail "server rc=$SERVER_RC, want 143"
grep -qF "stopped by SIGTERM during the test" "$SERVER_LOG" || fail "server message"
wait_pid "$C" 10; cat client.log
bound 3 "latency client after the server's SIGTERM"
[ "$PID_RC" != 0 ] || fail "client rc=0"
grep -qF "peer closed the connection during the test" client.log || fail "client message"
no_qps_left

log "== kill -9 of the client in the middle of a send_bw test (the server is in the data path)"
start_server rperftest ib_send_bw "${X[@]}" -D 60
rperftest ib_send_bw "${X[@]}" -D 60 "$RXE_IP" >client.log 2>&1 &
C=$!; _VMTEST_BG+=("$C")
wait_for_text client.log "#bytes" 60
sleep 1
mark; kill -KILL "$C"
wait_server 10
bound 2 "send_bw server after kill -9 of the client"
[ "$SERVER_RC" != 0 ] || fail "server rc=0"
grep -qF "peer closed the connection during the test" "$SERVER_LOG" || fail "server message"

log "== kill -9 of the server in the middle of a write_bw test (the client is in the data path)"
start_server rperftest ib_write_bw "${X[@]}" -D 60
rperftest ib_write_bw "${X[@]}" -D 60 "$RXE_IP" >client.log 2>&1 &
C=$!; _VMTEST_BG+=("$C")
wait_for_text client.log "#bytes" 60
sleep 1
mark; kill -KILL "$SERVER_PID"
wait_pid "$C" 10; cat client.log
bound 2 "write_bw client after kill -9 of the server"
[ "$PID_RC" = 1 ] || fail "client rc=$PID_RC, want 1"
grep -qE "peer closed the connection during the test|RETRY_EXC" client.log || fail "client message"
no_qps_left
