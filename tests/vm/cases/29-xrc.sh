#!/bin/bash
# -c XRC on rxe, which has no XRC (no IB_DEVICE_XRC, no XRC domains). perftest 6.06 connects,
# exchanges versions and MTU, then fails in ctx_init: "Error opening XRC domain" /
# "Couldn't create XRC resources" / " Couldn't create IB resources", exit 1, on both sides,
# at once. rperftest must do the same at the same point, then say in one line that -c XRC
# needs a device with XRC; its peer (ours or C) must end quickly too, never hang. Pairs:
# ours<->ours (send_bw, write_bw, send_lat), ours -> C server and C client -> ours (send_bw,
# write_bw). And perftest's parameter rule: XRC with -R is refused ("XRC does not support
# RDMA_CM"), compared with C. The XRC data path itself (mlx5) is checked against a model only.
# mode: full
# (not in bare: the bare image differs only by lacking rdma-core, which 19-bare-all-tools covers)
# timeout: 600
. "$VMTEST_LIB"
X=(-d "$RXE_DEV" -x "$RXE_GID_IDX")
full() { [ "$RXE_VM_MODE" = full ]; }

# xrc_failed FILE KIND: FILE holds perftest's three lines (whole lines, in order); KIND "ours"
# also has our reason line; no side got as far as the header or a result.
xrc_failed() {
    local f=$1 kind=$2
    grep -qxF "Error opening XRC domain" "$f" || { cat "$f"; fail "$f: no 'Error opening XRC domain'"; }
    grep -qxF "Couldn't create XRC resources" "$f" || fail "$f: no 'Couldn't create XRC resources'"
    grep -qxF " Couldn't create IB resources" "$f" || fail "$f: no ' Couldn't create IB resources'"
    local order
    order=$(grep -nE "^(Error opening XRC domain|Couldn't create XRC resources| Couldn't create IB resources)$" "$f" | cut -d: -f2- | tr '\n' '|')
    [ "$order" = "Error opening XRC domain|Couldn't create XRC resources| Couldn't create IB resources|" ] || fail "$f: perftest's lines out of order: $order"
    if [ "$kind" = ours ]; then
        grep -qF " -c XRC: device $RXE_DEV has no XRC support" "$f" || fail "$f: no '-c XRC: device $RXE_DEV has no XRC support' line"
        [ "$(grep -c -- "-c XRC" "$f")" = 1 ] || fail "$f: the reason is not one line"
    fi
    ! grep -qE "#bytes|local address|BW peak|t_avg" "$f" || fail "$f: a run went further than resource creation"
}

# xrc_pair SRV_KIND CLI_KIND SRV... -- CLI...: both sides end with rc 1 within 30 s of the
# client's start, each with the XRC failure lines.
xrc_pair() {
    local srv_kind=$1 cli_kind=$2; shift 2
    local srv=()
    while [ "$1" != "--" ]; do srv+=("$1"); shift; done
    shift
    log "-- server ($srv_kind): ${srv[*]}   client ($cli_kind): $*"
    start_server -t 60 "${srv[@]}"
    mark
    expect_rc 1 with_timeout 60 "$@"
    xrc_failed "$LAST_OUT" "$cli_kind"
    wait_server 40
    bound 30 "both sides ended"
    [ "$SERVER_RC" = 1 ] || fail "server rc=$SERVER_RC, want 1"
    xrc_failed "$SERVER_LOG" "$srv_kind"
}

log "== ours <-> ours"
xrc_pair ours ours rperftest ib_send_bw "${X[@]}" -c XRC -- rperftest ib_send_bw "${X[@]}" -c XRC "$RXE_IP"
xrc_pair ours ours rperftest ib_write_bw "${X[@]}" -c XRC -- rperftest ib_write_bw "${X[@]}" -c XRC "$RXE_IP"
xrc_pair ours ours rperftest ib_send_lat "${X[@]}" -c XRC -- rperftest ib_send_lat "${X[@]}" -c XRC "$RXE_IP"

if full; then
    log "== C perftest 6.06 on the same device: its own behaviour (the reference)"
    xrc_pair C C ib_send_bw "${X[@]}" -c XRC -- ib_send_bw "${X[@]}" -c XRC "$RXE_IP"
    log "== ours -> C server, C client -> ours"
    xrc_pair C ours ib_send_bw "${X[@]}" -c XRC -- rperftest ib_send_bw "${X[@]}" -c XRC "$RXE_IP"
    xrc_pair ours C rperftest ib_send_bw "${X[@]}" -c XRC -- ib_send_bw "${X[@]}" -c XRC "$RXE_IP"
    xrc_pair C ours ib_write_bw "${X[@]}" -c XRC -- rperftest ib_write_bw "${X[@]}" -c XRC "$RXE_IP"
    xrc_pair ours C rperftest ib_write_bw "${X[@]}" -c XRC -- ib_write_bw "${X[@]}" -c XRC "$RXE_IP"
fi

log "== XRC with -R: refused before anything starts, as perftest"
mark
expect_rc 1 with_timeout 20 rperftest ib_read_bw "${X[@]}" -c XRC -R
bound 5 "refusal of -c XRC -R"
expect_contains "XRC does not support RDMA_CM"
expect_contains "-R/--rdma_cm"
[ "$(wc -l <"$LAST_OUT")" = 1 ] || fail "the -c XRC -R refusal is not one line"
if full; then
    expect_rc 1 with_timeout 20 ib_read_bw "${X[@]}" -c XRC -R
    expect_contains "XRC does not support RDMA_CM"
fi
log "-c XRC checked"
