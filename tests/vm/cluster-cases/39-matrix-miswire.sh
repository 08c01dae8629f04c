#!/bin/bash
# node2's rail-1 NIC moved onto rail 0's segment (cluster.sh miswire node2 1 0: the crossed
# cable): `matrix --preflight-only` names it from the wire check's ARP answers, with node,
# device and the segment it is on, before any pair runs; exit 1. After `fault node2 clear`,
# the same check exits 0.
# rails: 2
# timeout: 240
. "$CLUSTER_LIB"
"$CL" miswire node2 1 0 || fail "miswire"
on node1 rperftest matrix --launcher ssh --preflight-timeout 120 --hosts "node[1-$MATRIX_NODES]" --preflight-only \
    --out /tmp/m39a >m.out 2>m.err; rc=$?
"$CL" fault node2 clear
cat m.out; echo "--- stderr"; cat m.err
[ "$rc" = 1 ] || fail "miswired: exit $rc, want 1"
grep -qx "node2's rxe1 is on rail rxe0's segment (10.77.0.0/24), not rail rxe1's: check its cable" m.out \
    || fail "the miswire is not named"
grep -q "^  node2 rxe1 is miswired: on rail rxe0's segment" m.out || fail "node2's rail rxe1 not marked"
[ "$(grep -c "is on rail .* segment" m.out)" = 1 ] || fail "another NIC named as miswired"
on node1 rperftest matrix --launcher ssh --preflight-timeout 120 --hosts "node[1-$MATRIX_NODES]" --preflight-only \
    --out /tmp/m39b >m2.out 2>m2.err; rc=$?
cat m2.out
[ "$rc" = 0 ] || fail "after clear: exit $rc, want 0"
grep -q "^preflight: every node up, every NIC on its rail" m2.out || fail "after clear: not all well"
echo "miswire named by the wire check; after clear, all well"
