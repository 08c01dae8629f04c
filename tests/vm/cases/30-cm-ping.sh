#!/bin/bash
# rdma_cm without librdmacm on the real kernel: `rperftest cm-ping` server and client connect an
# RC QP through /dev/infiniband/rdma_cm (56 bytes of private data each way checked), SEND one
# message each way, disconnect; then the error paths: a client given 127.0.0.1 gets the route
# hint fast, a client to a port nobody listens on is told so fast.
# mode: full
# (not in bare: the bare image differs only by lacking rdma-core, which 19-bare-all-tools covers)
# timeout: 180
. "$VMTEST_LIB"

PORT=18516
start_server -c rperftest cm-ping -d "$RXE_DEV" -p "$PORT" -t 30
run with_timeout 60 rperftest cm-ping -d "$RXE_DEV" -p "$PORT" --tos 32 "$RXE_IP"
if [ "$LAST_RC" != 0 ]; then
    wait_server 10
    fail "client exited $LAST_RC"
fi
for s in "ADDR_RESOLVED" "ROUTE_RESOLVED" "CONNECT_RESPONSE" "accept private data verified" \
         "ESTABLISHED" "SEND client→server: 256 bytes completed" \
         "SEND server→client: 256 bytes received and verified" "DISCONNECTED" "cm-ping: ok"; do
    expect_contains "$s"
done
wait_server 30
[ "$SERVER_RC" = 0 ] || fail "server exited $SERVER_RC"
for s in "CONNECT_REQUEST from" "private data verified (56 bytes)" "ESTABLISHED" \
         "SEND client→server: 256 bytes received and verified" "DISCONNECTED" "cm-ping: ok"; do
    expect_contains "$s" "$SERVER_LOG"
done
# No cm_id left behind by either side.
if rdma resource show cm_id 2>/dev/null | grep -q .; then
    rdma resource show cm_id
    fail "rdma_cm ids left after both sides exited"
fi

# 127.0.0.1: the kernel resolves the address but has no RDMA route to it.
t0=$(_uptime)
expect_rc 1 with_timeout 20 rperftest cm-ping -p "$PORT" -t 5 127.0.0.1
expect_contains "rdma_cm cannot route to 127.0.0.1; give the RDMA interface's address"
t1=$(_uptime)
awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a < 5) }' || fail "127.0.0.1 error took $t0 → $t1 s"

# Nobody listening on this port: rejected (or unreachable), said clearly, within the timeout.
t0=$(_uptime)
run with_timeout 30 rperftest cm-ping -p $((PORT + 1)) -t 5 "$RXE_IP"
[ "$LAST_RC" = 1 ] || fail "expected rc=1 to a port nobody listens on, got $LAST_RC"
grep -qE "rejected|UNREACHABLE" "$LAST_OUT" || fail "no REJECTED/UNREACHABLE message"
grep -qE "nobody listens|is the server running" "$LAST_OUT" || fail "no hint about the missing server"
t1=$(_uptime)
awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a < 10) }' || fail "nobody-listening error took $t0 → $t1 s"
log "cm-ping: connection, data and error paths ok"
