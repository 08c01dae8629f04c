#!/bin/bash
# rperftest against itself across two hosts: node3 (full) and node4 (bare),
# both directions, the same tools as case 10.
# timeout: 420
. "$CLUSTER_LIB"
bad=0
for t in "${TWO_HOST_TESTS[@]}"; do
    x=$(dev_args "$t")
    pair "ours server node3, ours client node4: $t" node3 "rperftest $t $x" node4 "rperftest $t $x" || bad=1
    pair "ours server node4, ours client node3: $t" node4 "rperftest $t $x" node3 "rperftest $t $x" || bad=1
done
[ $bad = 0 ] || fail "some pairs failed"
