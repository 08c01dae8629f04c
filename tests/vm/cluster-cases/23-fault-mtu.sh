#!/bin/bash
# fault mtu: node4's netdev MTU 1000 drops rxe0's active MTU from 1024 to 512
# (rperftest devinfo shows it, ib_write_bw runs with it); clear restores 1500.
# timeout: 180
. "$CLUSTER_LIB"
X="-d rxe0 -x $GIDX"
mtu() { on node4 rperftest devinfo | sed -n 's/.*active_mtu:[[:space:]]*\([0-9]*\).*/\1/p' | head -1; }
[ "$(mtu)" = 1024 ] || fail "node4 active_mtu $(mtu) before the fault, want 1024"
"$CL" fault node4 mtu 1000 || fail "fault mtu"
[ "$(mtu)" = 512 ] || fail "node4 active_mtu $(mtu) with netdev MTU 1000, want 512"
echo "node4 netdev MTU 1000: active_mtu 512"
pair "write_bw at MTU 1000" node4 "rperftest ib_write_bw $X -s 4096 -n 100" node3 "rperftest ib_write_bw $X -s 4096 -n 100" || fail "write_bw at MTU 1000"
grep -q 'Mtu *: 512\[B\]' write_bw_at_MTU_1000.server.out || fail "node4's ib_write_bw does not use MTU 512"
"$CL" fault node4 clear || fail "fault clear"
[ "$(mtu)" = 1024 ] || fail "active_mtu $(mtu) after clear"
