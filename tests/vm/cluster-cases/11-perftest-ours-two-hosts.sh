#!/bin/bash
# rperftest against itself across two hosts: node3 (full) and node4 (bare), the same tools as
# case 10 with node3 serving, and the first of them (write_bw) the other way round too.
# timeout: 420
. "$CLUSTER_LIB"
bad=0
for t in "${TWO_HOST_TESTS[@]}"; do
    x=$(dev_args "$t")
    pair "ours server node3, ours client node4: $t" node3 "rperftest $t $x" node4 "rperftest $t $x" || bad=1
    # the other way round for write_bw only: ours is the same binary on both sides, so the
    # direction matters for the bare node's role, which write_bw shows both ways (CI time)
    [ "$t" = "${TWO_HOST_TESTS[0]}" ] || continue
    pair "ours server node4, ours client node3: $t" node4 "rperftest $t $x" node3 "rperftest $t $x" || bad=1
done
[ $bad = 0 ] || fail "some pairs failed"
