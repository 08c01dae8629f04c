#!/bin/bash
# rperftest matrix --both-directions stopped by Ctrl-C (SIGINT) mid-run, then
# --resume: the stop kills the running pair on both nodes and keeps every
# finished one (exit 1, "stopped by a signal"), nothing is left running; the
# resumed run does only what is missing; at the end results.jsonl has each
# of the 6 ordered pairs (3 nodes, both ways, 6 rounds of one pair) exactly
# once, all OK, and the run exits 0.
# timeout: 300
. "$CLUSTER_LIB"
O=/tmp/m34
M=(rperftest matrix --launcher ssh --preflight-timeout 120 --hosts "node[1-3]" --test write_bw
   --devices rxe0 --both-directions --rel 0.25 --out $O)
# Its PID for the SIGINT (the images have no pkill).
bg node1 first bash -c 'echo $$ >/tmp/m34.pid; exec "$@"' _ "${M[@]}" -- -s 4096 -n 200
# Stop it once 2 pairs are recorded (one pair per round): mid-run by construction.
n=0
for _ in $(seq 1 600); do
    n=$(on node1 bash -c "cat $O/results.jsonl 2>/dev/null | grep -c . || true")
    [ "$n" -ge 2 ] && break
    sleep 0.2
done
[ "$n" -ge 2 ] || { cat first.out; fail "fewer than 2 pairs after 120 s"; }
on node1 bash -c 'kill -INT "$(cat /tmp/m34.pid)"' || fail "no matrix process to stop"
rc=$(wait_bg first 60)
cat first.out
[ "$rc" = 1 ] || fail "stopped run: exit $rc, want 1"
grep -q '^stopped by a signal: [0-9]* of 6 pairs recorded; --resume runs the rest' first.out || fail "no stop line"
kept=$(on node1 bash -c "grep -c . $O/results.jsonl")
[ "$kept" -ge 2 ] && [ "$kept" -lt 6 ] || fail "kept $kept records, want 2..5"
for k in $(seq 1 "$CLUSTER_NODES"); do
    left=$(on "node$k" bash -c 'for p in /proc/[0-9]*; do tr "\0" " " <$p/cmdline 2>/dev/null; echo; done' | grep -c '[r]perftest ib_\|[m]atrix-exec')
    [ "$left" = 0 ] || fail "node$k: $left rperftest process(es) left after the stop"
done
echo "--- stopped with $kept of 6 pairs; resuming"
on node1 "${M[@]}" --resume -- -s 4096 -n 200 >second.out 2>&1; rc=$?
cat second.out
[ "$rc" = 0 ] || fail "resumed run: exit $rc, want 0"
grep -q "^resume: $kept pair(s) already in $O/results.jsonl" second.out || fail "resume did not start from $kept pairs"
on node1 cat $O/results.jsonl >results.jsonl || fail "no results.jsonl"
python3 - 3 <<'PY' || fail "results.jsonl"
import json, sys, itertools
n = int(sys.argv[1])
recs = [json.loads(l) for l in open("results.jsonl") if l.strip()]
got = sorted((r["server"]["node"], r["client"]["node"]) for r in recs)
want = sorted(itertools.permutations([f"node{k}" for k in range(1, n + 1)], 2))
assert got == want, f"pairs {got}"
assert all(r["status"] == "OK" for r in recs), [(r["server"]["node"], r["client"]["node"], r["status"], r["reason"]) for r in recs if r["status"] != "OK"]
print(f"{len(recs)} records: every ordered pair once, all OK")
PY
echo "Ctrl-C then --resume: 6 ordered pairs, each once"
