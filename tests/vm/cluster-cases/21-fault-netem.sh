#!/bin/bash
# fault netem: 30 ms on node4's egress shows in ping and in ib_send_lat's
# figures (perftest's latency is half the round trip: >= 15 ms); clear
# takes it away.
# timeout: 240
. "$CLUSTER_LIB"
X="-d rxe0 -x $GIDX"
"$CL" fault node4 netem delay 30ms || fail "fault netem"
avg=$(on node3 ping -c3 node4 | sed -n 's|.*= [0-9.]*/\([0-9.]*\)/.*|\1|p')
echo "ping node3 -> node4 with netem 30ms: avg $avg ms"
awk "BEGIN{exit !($avg >= 30)}" || fail "ping avg $avg ms < 30 ms under netem delay 30ms"
pair "send_lat under netem" node4 "rperftest ib_send_lat $X -n 20" node3 "rperftest ib_send_lat $X -n 20" || fail "send_lat under netem"
tt=$(grep -E '^ *[0-9]+ +20 ' send_lat_under_netem.client | awk '{print $5}')
echo "t_typical $tt usec"
awk "BEGIN{exit !($tt >= 15000)}" || fail "t_typical $tt usec < 15000 under a 30 ms delay"
"$CL" fault node4 clear || fail "fault clear"
avg=$(on node3 ping -c3 node4 | sed -n 's|.*= [0-9.]*/\([0-9.]*\)/.*|\1|p')
echo "after clear: ping avg $avg ms"
awk "BEGIN{exit !($avg < 30)}" || fail "ping avg $avg ms after clear"
