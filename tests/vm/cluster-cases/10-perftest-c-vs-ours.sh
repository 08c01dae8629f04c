#!/bin/bash
# Two hosts, real RoCE v2 packets between two kernels: C perftest on node1
# (full image) against rperftest on node2 (bare: no rdma-core at all), each as
# server and as client, for write_bw, read_bw, send_lat, atomic_bw and
# write_bw over rdma_cm (-R).  Covers the bare-against-full case too.
# timeout: 600
. "$CLUSTER_LIB"
is_bare node2 || fail "node2 should be bare"
on node2 bash -c '! ls /usr/lib/x86_64-linux-gnu/libibverbs* /usr/bin/ib_write_bw 2>/dev/null' || fail "node2 has rdma-core"
bad=0
X="-d rxe0 -x $GIDX"
for t in "ib_write_bw -s 4096 -n 200" "ib_read_bw -s 4096 -n 200" "ib_send_lat -n 100" \
         "ib_atomic_bw -A FETCH_AND_ADD -n 200" "ib_write_bw -R -s 4096 -n 200"; do
    x=$X; case "$t" in *" -R"*) x="-d rxe0" ;; esac
    pair "C server node1, ours client node2: $t" node1 "$t $x" node2 "rperftest $t $x" || bad=1
    pair "ours server node2, C client node1: $t" node2 "rperftest $t $x" node1 "$t $x" || bad=1
done
[ $bad = 0 ] || fail "some pairs failed"
