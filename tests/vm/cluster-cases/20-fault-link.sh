#!/bin/bash
# fault link-down / link-up: the cable of the server's node is pulled in the
# middle of a run.  The client ends with a clear error within its bound;
# once the link is back, the server ends too, and a new run passes.
# timeout: 300
. "$CLUSTER_LIB"
X="-d rxe0 -x $GIDX"
bg node3 srv timeout 250 rperftest ib_write_bw $X -s 4096 -n 2000000
wait_listen node3 18515 60
bg node4 cli timeout 250 rperftest ib_write_bw $X -s 4096 -n 2000000 node3
sleep 8
"$CL" fault node3 link-down || fail "fault link-down"
t0=$(date +%s)
on node1 ping -c1 -W3 node3 >/dev/null && fail "node3 still answers ping after link-down"
rc=$(wait_bg cli 120)
ends_with_error "client (peer's link down)" cli.out "$rc" $(( $(date +%s) - t0 )) 120
"$CL" fault node3 link-up || fail "fault link-up"
on node1 bash -c 'for i in $(seq 30); do ping -c1 -W1 node3 >/dev/null && exit 0; done; exit 1' || fail "no ping after link-up"
rc=$(wait_bg srv 120)
ends_with_error "server (client gone)" srv.out "$rc" $(( $(date +%s) - t0 )) 180
pair "after link-up" node3 "rperftest ib_write_bw $X -s 4096 -n 200" node4 "rperftest ib_write_bw $X -s 4096 -n 200" || fail "run after link-up"
