#!/bin/bash
# -R (data QPs connected through rdma_cm, key exchange over the rdma_cm control QP): write_bw,
# read_bw, send_bw, atomic_bw and send_lat, each ours<->ours, ours -> C perftest server and
# C perftest client -> ours, always against the rxe netdev's address ($RXE_IP, never 127.0.0.1).
# Both sides must exit 0, print a sane result line and the rdma_cm header lines. Then
# write_bw with -q 2 (one rdma_cm connection per QP) in the three pairings.
# mode: any
# timeout: 900
. "$VMTEST_LIB"

# pair_cm TOOL SRV_CMD... -- CLI_CMD...: lib.sh's pair, ready on the rdma_cm listener; then no
# rdma_cm id may outlive the pair.
pair_cm() {
    pair -c "$@"
    if rdma resource show cm_id 2>/dev/null | grep -q .; then
        rdma resource show cm_id
        fail "rdma_cm ids left after both sides of $1 exited"
    fi
}

# cm_header FILE ON|OFF: the header says the exchange ran over rdma_cm
cm_header() {
    grep -qF $' rdma_cm QPs\t : '"$2" "$1" || fail "no 'rdma_cm QPs : $2' header line in $1"
    grep -qF " Data ex. method : rdma_cm" "$1" || fail "no 'Data ex. method : rdma_cm' header line in $1"
}

for spec in "ib_write_bw:-n 200" "ib_read_bw:-n 200" "ib_send_bw:-n 200 -s 4096" "ib_atomic_bw:-n 200" "ib_send_lat:-n 100"; do
    tool=${spec%%:*}
    opts=${spec#*:}
    D=(-d "$RXE_DEV" -R)
    log "== $tool -R ours <-> ours"
    pair_cm "$tool" rperftest "$tool" "${D[@]}" $opts -- rperftest "$tool" "${D[@]}" $opts "$RXE_IP"
    cm_header "$VMTEST_TMP/client.out" ON
    cm_header "$SERVER_LOG" ON
    grep -qF " Waiting for client rdma_cm QP to connect" "$SERVER_LOG" || fail "server header lacks the rdma_cm wait line"
    if [ "$RXE_VM_MODE" = full ]; then
        log "== $tool -R ours -> C server"
        pair_cm "$tool" "$tool" "${D[@]}" $opts -- rperftest "$tool" "${D[@]}" $opts "$RXE_IP"
        cm_header "$VMTEST_TMP/client.out" ON
        log "== $tool -R C client -> ours"
        pair_cm "$tool" rperftest "$tool" "${D[@]}" $opts -- "$tool" "${D[@]}" $opts "$RXE_IP"
        cm_header "$SERVER_LOG" ON
    fi
done
# Two QPs: one rdma_cm connection per QP.
log "== ib_write_bw -R -q 2 ours <-> ours"
pair_cm ib_write_bw rperftest ib_write_bw -d "$RXE_DEV" -R -q 2 -n 200 -- rperftest ib_write_bw -d "$RXE_DEV" -R -q 2 -n 200 "$RXE_IP"
if [ "$RXE_VM_MODE" = full ]; then
    log "== ib_write_bw -R -q 2 ours -> C server"
    pair_cm ib_write_bw ib_write_bw -d "$RXE_DEV" -R -q 2 -n 200 -- rperftest ib_write_bw -d "$RXE_DEV" -R -q 2 -n 200 "$RXE_IP"
    log "== ib_write_bw -R -q 2 C client -> ours"
    pair_cm ib_write_bw rperftest ib_write_bw -d "$RXE_DEV" -R -q 2 -n 200 -- ib_write_bw -d "$RXE_DEV" -R -q 2 -n 200 "$RXE_IP"
fi
log "-R: all pairs passed"
