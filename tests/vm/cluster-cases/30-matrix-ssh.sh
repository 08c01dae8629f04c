#!/bin/bash
# rperftest matrix on node1 (the login node) over ssh: 4 nodes, write_bw and
# send_lat on rxe0.  All 6 pairs of each test OK, in 3 rounds in which no node
# is in two pairs; results.jsonl has 12 records, results.csv 12 rows; exit 0;
# no rperftest tool left running on any node.  --push: the binary is copied
# to a private directory on each node (scp), used there, and removed at the end.
# report.html holds a well-formed SVG heatmap per test, labelled with the nodes,
# and renders in headless Chromium where the host has it (not blank).
# --rel 0.25 --rel-lat 10: under TCG one pair's figures differ from the next by 2-3x
# (seen: 0.56 to 1.45 MB/s in one run), so only 32 tests the 0.9 default.
# timeout: 300
. "$CLUSTER_LIB"
O=/tmp/m30
t0=$(date +%s)
on node1 rperftest matrix --launcher ssh --push --preflight-timeout 120 --hosts "node[1-$MATRIX_NODES]" --test write_bw,send_lat \
    --devices rxe0 --rel 0.25 --rel-lat 10 --out $O -- -s 4096 -n 200 >m.out 2>m.err; rc=$?
s=$(( $(date +%s) - t0 ))
cat m.out; echo "--- stderr (last lines)"; tail -n 20 m.err
[ "$rc" = 0 ] || fail "matrix exit $rc after ${s}s"
pushed_and_removed m.err
on node1 cat $O/results.jsonl >results.jsonl || fail "no results.jsonl"
on node1 cat $O/results.csv >results.csv || fail "no results.csv"
on node1 cat $O/report.html >report.html || fail "no report.html"
python3 - <<'PY' || fail "report.html"
import re, xml.dom.minidom
page = open("report.html").read()
svgs = re.findall(r"<svg.*?</svg>", page, re.S)
assert len(svgs) == 2, f"{len(svgs)} heatmaps, want 2 (write_bw and send_lat on rxe0)"
for s in svgs:
    xml.dom.minidom.parseString(s)          # each heatmap is well-formed SVG
    for n in ("node1", "node2", "node3", "node4"):
        assert f"\n{n}\n" in s, f"{n} not labelled"
assert "<script" not in page and "src=" not in page and "href=" not in page, "the page must not fetch anything"
print("report.html: 2 heatmaps, well-formed, self-contained")
PY
# With Debian's chromium on the host (tests/plot-render.sh --install): a headless screenshot of
# the page, 1000x1200, not blank; without it plot-render says it skipped the render.
"$(dirname "$CLUSTER_LIB")/../../plot-render.sh" --no-plots --html report.html || fail "report.html does not render"
python3 - "$MATRIX_NODES" <<'PY' || fail "results.jsonl"
import json, sys, itertools
n = int(sys.argv[1])
recs = [json.loads(l) for l in open("results.jsonl") if l.strip()]
assert len(recs) == 12, f"{len(recs)} records, want 12"
for test in ("ib_write_bw", "ib_send_lat"):
    rs = [r for r in recs if r["test"] == test]
    pairs = sorted(tuple(sorted((r["server"]["node"], r["client"]["node"]))) for r in rs)
    want = sorted(itertools.combinations([f"node{k}" for k in range(1, n + 1)], 2))
    assert pairs == want, f"{test}: pairs {pairs}"
    assert {r["round"] for r in rs} == {0, 1, 2}, f"{test}: rounds {[r['round'] for r in rs]}"
    for rd in range(3):
        nodes = [x for r in rs if r["round"] == rd for x in (r["server"]["node"], r["client"]["node"])]
        assert len(nodes) == len(set(nodes)), f"{test} round {rd}: {nodes}"
    for r in rs:
        assert r["status"] == "OK" and r["value"] > 0, r
        assert r["client"]["json"]["results"], r
        assert r["server"]["addr"].startswith("10.77.0.") and r["server"]["gid_index"] == 1, r
print("12 records: every pair of both tests once, 3 rounds, all OK")
PY
[ "$(wc -l <results.csv)" = 13 ] || fail "results.csv has $(wc -l <results.csv) lines, want 13"
grep -q '^ib_write_bw on rail rxe0: BW average \[MB/sec\], 6 of 6 pairs OK' m.out || fail "no write_bw matrix"
grep -q '^ib_send_lat on rail rxe0: typical latency \[usec\], 6 of 6 pairs OK' m.out || fail "no send_lat matrix"
for k in $(seq 1 "$CLUSTER_NODES"); do
    left=$(on "node$k" bash -c 'for p in /proc/[0-9]*; do tr "\0" " " <$p/cmdline 2>/dev/null; echo; done' | grep -c '[r]perftest ib_\|[m]atrix-exec')
    [ "$left" = 0 ] || fail "node$k: $left rperftest process(es) left"
done
echo "matrix over ssh: 12 pairs OK in ${s}s, nothing left running"
