#!/bin/bash
# rperftest matrix on node1 (the login node) over ssh, --push, --devices auto on the 2-rail bed
# (every node: rxe0 on eth0, rail 0's segment; rxe1 on eth1, rail 1's), write_bw and send_lat:
# the binary copied to a private directory on each node, used there and removed at the end; the
# wire check finds every NIC on its rail; 24 pair-rails OK (each test: 6 per rail in 3 rounds, no
# node twice in a round, each pair on rail k between the nodes' rail-k addresses); results.csv,
# the text matrices, the node x rail grid; report.html has a well-formed SVG heatmap per test and
# rail, labelled with the nodes, self-contained, rendered in headless Chromium where the host has
# it (not blank); exit 0; no tool left running on any node. (This case also holds what case 30,
# one rail, used to show: one matrix run on the bed instead of two.)
# --rel 0.25 --rel-lat 10: under TCG one pair's figures differ from the next by 2-3x
# (seen: 0.56 to 1.45 MB/s in one run), so only 66's 32 nodes test the 0.9 default.
# rails: 2
# timeout: 300
. "$CLUSTER_LIB"
O=/tmp/m37
t0=$(date +%s)
on node1 rperftest matrix --launcher ssh --push --preflight-timeout 120 --hosts "node[1-$MATRIX_NODES]" \
    --test write_bw,send_lat --devices auto --rel 0.25 --rel-lat 10 --no-retry --out $O -- -s 4096 -n 200 \
    >m.out 2>m.err; rc=$?
s=$(( $(date +%s) - t0 ))
cat m.out; echo "--- stderr (last lines)"; tail -n 20 m.err
[ "$rc" = 0 ] || fail "matrix exit $rc after ${s}s"
grep -q "^wire check: 4 node(s), 0 NIC(s) on another rail's segment" m.err || fail "no clean wire check"
pushed_and_removed m.err
on node1 cat $O/results.jsonl >results.jsonl || fail "no results.jsonl"
on node1 cat $O/results.csv >results.csv || fail "no results.csv"
on node1 cat $O/report.html >report.html || fail "no report.html"
python3 - "$MATRIX_NODES" <<'PY' || fail "results.jsonl"
import json, sys, itertools
n = int(sys.argv[1])
recs = [json.loads(l) for l in open("results.jsonl") if l.strip()]
assert len(recs) == 24, f"{len(recs)} records, want 24"
want = sorted(itertools.combinations([f"node{k}" for k in range(1, n + 1)], 2))
for test in ("ib_write_bw", "ib_send_lat"):
    for rail in ("rxe0", "rxe1"):
        rs = [r for r in recs if r["test"] == test and r["rail"] == rail]
        pairs = sorted(tuple(sorted((r["server"]["node"], r["client"]["node"]))) for r in rs)
        assert pairs == want, f"{test} {rail}: pairs {pairs}"
        assert {r["round"] for r in rs} == {0, 1, 2}, f"{test} {rail}: rounds {[r['round'] for r in rs]}"
        for rd in range(3):
            nodes = [x for r in rs if r["round"] == rd for x in (r["server"]["node"], r["client"]["node"])]
            assert len(nodes) == len(set(nodes)), f"{test} {rail} round {rd}: {nodes}"
        k = rail[-1]
        for r in rs:
            assert r["status"] == "OK" and r["value"] > 0 and r["pattern"] == "pairs", r
            assert r["client"]["json"]["results"], r
            assert r["server"]["dev"] == rail and r["client"]["dev"] == rail, r
            assert r["server"]["addr"].startswith(f"10.77.{k}.") and r["server"]["gid_index"] == 1, r["server"]
print("24 pair-rails OK: each test 6 per rail in 3 rounds, each on its rail's addresses")
PY
[ "$(wc -l <results.csv)" = 25 ] || fail "results.csv has $(wc -l <results.csv) lines, want 25"
for rail in rxe0 rxe1; do
    grep -q "^ib_write_bw on rail $rail: BW average \[MB/sec\], 6 of 6 pairs OK" m.out || fail "no write_bw matrix on $rail"
    grep -q "^ib_send_lat on rail $rail: typical latency \[usec\], 6 of 6 pairs OK" m.out || fail "no send_lat matrix on $rail"
done
grep -q "^node x rail: each NIC's worst pair" m.out || fail "no node x rail grid"
for k in 1 2 3 4; do grep -Eq "^node$k +OK +OK$" m.out || fail "grid row of node$k"; done
python3 - <<'PY' || fail "report.html"
import re, xml.dom.minidom
page = open("report.html").read()
svgs = re.findall(r"<svg.*?</svg>", page, re.S)
assert len(svgs) == 4, f"{len(svgs)} heatmaps, want 4 (write_bw and send_lat on rxe0 and rxe1)"
for s in svgs:
    xml.dom.minidom.parseString(s)          # each heatmap is well-formed SVG
    for n in ("node1", "node2", "node3", "node4"):
        assert f"\n{n}\n" in s, f"{n} not labelled"
assert "on rail rxe0" in page and "on rail rxe1" in page
assert "<script" not in page and "src=" not in page and "href=" not in page, "the page must not fetch anything"
print("report.html: 4 heatmaps, a test and rail each, well-formed, labelled, self-contained")
PY
# With Debian's chromium on the host (tests/plot-render.sh --install): a headless screenshot of
# the page, 1000x1200, not blank; without it plot-render says it skipped the render.
"$(dirname "$CLUSTER_LIB")/../../plot-render.sh" --no-plots --html report.html || fail "report.html does not render"
for k in $(seq 1 "$CLUSTER_NODES"); do
    left=$(on "node$k" bash -c 'for p in /proc/[0-9]*; do tr "\0" " " <$p/cmdline 2>/dev/null; echo; done' | grep -c '[r]perftest ib_\|[m]atrix-exec\|[m]atrix-agent')
    [ "$left" = 0 ] || fail "node$k: $left rperftest process(es) left"
done
echo "2 rails, write_bw and send_lat: 24 pair-rails OK in ${s}s, pushed and removed, nothing left running"
