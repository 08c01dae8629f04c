#!/bin/bash
# rperftest matrix --devices auto on the 2-rail bed (every node: rxe0 on eth0, rail 0's segment;
# rxe1 on eth1, rail 1's): the wire check finds every NIC on its rail; 12 pair-rails OK, 6 per
# rail in 3 rounds each; rails named after the devices, each pair on rail k between the nodes'
# rail-k addresses; the node x rail grid; report.html has a heatmap per rail and renders.
# rails: 2
# timeout: 300
. "$CLUSTER_LIB"
O=/tmp/m37
t0=$(date +%s)
on node1 rperftest matrix --launcher ssh --preflight-timeout 120 --hosts "node[1-$MATRIX_NODES]" --test write_bw \
    --devices auto --rel 0.25 --no-retry --out $O -- -s 4096 -n 200 >m.out 2>m.err; rc=$?
s=$(( $(date +%s) - t0 ))
cat m.out; echo "--- stderr (first lines)"; head -n 8 m.err
[ "$rc" = 0 ] || fail "matrix exit $rc after ${s}s"
grep -q "^wire check: 4 node(s), 0 NIC(s) on another rail's segment" m.err || fail "no clean wire check"
on node1 cat $O/results.jsonl >results.jsonl || fail "no results.jsonl"
on node1 cat $O/report.html >report.html || fail "no report.html"
python3 - <<'PY' || fail "results.jsonl"
import json
recs = [json.loads(l) for l in open("results.jsonl") if l.strip()]
assert len(recs) == 12, f"{len(recs)} records, want 12"
for rail in ("rxe0", "rxe1"):
    rs = [r for r in recs if r["rail"] == rail]
    assert len(rs) == 6 and {r["round"] for r in rs} == {0, 1, 2}, (rail, len(rs))
    k = rail[-1]
    for r in rs:
        assert r["status"] == "OK" and r["pattern"] == "pairs", r
        assert r["server"]["dev"] == rail and r["client"]["dev"] == rail, r
        assert r["server"]["addr"].startswith(f"10.77.{k}."), r["server"]["addr"]
print("12 pair-rails OK: 6 per rail in 3 rounds, each on its rail's addresses")
PY
grep -q "^node x rail: each NIC's worst pair" m.out || fail "no node x rail grid"
for k in 1 2 3 4; do grep -Eq "^node$k +OK +OK$" m.out || fail "grid row of node$k"; done
python3 - <<'PY' || fail "report.html"
import re, xml.dom.minidom
page = open("report.html").read()
svgs = re.findall(r"<svg.*?</svg>", page, re.S)
assert len(svgs) == 2, f"{len(svgs)} heatmaps, want 2 (write_bw on rxe0 and rxe1)"
for s in svgs:
    xml.dom.minidom.parseString(s)
assert "on rail rxe0" in page and "on rail rxe1" in page
print("report.html: a heatmap per rail")
PY
"$(dirname "$CLUSTER_LIB")/../../plot-render.sh" --no-plots --html report.html || fail "report.html does not render"
echo "2 rails: 12 pair-rails OK in ${s}s"
