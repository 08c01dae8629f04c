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
for t in "${TWO_HOST_TESTS[@]}"; do
    x=$(dev_args "$t")
    pair "C server node1, ours client node2: $t" node1 "$t $x" node2 "rperftest $t $x" || bad=1
    pair "ours server node2, C client node1: $t" node2 "rperftest $t $x" node1 "$t $x" || bad=1
done
[ $bad = 0 ] || fail "some pairs failed"
