#!/bin/bash
# The fabric load patterns on 4 nodes x 2 rails with netem loss on (node4, rail 0):
# all-rails (each pair's two rails at once: 3 steps, 12 flows), incast (every node the target
# of 3 senders on both rails: 4 steps, 24 flows), alltoall (every pair on both rails at once,
# up to 4 flows per node: 1 step, 12 flows). Every flow has a record with its pattern; each
# step a spread and Jain's index; each pair's rails and their sum; the port counters read
# before and after each step (counters.jsonl) and the NIC whose sent packets were lost named
# first: node4's rxe0, by rxe's sequence-error counter.
# rails: 2
# timeout: 600
. "$CLUSTER_LIB"
"$CL" fault node4 --rail 0 netem loss 3% || fail "fault netem"
O=/tmp/m41
t0=$(date +%s)
on node1 rperftest matrix --launcher ssh --preflight-timeout 120 --hosts "node[1-$MATRIX_NODES]" --test write_bw \
    --pattern all-rails,incast,alltoall --incast-senders 3 --max-flows 4 --setup-time 30 --out $O -- -s 4096 -n 50 >m.out 2>m.err; rc=$?
s=$(( $(date +%s) - t0 ))
"$CL" fault node4 clear
cat m.out; echo "--- stderr (last lines)"; tail -n 12 m.err
[ "$rc" = 0 ] || [ "$rc" = 1 ] || fail "matrix exit $rc"
on node1 cat $O/results.jsonl >results.jsonl || fail "no results.jsonl"
on node1 cat $O/counters.jsonl >counters.jsonl || fail "no counters.jsonl"
python3 - <<'PY' || fail "records"
import json, collections
recs = [json.loads(l) for l in open("results.jsonl") if l.strip()]
n = collections.Counter(r["pattern"] for r in recs)
assert n == {"all-rails": 12, "incast": 24, "alltoall": 12}, n
for r in recs:
    assert r["status"] != "SKIPPED", r
steps = [json.loads(l) for l in open("counters.jsonl") if l.strip()]
assert [(c["pattern"], c["step"]) for c in steps] == [("all-rails", 0), ("all-rails", 1), ("all-rails", 2)] + [("incast", k) for k in range(4)] + [("alltoall", 0)], steps
assert all(c["nodes_read"] == 4 for c in steps), steps
print("48 flows recorded, counters read around all 8 steps")
PY
for p in all-rails incast alltoall; do
    grep -Eq "^$p step 1 ib_write_bw on rail rxe0: [0-9]+ flow\(s\).*Jain [01]\.[0-9]{3}" m.out || fail "no $p step line with fairness"
done
[ "$(grep -c '^all-rails ib_write_bw node[1-4] - node[1-4]: rxe0 .* + rxe1 ' m.out)" = 6 ] || fail "want each pair's rails side by side"
grep -Eq '^(all-rails|incast|alltoall) ib_write_bw: packets sent by node4 rxe0 \((rcvd_seq_err) \+[0-9]+' m.out \
    || fail "node4's rxe0 is not named first by its sequence errors"
echo "patterns under loss on (node4, rxe0): every flow, fairness, node4 rxe0 named; ${s}s"
