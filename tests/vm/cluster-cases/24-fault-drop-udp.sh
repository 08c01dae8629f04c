#!/bin/bash
# fault drop-udp 4791: "ping works, RDMA fails".  With RoCE v2's UDP port
# dropped at node4, ping and the TCP exchange still work, and ib_write_bw
# ends on both sides with a clear error within its bound.  rxe retries an
# RC request for ever at perftest's retry_cnt 7 (its "infinite"), so no
# RETRY_EXC comes: the stall bound ends the client, lowered here to 15 s
# (RPERFTEST_STALL_TIMEOUT, the documented setting) so the case takes 20 s.
# timeout: 240
. "$CLUSTER_LIB"
X="-d rxe0 -x $GIDX"
"$CL" fault node4 drop-udp 4791 || fail "fault drop-udp"
on node3 ping -c1 -W5 node4 >/dev/null || fail "ping fails under drop-udp 4791"
bg node4 srv timeout 200 env RPERFTEST_STALL_TIMEOUT=15 rperftest ib_write_bw $X -s 4096 -n 200
wait_listen node4 18515 60
t0=$(date +%s)
on node3 timeout 200 env RPERFTEST_STALL_TIMEOUT=15 rperftest ib_write_bw $X -s 4096 -n 200 node4 >cli.out 2>&1; rc=$?
ends_with_error "client (RoCE dropped at the server)" cli.out "$rc" $(( $(date +%s) - t0 )) 45
grep -q "no progress for 15 s" cli.out || fail "client: not ended by its stall bound"
rc=$(wait_bg srv 90)
ends_with_error "server (RoCE dropped)" srv.out "$rc" $(( $(date +%s) - t0 )) 75
