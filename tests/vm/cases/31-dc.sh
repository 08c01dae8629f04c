#!/bin/bash
# -c DC (mlx5 Dynamically Connected) on rxe, which has no DC: ours and C perftest 6.06 both
# connect over TCP, then fail at QP creation ("Unable to create QP." ... " Couldn't create IB
# resources"), exit 1, and neither side hangs; ours names -c DC. Pairs: ours<->ours (write_bw,
# send_bw, read_bw, send_lat, write_bw --log_dci_streams 2, and the split runs: write_lat,
# read_lat, atomic_lat, send_bw -b, whose first QP is a DCI on both sides), ours -> C server,
# C client -> ours.
# Then the DC parameter conflicts perftest rejects, ours and C side by side (same text, exit 1,
# refused before any connection).
# mode: full
# (not in bare: the bare image differs only by lacking rdma-core, which 19-bare-all-tools covers)
# timeout: 600
. "$VMTEST_LIB"
X=(-d "$RXE_DEV" -x "$RXE_GID_IDX")
full() { [ "$RXE_VM_MODE" = full ]; }

# c_tail FILE: perftest's three lines end our output, in its order (ours adds one line before)
C_LINES=$(printf "Unable to create QP.\nFailed to create QP.\n Couldn't create IB resources")
c_tail() { [ "$(tail -n 3 "$1")" = "$C_LINES" ] || fail "the last 3 lines of $1 are not perftest's QP-creation failure"; }

# dc_fails KIND_SRV KIND_CLI TOOL [ARGS...]: both sides exit 1 within the bounds, each with
# the QP-creation failure; our side(s) also name -c DC.
dc_fails() {
    local ks=$1 kc=$2 tool=$3; shift 3
    local srv=("$tool") cli=("$tool")
    [ "$ks" = ours ] && srv=(rperftest "$tool")
    [ "$kc" = ours ] && cli=(rperftest "$tool")
    log "== $tool -c DC $*: server $ks, client $kc"
    start_server -t 60 "${srv[@]}" "${X[@]}" -c DC "$@"
    mark
    run with_timeout 60 "${cli[@]}" "${X[@]}" -c DC "$@" "$RXE_IP"
    bound 30 "client exit"
    [ "$LAST_RC" = 1 ] || fail "client rc=$LAST_RC, want 1"
    expect_contains "Unable to create QP."
    expect_contains " Couldn't create IB resources"
    expect_not_contains "Couldn't connect"
    [ "$kc" = ours ] && expect_contains "-c DC: DCI #0:"
    [ "$kc" = ours ] && expect_contains "mlx5 feature"
    [ "$kc" = ours ] && c_tail "$LAST_OUT"
    wait_server 30
    bound 40 "server exit"
    [ "$SERVER_RC" = 1 ] || fail "server rc=$SERVER_RC, want 1 (not killed, not 0)"
    expect_contains "Unable to create QP." "$SERVER_LOG"
    expect_contains " Couldn't create IB resources" "$SERVER_LOG"
    if [ "$ks" = ours ]; then
        c_tail "$SERVER_LOG"
        # one-way BW: the server side has only DCTs; latency and -b: DCIs first
        case "$tool $*" in
            *_lat*|*" -b"*) expect_contains "-c DC: DCI #0:" "$SERVER_LOG"
                expect_not_contains "not implemented" "$SERVER_LOG" ;;
            *) expect_contains "-c DC: DCT #0:" "$SERVER_LOG" ;;
        esac
    fi
    return 0
}

dc_fails ours ours ib_write_bw
dc_fails ours ours ib_send_bw -s 4096
dc_fails ours ours ib_read_bw
dc_fails ours ours ib_send_lat
dc_fails ours ours ib_write_bw --log_dci_streams 2 --log_active_dci_streams 1
dc_fails ours ours ib_write_lat
dc_fails ours ours ib_read_lat
dc_fails ours ours ib_atomic_lat
dc_fails ours ours ib_send_bw -b -q 2
if full; then
    dc_fails C ours ib_write_lat
    dc_fails ours C ib_send_bw -b
    dc_fails C ours ib_write_bw
    dc_fails ours C ib_write_bw
    dc_fails C ours ib_send_bw
    dc_fails ours C ib_send_lat
    dc_fails ours C ib_write_bw --log_dci_streams 2
fi

# conflict MSG ARGS...: ours (and C in full mode) refuse ARGS at once, exit 1, MSG in the
# output, nothing connected.
conflict() {
    local msg=$1; shift
    log "== conflict: $*"
    mark
    run with_timeout 20 rperftest ib_write_bw "${X[@]}" "$@" "$RXE_IP"
    bound 5 "ours refused"
    [ "$LAST_RC" = 1 ] || fail "ours rc=$LAST_RC, want 1"
    expect_contains "$msg"
    expect_not_contains "Couldn't connect"
    [ "$(grep -c . "$LAST_OUT")" = 1 ] || fail "ours: not one line"
    if full; then
        run with_timeout 20 ib_write_bw "${X[@]}" "$@" "$RXE_IP"
        [ "$LAST_RC" = 1 ] || fail "C rc=$LAST_RC, want 1"
        expect_contains " $msg"
        expect_not_contains "Couldn't connect"
    fi
}
conflict "DC does not support RDMA_CM" -c DC -R
conflict "DC does not support old post send flow" -c DC --use_old_post_send
conflict "log_dci_streams supported only on DC" --log_dci_streams 2
conflict "log_dci_streams supported only on DC" --log_active_dci_streams 1 --log_dci_streams 2
conflict "log_dci_streams must be greater than 0" -c DC --log_active_dci_streams 2
log "== --log_dci_streams abc: ours refuses in one line, C too"
run with_timeout 20 rperftest ib_write_bw -c DC --log_dci_streams abc "$RXE_IP"
[ "$LAST_RC" = 1 ] || fail "ours rc=$LAST_RC"
expect_contains "log_dci_streams argument 'abc' should be an integer"
if full; then
    run with_timeout 20 ib_write_bw -c DC --log_dci_streams abc "$RXE_IP"
    [ "$LAST_RC" = 1 ] || fail "C rc=$LAST_RC"
    expect_contains "log_dci_streams argument abc should be uint16_t"
fi
log "PASS"
