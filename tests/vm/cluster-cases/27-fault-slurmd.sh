#!/bin/bash
# fault stop-slurmd / start-slurmd: a step on node4 fails within a bound
# while its slurmd is stopped, and runs again after start-slurmd.
# timeout: 300
. "$CLUSTER_LIB"
"$CL" fault node4 stop-slurmd || fail "fault stop-slurmd"
t0=$(date +%s)
on node1 timeout 150 srun -N1 -w node4 hostname >srun.out 2>&1 && fail "srun on node4 worked without slurmd"
rc=$?; s=$(( $(date +%s) - t0 )); cat srun.out
[ $rc != 124 ] || fail "srun hung (killed by timeout 150)"
echo "srun -w node4 failed (rc $rc) in ${s}s with slurmd stopped"
"$CL" fault node4 start-slurmd || fail "fault start-slurmd"
ok=0
for i in $(seq 1 20); do
    on node1 scontrol update nodename=node4 state=resume >/dev/null 2>&1
    [ "$(on node1 timeout 60 srun -N1 -w node4 hostname 2>/dev/null)" = node4 ] && { ok=1; break; }
    sleep 3
done
[ $ok = 1 ] || fail "srun on node4 after start-slurmd"
echo "srun -w node4 works again after start-slurmd"
