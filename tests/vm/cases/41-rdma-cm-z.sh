#!/bin/bash
# -z (the out-of-band exchange over an rdma_cm control QP, data QPs connected by perftest from
# the exchanged binary key structs): write_bw ours<->ours, ours -> C server, C client -> ours,
# plus send_bw and read_lat ours<->ours; always against $RXE_IP.
# mode: any
# timeout: 600
. "$VMTEST_LIB"

# pair_cm: lib.sh's pair, ready on the rdma_cm listener; the client's header must say the
# exchange ran over rdma_cm while the data QPs did not (-z without -R).
pair_cm() {
    pair -c "$@"
    grep -qF $' rdma_cm QPs\t : OFF' "$VMTEST_TMP/client.out" || fail "client header: rdma_cm QPs should be OFF with -z"
    grep -qF " Data ex. method : rdma_cm" "$VMTEST_TMP/client.out" || fail "client header: no 'Data ex. method : rdma_cm'"
}

X=(-d "$RXE_DEV" -x "$RXE_GID_IDX" -z)
log "== ib_write_bw -z ours <-> ours"
pair_cm ib_write_bw rperftest ib_write_bw "${X[@]}" -n 200 -- rperftest ib_write_bw "${X[@]}" -n 200 "$RXE_IP"
grep -qF " Data ex. method : rdma_cm" "$SERVER_LOG" || fail "server header: no 'Data ex. method : rdma_cm'"
if [ "$RXE_VM_MODE" = full ]; then
    log "== ib_write_bw -z ours -> C server"
    pair_cm ib_write_bw ib_write_bw "${X[@]}" -n 200 -- rperftest ib_write_bw "${X[@]}" -n 200 "$RXE_IP"
    log "== ib_write_bw -z C client -> ours"
    pair_cm ib_write_bw rperftest ib_write_bw "${X[@]}" -n 200 -- ib_write_bw "${X[@]}" -n 200 "$RXE_IP"
fi
log "== ib_send_bw -z ours <-> ours"
pair_cm ib_send_bw rperftest ib_send_bw "${X[@]}" -n 200 -s 4096 -- rperftest ib_send_bw "${X[@]}" -n 200 -s 4096 "$RXE_IP"
log "== ib_read_lat -z ours <-> ours"
pair_cm ib_read_lat rperftest ib_read_lat "${X[@]}" -n 100 -- rperftest ib_read_lat "${X[@]}" -n 100 "$RXE_IP"
log "-z: all pairs passed"
