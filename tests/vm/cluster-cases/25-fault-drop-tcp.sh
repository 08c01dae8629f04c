#!/bin/bash
# fault drop-tcp 18515: perftest's exchange port blocked at the server's node;
# the client ends with a clear error within its bound.
# timeout: 240
. "$CLUSTER_LIB"
X="-d rxe0 -x $GIDX"
"$CL" fault node4 drop-tcp 18515 || fail "fault drop-tcp"
bg node4 srv timeout 200 rperftest ib_write_bw $X -s 4096 -n 200
wait_listen node4 18515 60
t0=$(date +%s)
on node3 timeout 200 rperftest ib_write_bw $X -s 4096 -n 200 node4 >cli.out 2>&1; rc=$?
ends_with_error "client (port 18515 dropped)" cli.out "$rc" $(( $(date +%s) - t0 )) 150
on node4 bash -c 'kill $(pidof rperftest) 2>/dev/null'; wait_bg srv 30 >/dev/null
