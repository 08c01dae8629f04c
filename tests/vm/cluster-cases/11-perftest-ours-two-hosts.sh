#!/bin/bash
# rperftest against itself across two hosts: node3 (full) and node4 (bare),
# both directions, the same tools as case 10.
# timeout: 420
. "$CLUSTER_LIB"
bad=0
X="-d rxe0 -x $GIDX"
for t in "ib_write_bw -s 4096 -n 200" "ib_read_bw -s 4096 -n 200" "ib_send_lat -n 100" \
         "ib_atomic_bw -A FETCH_AND_ADD -n 200" "ib_write_bw -R -s 4096 -n 200"; do
    x=$X; case "$t" in *" -R"*) x="-d rxe0" ;; esac
    pair "ours server node3, ours client node4: $t" node3 "rperftest $t $x" node4 "rperftest $t $x" || bad=1
    pair "ours server node4, ours client node3: $t" node4 "rperftest $t $x" node3 "rperftest $t $x" || bad=1
done
[ $bad = 0 ] || fail "some pairs failed"
