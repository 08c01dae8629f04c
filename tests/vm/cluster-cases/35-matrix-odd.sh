#!/bin/bash
# rperftest matrix over an odd number of nodes (a bed of its own of 5, ssh):
# write_bw, the circle method with a bye: 10 pairs in 5 rounds, every
# unordered pair exactly once, two pairs and one idle node per round, no
# node in two pairs of a round; all OK, exit 0.  Then wall time against the
# sum of the pairs' own times (a figure, not a bound).  ~35 s on the bed.
# nodes: 5
# timeout: 300
. "$CLUSTER_LIB"
[ "$CLUSTER_NODES" -ge 5 ] || fail "this case needs a bed of 5 nodes (cluster-suite.sh --nodes 5 --filter '^35'), have $CLUSTER_NODES"
O=/tmp/m35
t0=$(date +%s)
on node1 rperftest matrix --launcher ssh --preflight-timeout 120 --hosts "node[1-5]" --test write_bw \
    --devices rxe0 --rel 0.25 --out $O -- -s 4096 -n 200 >m.out 2>m.err; rc=$?
s=$(( $(date +%s) - t0 ))
cat m.out; echo "--- stderr (last lines)"; tail -n 14 m.err
[ "$rc" = 0 ] || fail "matrix exit $rc after ${s}s"
on node1 cat $O/results.jsonl >results.jsonl || fail "no results.jsonl"
python3 - "$s" <<'PY' || fail "results.jsonl"
import json, sys, itertools
recs = [json.loads(l) for l in open("results.jsonl") if l.strip()]
nodes = [f"node{k}" for k in range(1, 6)]
assert len(recs) == 10, f"{len(recs)} records, want 10"
pairs = sorted(tuple(sorted((r["server"]["node"], r["client"]["node"]))) for r in recs)
assert pairs == sorted(itertools.combinations(nodes, 2)), f"pairs {pairs}"
rounds = sorted({r["round"] for r in recs})
assert rounds == [0, 1, 2, 3, 4], f"rounds {rounds}"
for rd in rounds:
    inr = [x for r in recs if r["round"] == rd for x in (r["server"]["node"], r["client"]["node"])]
    assert len(inr) == 4 and len(set(inr)) == 4, f"round {rd}: {inr}"
byes = [next(n for n in nodes if all(n not in (r["server"]["node"], r["client"]["node"]) for r in recs if r["round"] == rd)) for rd in rounds]
assert sorted(byes) == nodes, f"byes {byes}: each node should sit out exactly one round"
for r in recs:
    assert r["status"] == "OK" and r["value"] > 0, (r["server"]["node"], r["client"]["node"], r["status"], r["reason"])
pair_sum = sum(r["wall_s"] for r in recs)
ideal = sum(max(r["wall_s"] for r in recs if r["round"] == rd) for rd in rounds)
print(f"10 pairs in 5 rounds, each once, byes {byes}; all OK")
print(f"wall {sys.argv[1]} s (with preflight); pairs' own times sum {pair_sum:.1f} s; rounds' slowest pairs sum {ideal:.1f} s")
PY
grep -q '^ib_write_bw on rail rxe0: BW average \[MB/sec\], 10 of 10 pairs OK' m.out || fail "no 5-node write_bw matrix"
echo "5 nodes (odd): 10 pairs in 5 rounds in ${s}s"
