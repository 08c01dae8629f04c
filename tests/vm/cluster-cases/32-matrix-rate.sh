#!/bin/bash
# One node's link rate-limited (node4, 4 Mbit/s both ways; --serial, so that
# the other pairs run at the bed's full few MB/s): the matrix marks
# exactly node4's three write_bw pairs LOW (below 0.9 x the median) or FAIL,
# the other three OK, exits 1, and the diagnosis names node4.  Each of node4's
# pairs is re-run once after the rounds (LOW again: the limit holds, and the
# re-run line says so) and its record is the re-run's, the first result in
# its `retried` field.  (Through the limiter rxe sometimes fails a
# first run with REM_INV_REQ_ERR; the re-run is what reports it then.)
# timeout: 300
. "$CLUSTER_LIB"
"$CL" fault node4 rate 4mbit || fail "fault rate"
O=/tmp/m32
on node1 rperftest matrix --launcher ssh --preflight-timeout 120 --hosts "node[1-$MATRIX_NODES]" --test write_bw --devices rxe0 \
    --serial --out $O -- -s 65536 -n 16 >m.out 2>m.err; rc=$?
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
    # Through the limiter rxe may also fail a run outright (REM_INV_REQ_ERR after
    # retransmissions): a bad link's pair is LOW or FAIL, as on real clusters.
    want = ("LOW", "FAIL") if has4 else ("OK",)
    assert r["status"] in want, (r["server"]["node"], r["client"]["node"], r["status"], r["value"], r["reason"])
    if has4:
        assert (r.get("retried") or "").split(":")[0] in ("LOW", "FAIL", "TIMEOUT"), ("no re-run recorded", r.get("retried"))
    else:
        assert r.get("retried") is None, r.get("retried")
print("node4's 3 pairs LOW or FAIL (each re-run once: " + ", ".join(r["retried"].split(":")[0] for r in recs if r.get("retried")) + " at first), the other 3 OK")
PY
[ "$(grep -cE '^re-run node[0-9] - node[0-9] \(ib_write_bw, rxe0\): first (LOW|FAIL|TIMEOUT): .*; then (LOW|FAIL|TIMEOUT)$' m.out)" = 3 ] \
    || fail "want 3 re-run lines"
grep -q '^3 of 3 bad pairs of ib_write_bw on rail rxe0 include node4' m.out || fail "no diagnosis naming node4"
echo "rate-limited node4: LOW and named"
