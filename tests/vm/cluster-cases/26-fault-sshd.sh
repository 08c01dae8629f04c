#!/bin/bash
# fault stop-sshd / start-sshd: ssh to node4 is refused while sshd is down
# (at once, not after a hang), and works again after start-sshd.
# timeout: 120
. "$CLUSTER_LIB"
"$CL" fault node4 stop-sshd || fail "fault stop-sshd"
t0=$(date +%s)
on node1 ssh node4 true 2>ssh.err && fail "ssh node4 works with sshd stopped"
s=$(( $(date +%s) - t0 )); cat ssh.err
grep -q 'refused' ssh.err || fail "ssh's error does not say refused"
[ $s -le 30 ] || fail "ssh took ${s}s to fail"
"$CL" fault node4 start-sshd || fail "fault start-sshd"
on node1 ssh node4 true || fail "ssh node4 after start-sshd"
echo "ssh refused in ${s}s while stopped, works after start-sshd"
