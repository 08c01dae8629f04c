#!/bin/bash
# From node1 (the login node): ssh to every node without a password or a
# host-key prompt; srun, salloc and sbatch across the nodes.
# timeout: 240
. "$CLUSTER_LIB"
on node1 ssh node3 rperftest devinfo >devinfo.out || fail "ssh node3 rperftest devinfo"
grep -q 'hca_id:.rxe0' devinfo.out || fail "no rxe0 in node3's devinfo"
for k in $(seq 1 "$CLUSTER_NODES"); do
    h=$(on node1 ssh "node$k" hostname) || fail "ssh node$k hostname"
    [ "$h" = "node$k" ] || fail "ssh node$k answered '$h'"
done
echo "ssh from node1: every node answers by its name"
want=$(seq 1 "$CLUSTER_NODES" | sed 's/^/node/' | sort | tr '\n' ' ')
got=$(on node1 timeout 120 srun -N"$CLUSTER_NODES" hostname | sort | tr '\n' ' ')
[ "$got" = "$want" ] || fail "srun -N$CLUSTER_NODES hostname: '$got', want '$want'"
echo "srun -N$CLUSTER_NODES hostname: $got"
got=$(on node1 timeout 120 srun -N2 -w node2,node3 hostname | sort | tr '\n' ' ')
[ "$got" = "node2 node3 " ] || fail "srun -N2 -w node2,node3: '$got'"
nl=$(on node1 timeout 120 salloc -N"$CLUSTER_NODES" bash -c 'echo "$SLURM_JOB_NODELIST $SLURM_NNODES"' 2>/dev/null | tail -1)
[ "$nl" = "node[1-$CLUSTER_NODES] $CLUSTER_NODES" ] || fail "salloc -N$CLUSTER_NODES: SLURM_JOB_NODELIST/NNODES '$nl'"
echo "salloc -N$CLUSTER_NODES: SLURM_JOB_NODELIST=$nl"
on node1 timeout 120 sbatch --wait -N2 -w node1,node4 -o /tmp/sbatch.out \
    --wrap 'echo "nodelist=$SLURM_JOB_NODELIST"; srun hostname | sort' >/dev/null || fail "sbatch --wait"
out=$(on node1 cat /tmp/sbatch.out | tr '\n' ' ')
[ "$out" = "nodelist=node[1,4] node1 node4 " ] || fail "sbatch output '$out'"
echo "sbatch: $out"
