#!/bin/bash
# fault kill (numbered 99 to run last: node4 stays dead): the server's VM is killed outright in
# the middle of a run; the client ends with a clear error within its bound,
# and cluster status says node4 stopped.
# timeout: 240
. "$CLUSTER_LIB"
X="-d rxe0 -x $GIDX"
bg node4 srv timeout 200 rperftest ib_write_bw $X -s 4096 -n 2000000
wait_listen node4 18515 60
bg node3 cli timeout 200 rperftest ib_write_bw $X -s 4096 -n 2000000 node4
sleep 8
"$CL" fault node4 kill || fail "fault kill"
t0=$(date +%s)
rc=$(wait_bg cli 150)
ends_with_error "client (server's node killed)" cli.out "$rc" $(( $(date +%s) - t0 )) 120
"$CL" status | grep -q '^node4 .* stopped' || fail "status does not show node4 stopped"
