#!/bin/bash
# rperftest matrix inside an salloc: the hosts come from SLURM_JOB_NODELIST
# and the launcher defaults to srun.  write_bw: all 6 pairs OK, 6 records;
# exit 0.  (send_lat over ssh is in 30.)  --push: the binary goes to a private
# directory on each node with one sbcast, is used there, and is removed at the
# end.  Node agents over srun: the pair sides start through one
# `matrix-agent` job step per node, not a step per side: the job's next step
# id after the matrix counts its steps (4 per node: push mkdir, probe, agent,
# push rm; a step per side would add 2 per pair), and no matrix-agent is left
# on any node once the matrix has ended, still inside the allocation.
# Ctrl-C over srun: a second matrix in the same allocation, SIGINT after its
# first record: exit 1, no tool, agent or step of ours left, and --resume
# records the rest: 6 pairs, each once, all OK.
# --rel 0.25 --rel-lat 10: under TCG one pair's figures differ from the next by 2-3x
# (seen: 0.56 to 1.45 MB/s in one run), so only 32 tests the 0.9 default.
# timeout: 480
. "$CLUSTER_LIB"
O=/tmp/m31
# Inside the allocation: the matrix, then its step count and what is left of it on the nodes.
cat >m31.sh <<'SH'
#!/bin/bash
rperftest matrix "$@"; rc=$?
srun -N1 -n1 --quiet --overlap -w node1 sh -c 'echo "m31: steps before this one: $SLURM_STEP_ID"' >&2
for n in $(scontrol show hostnames "$SLURM_JOB_NODELIST"); do
    # ([r]: not this grep's own command line, which node1's list holds)
    left=$(ssh "$n" 'for p in /proc/[0-9]*; do tr "\0" " " <$p/cmdline 2>/dev/null; echo; done' | grep -c '[r]perftest matrix-agent')
    echo "m31: agents left on $n: $left" >&2
done
# Ctrl-C over srun: a second matrix (no --push), SIGINT once its first pair is recorded, then
# --resume in the same allocation.
O2=/tmp/m31b
rperftest matrix --test write_bw --devices rxe0 --rel 0.25 --rel-lat 10 --out $O2 -- -s 4096 -n 300 >&2 &
mp=$!
for _ in $(seq 1 900); do
    [ -s $O2/results.jsonl ] && break
    kill -0 $mp 2>/dev/null || break
    sleep 0.2
done
kill -INT $mp; wait $mp
echo "m31: stopped run exit $? with $(grep -c . $O2/results.jsonl) record(s)" >&2
sleep 1
for n in $(scontrol show hostnames "$SLURM_JOB_NODELIST"); do
    left=$(ssh "$n" 'for p in /proc/[0-9]*; do tr "\0" " " <$p/cmdline 2>/dev/null; echo; done' | grep -c -e '[r]perftest matrix-agent' -e '[r]perftest ib_write_bw')
    echo "m31: after the stop, tools or agents on $n: $left" >&2
done
echo "m31: our steps running after the stop: $(squeue -h -s -j "$SLURM_JOB_ID" -o %j | grep -c rperftest-matrix)" >&2
rperftest matrix --resume --test write_bw --devices rxe0 --rel 0.25 --rel-lat 10 --out $O2 -- -s 4096 -n 300 >&2
echo "m31: resumed run exit $?" >&2
exit $rc
SH
"$CL" copy m31.sh node1:/tmp/ || fail "cannot copy m31.sh to node1"
t0=$(date +%s)
on node1 timeout 450 salloc -N"$MATRIX_NODES" -w "node[1-$MATRIX_NODES]" bash /tmp/m31.sh --push --test write_bw --devices rxe0 \
    --rel 0.25 --rel-lat 10 --out $O -- -s 4096 -n 200 >m.out 2>m.err; rc=$?
s=$(( $(date +%s) - t0 ))
cat m.out; echo "--- stderr (last lines)"; tail -n 20 m.err
[ "$rc" = 0 ] || fail "matrix in salloc exit $rc after ${s}s"
grep -q "preflight: $MATRIX_NODES node(s) over srun" m.err || fail "not run over srun"
pushed_and_removed m.err
on node1 cat $O/results.jsonl >results.jsonl || fail "no results.jsonl"
[ "$(grep -c '"status":"OK"' results.jsonl)" = 6 ] || fail "want 6 OK records: $(grep -c . results.jsonl) lines"
steps=$(sed -n 's/^m31: steps before this one: //p' m.err)
[ "$steps" = $((4 * MATRIX_NODES)) ] || fail "the matrix took ${steps:-no} job step(s), want $((4 * MATRIX_NODES)) (one agent per node)"
[ "$(grep -c '^m31: agents left on node[0-9]*: 0$' m.err)" = "$MATRIX_NODES" ] || fail "matrix-agent left on a node: $(grep '^m31: agents left' m.err | tr '\n' ' ')"
grep -q '^m31: stopped run exit 1 with [1-5] record(s)$' m.err || fail "SIGINT over srun: $(grep '^m31: stopped' m.err), want exit 1 with 1 to 5 records"
grep -q 'stopped by a signal' m.err || fail "SIGINT over srun: no 'stopped by a signal' line"
[ "$(grep -c '^m31: after the stop, tools or agents on node[0-9]*: 0$' m.err)" = "$MATRIX_NODES" ] || fail "left after SIGINT over srun: $(grep '^m31: after the stop' m.err | tr '\n' ' ')"
grep -q '^m31: our steps running after the stop: 0$' m.err || fail "$(grep '^m31: our steps' m.err)"
grep -q '^m31: resumed run exit 0$' m.err || fail "resume over srun: $(grep '^m31: resumed' m.err), want exit 0"
on node1 cat /tmp/m31b/results.jsonl >resumed.jsonl || fail "no results.jsonl of the stopped run"
[ "$(grep -c . resumed.jsonl)" = 6 ] && [ "$(grep -c '"status":"OK"' resumed.jsonl)" = 6 ] \
    || fail "after SIGINT and --resume: $(grep -c . resumed.jsonl) records, $(grep -c '"status":"OK"' resumed.jsonl) OK, want 6 and 6"
echo "matrix over srun in salloc: 6 pairs OK, $steps job steps (one agent per node); SIGINT then --resume: 6 pairs once; ${s}s"
