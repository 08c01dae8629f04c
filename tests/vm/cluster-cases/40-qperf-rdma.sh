#!/bin/bash
# `rperftest qperf` RDMA tests between two hosts (issue 22): our server on node2 (bare), our
# client on node1 (full): non-CM rc_bw, uc_lat, ud_lat (the GIDs travel in our extension) and
# -cm1 rc_lat, 1 s each; then `quit` (the server runs with --allow-quit). Expected: ~20 s.
# timeout: 180
. "$CLUSTER_LIB"
bg node2 qserver timeout 120 rperftest qperf --allow-quit
wait_listen node2 19765 30
on node1 timeout 90 rperftest qperf 10.77.0.2 -t 1 rc_bw uc_lat ud_lat -cm1 rc_lat >client.out 2>&1; crc=$?
cat client.out
[ "$crc" = 0 ] || fail "client rc=$crc"
for t in rc_bw uc_lat ud_lat rc_lat; do
    awk -v t="$t:" 'found && /^[a-z_]+:$/ { exit } $0 == t { found = 1; next }
        found && /^ +(bw|send_bw|recv_bw|latency) += +[0-9]/ { n++ } END { exit !(n > 0) }' client.out \
        || fail "no figures for $t"
done
on node1 timeout 30 rperftest qperf 10.77.0.2 quit >quit.out 2>&1 || { cat quit.out; fail "quit failed"; }
rc=$(wait_bg qserver 20)
cat qserver.out
[ "$rc" = 0 ] || fail "server rc=$rc"
echo "ok: qperf RDMA node1 -> node2"
