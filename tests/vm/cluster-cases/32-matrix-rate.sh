#!/bin/bash
# One node's link rate-limited (node4, 4 Mbit/s both ways; --serial, so that
# the other pairs run at the bed's full few MB/s): the matrix marks
# exactly node4's three write_bw pairs LOW (below 0.9 x the median), the
# other three OK, exits 1, and the diagnosis names node4.
# timeout: 300
. "$CLUSTER_LIB"
"$CL" fault node4 rate 4mbit || fail "fault rate"
O=/tmp/m32
on node1 rperftest matrix --launcher ssh --preflight-timeout 120 --hosts "node[1-$CLUSTER_NODES]" --test write_bw --devices rxe0 \
    --serial --out $O -- -s 65536 -n 64 >m.out 2>m.err; rc=$?
"$CL" fault node4 clear
cat m.out; echo "--- stderr (last lines)"; tail -n 12 m.err
[ "$rc" = 1 ] || fail "matrix exit $rc, want 1"
on node1 cat $O/results.jsonl >results.jsonl || fail "no results.jsonl"
python3 - <<'PY' || fail "results.jsonl"
import json
recs = [json.loads(l) for l in open("results.jsonl") if l.strip()]
assert len(recs) == 6, len(recs)
for r in recs:
    has4 = "node4" in (r["server"]["node"], r["client"]["node"])
    want = "LOW" if has4 else "OK"
    assert r["status"] == want, (r["server"]["node"], r["client"]["node"], r["status"], r["value"], r["reason"])
print("node4's 3 pairs LOW, the other 3 OK")
PY
grep -q '^3 of 3 bad pairs of ib_write_bw on rail rxe0 include node4' m.out || fail "no diagnosis naming node4"
echo "rate-limited node4: LOW and named"
