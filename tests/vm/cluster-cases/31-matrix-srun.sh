#!/bin/bash
# rperftest matrix inside an salloc: the hosts come from SLURM_JOB_NODELIST
# and the launcher defaults to srun (one step per side).  write_bw: all 6
# pairs OK, 6 records; exit 0.  (send_lat over ssh is in 30.)  --push: the
# binary goes to a private directory on each node with one sbcast, is used
# there, and is removed at the end.
# --rel 0.25 --rel-lat 10: under TCG one pair's figures differ from the next by 2-3x
# (seen: 0.56 to 1.45 MB/s in one run), so only 32 tests the 0.9 default.
# timeout: 300
. "$CLUSTER_LIB"
O=/tmp/m31
t0=$(date +%s)
on node1 timeout 280 salloc -N"$MATRIX_NODES" -w "node[1-$MATRIX_NODES]" rperftest matrix --push --test write_bw --devices rxe0 \
    --rel 0.25 --rel-lat 10 --out $O -- -s 4096 -n 200 >m.out 2>m.err; rc=$?
s=$(( $(date +%s) - t0 ))
cat m.out; echo "--- stderr (last lines)"; tail -n 20 m.err
[ "$rc" = 0 ] || fail "matrix in salloc exit $rc after ${s}s"
grep -q "preflight: $MATRIX_NODES node(s) over srun" m.err || fail "not run over srun"
pushed_and_removed m.err
on node1 cat $O/results.jsonl >results.jsonl || fail "no results.jsonl"
[ "$(grep -c '"status":"OK"' results.jsonl)" = 6 ] || fail "want 6 OK records: $(grep -c . results.jsonl) lines"
echo "matrix over srun in salloc: 6 pairs OK in ${s}s"
