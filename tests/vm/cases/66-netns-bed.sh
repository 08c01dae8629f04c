#!/bin/bash
# The netns bed (tests/vm/netns-cluster.sh) in the suite's VM: 4 namespace nodes, each with its
# own address, /etc/hosts name and sshd; ssh by name reaches each node's own eth0; link-down cuts
# a node off and clear restores it; with n4's sshd stopped the matrix preflight over ssh finds
# the other three and records n4 UNREACHABLE with ssh's "Connection refused" (at once, not at
# the bound); `down` leaves no namespace, link, sshd or hosts line.  No RDMA pair runs: rxe on
# this kernel cannot serve a namespace (docs/testbed.md), so the matrix asks for a device no
# node has and records its pairs SKIPPED after the probe.  About 2 min on the bed (116 s: up
# 50 s, the preflight of 4 logins 20 s).
# overlay: cluster
# mode: any
# timeout: 360
. "$VMTEST_LIB"
NC=$(dirname "$VMTEST_LIB")/netns-cluster.bash
[ -x /usr/sbin/sshd ] || skip "no sshd in this image (run-suite.sh boots the cluster overlay for '# overlay: cluster')"
trap 'bash "$NC" down >/dev/null 2>&1; _vmtest_cleanup' EXIT
RPT=$(command -v rperftest) || fail "rperftest not on PATH"

expect_rc 0 bash "$NC" up 4
S=$(bash "$NC" ssh) || fail "no ssh wrapper"
for k in 1 2 3 4; do
    expect_rc 0 "$S" "n$k" ip addr show dev eth0
    expect_contains "inet 10.78.0.$k/32"
done
expect_rc 0 bash "$NC" exec n2 -- ping -c 1 -W 10 n3
expect_rc 0 bash "$NC" fault n3 link-down
run bash "$NC" exec n2 -- ping -c 1 -W 2 n3
[ "$LAST_RC" != 0 ] || fail "n3 still answers with its link down"
expect_rc 0 bash "$NC" fault n3 clear
expect_rc 0 bash "$NC" exec n2 -- ping -c 1 -W 10 n3

expect_rc 0 bash "$NC" fault n4 stop-sshd
t0=$(date +%s)
run "$RPT" matrix --hosts 'n[1-4]' --launcher ssh --ssh "$S" --remote-bin "$RPT" --devices nosuch \
    --preflight-timeout 240 --out "$VMTEST_TMP/m" -- -s 4096 -n 5
took=$(( $(date +%s) - t0 ))
[ "$LAST_RC" = 1 ] || fail "matrix: exit $LAST_RC, want 1 (a node down)"
expect_contains "preflight: 3 of 4 node(s) up"
expect_contains "n4 unreachable: "
expect_contains "Connection refused"
J=$VMTEST_TMP/m/results.jsonl
[ "$(grep -c . "$J")" = 6 ] || fail "$(grep -c . "$J") records, want 6"
[ "$(grep -c '"status":"UNREACHABLE"' "$J")" = 3 ] || fail "want n4's 3 pairs UNREACHABLE"
[ "$(grep -c '"status":"SKIPPED"' "$J")" = 3 ] || fail "want the other 3 pairs SKIPPED (no device nosuch)"
log "matrix over ssh on 4 namespace nodes: $took s"

expect_rc 0 bash "$NC" down
[ -z "$(ip netns list)" ] || fail "namespaces left: $(ip netns list)"
! ip -o link show | grep -q ' nc-v' || fail "links left"
! grep -q ' n[1-4]$' /etc/hosts || fail "hosts lines left"
echo "netns bed: 4 nodes up, reached by name, a fault and its clear, preflight UNREACHABLE, nothing left"
