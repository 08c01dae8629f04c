#!/bin/bash
# rping between two hosts, `-C 10 -V`: ours <-> ours (full node1 and bare node2, both
# directions), ours client -> rdma-core's rping server, rdma-core's rping client -> ours
# server (full node3 and bare node2). Both sides exit 0; every run bounded.
# timeout: 300
. "$CLUSTER_LIB"
ip_of() { echo "10.77.0.${1#node}"; }
# wait_cm_listen NODE: until an rdma_cm id listens on NODE (at most 30 s)
wait_cm_listen() {
    on "$1" bash -c 'for i in $(seq 1 150); do rdma resource show cm_id 2>/dev/null | grep -q LISTEN && exit 0; sleep 0.2; done; exit 1' \
        || fail "no rdma_cm listener on $1 after 30 s"
}
# rping_pair LABEL SNODE "SERVER CMD" CNODE "CLIENT CMD" (the client gets -a SNODE's address)
rping_pair() {
    local label=$1 sn=$2 scmd=$3 cn=$4 ccmd=$5 tag crc rc
    tag=$(echo "$label" | tr -c 'a-zA-Z0-9\n' '_')
    # shellcheck disable=SC2086
    bg "$sn" "$tag.server" timeout 60 $scmd
    wait_cm_listen "$sn"
    # shellcheck disable=SC2086
    on "$cn" timeout 60 $ccmd -a "$(ip_of "$sn")" -C 10 -V -v >"$tag.client" 2>&1; crc=$?
    rc=$(wait_bg "$tag.server" 20)
    if [ "$crc" != 0 ] || [ "$rc" != 0 ] || [ "$(grep -c '^ping data: rdma-ping-' "$tag.client")" != 10 ]; then
        echo "FAILED: $label: client rc=$crc, server rc=$rc"
        echo "--- server ($sn: $scmd)"; cat "$tag.server.out"
        echo "--- client ($cn: $ccmd)"; cat "$tag.client"
        return 1
    fi
    echo "ok: $label: $(grep '^ping data: ' "$tag.client" | tail -1)"
}
bad=0
rping_pair "ours server node2, ours client node1" node2 "rperftest rping -s -V" node1 "rperftest rping -c" || bad=1
rping_pair "ours server node1, ours client node2" node1 "rperftest rping -s -V" node2 "rperftest rping -c" || bad=1
rping_pair "rping server node3, ours client node2" node3 "rping -s -V" node2 "rperftest rping -c" || bad=1
rping_pair "ours server node2, rping client node3" node2 "rperftest rping -s -V" node3 "rping -c" || bad=1
[ $bad = 0 ] || fail "some rping pairs failed"
