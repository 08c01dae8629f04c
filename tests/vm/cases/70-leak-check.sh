#!/bin/bash
# The runner's leak check catches a leak: a nested suite whose one case
# leaves a detached ibv_rc_pingpong server (PD, CQ, QP, MR) behind fails
# with rc=71, names the objects and the holder, and the runner kills the
# holder so the counts return to what they were.
# mode: full
# timeout: 120
. "$VMTEST_LIB"
require_cmd ibv_rc_pingpong rdma
S=$VMTEST_TMP/nested
mkdir -p "$S/cases"
cp "$VMTEST_LIB" "$S/cases/lib.sh"
cp "$(dirname "$VMTEST_LIB")/tcp-listening.bash" "$S/cases/"
cat >"$S/cases/leaky.sh" <<'C'
. "$VMTEST_LIB"
# setsid in a background subshell: a new session, out of the case's process
# group, so the runner's group kill misses it, as a daemonising tool would
(setsid ibv_rc_pingpong -d "$RXE_DEV" -g "$RXE_GID_IDX" -p 18999 >/dev/null 2>&1 </dev/null &)
for i in $(seq 1 50); do rdma resource show qp | grep -q ibv_rc_pingpong && break; sleep 0.2; done
rdma resource show qp | grep ibv_rc_pingpong || fail "the leaking server did not start"
C
cat >"$S/cases/clean.sh" <<'C'
. "$VMTEST_LIB"
start_server -p 18998 rperftest ib_write_bw -d "$RXE_DEV" -x "$RXE_GID_IDX" -p 18998 -n 50
with_timeout 60 rperftest ib_write_bw -d "$RXE_DEV" -x "$RXE_GID_IDX" -p 18998 -n 50 "$RXE_IP" >/dev/null || fail "clean run failed"
wait_server 30; [ "$SERVER_RC" = 0 ] || fail "server rc=$SERVER_RC"
C
before=$(rdma resource show)
run env VMTEST_SUITE="$S" bash /mnt/host/suite/runner.sh
expect_contains "VMTEST leaky FAILED"
expect_contains "rc=71"
grep -q 'VMTEST leaky FAILED .*left RDMA objects behind: rxe0:.*qp .*held by: pid [0-9]* comm ibv_rc_pingpong' "$LAST_OUT" \
    || fail "the leak line does not name the objects and the holder"
expect_contains "VMTEST clean ok"
pidof ibv_rc_pingpong && fail "the runner left the leaking process running"
after=$(rdma resource show)
[ "$before" = "$after" ] || fail "counts not back: before '$before', after '$after'"
log "leak caught and cleaned: $(grep 'VMTEST leaky' "$LAST_OUT")"
