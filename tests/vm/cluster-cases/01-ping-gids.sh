#!/bin/bash
# Every node pings every other by name, and each node's rxe0 is ACTIVE on eth0
# with the RoCE v2 GID of its own address at index 1.
# timeout: 120
. "$CLUSTER_LIB"
for a in $(seq 1 "$CLUSTER_NODES"); do
    peers=""; for b in $(seq 1 "$CLUSTER_NODES"); do [ $a = $b ] || peers+=" node$b"; done
    on "node$a" bash -c "for p in $peers; do ping -c1 -W5 \$p >/dev/null || { echo \"node$a cannot ping \$p\"; exit 1; }; done" \
        || fail "ping from node$a"
    gid=$(on "node$a" cat /sys/class/infiniband/rxe0/ports/1/gids/$GIDX)
    want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' 10 77 0 "$a")
    [ "$gid" = "$want" ] || fail "node$a GID $GIDX is $gid, want $want"
    typ=$(on "node$a" cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/$GIDX)
    [ "$typ" = "RoCE v2" ] || fail "node$a GID $GIDX type $typ"
    on "node$a" rdma link show rxe0/1 | grep -q 'state ACTIVE.*netdev eth0' || fail "node$a rxe0 not ACTIVE on eth0"
    echo "node$a: pings$peers; GID $GIDX $gid (RoCE v2)"
done
