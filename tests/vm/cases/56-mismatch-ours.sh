#!/bin/bash
# Issue 18, item 3: two rperftest sides started with different -q, -s, -c, -t or -m compare their
# options right after the version exchange (an rperftest-only block, announced after the NUL of
# the version text, where perftest does not look) and stop before any resource or traffic: one
# line per differing option, exit 1 on both sides, within 10 s. Several at once give one line
# each. A matching pair still runs.
# mode: full
# (not in bare: the bare image differs only by lacking rdma-core, which 19-bare-all-tools covers)
# timeout: 150
. "$VMTEST_LIB"
X=(-d "$RXE_DEV" -x "$RXE_GID_IDX")

# differ TOOL "SERVER OPTS" "CLIENT OPTS" LINE...: both exit 1 within 10 s; the client prints
# each LINE (from its view), the server the same with the sides swapped; nothing else runs.
differ() {
    local tool=$1 so=$2 co=$3 l; shift 3
    start_server -t 60 rperftest "$tool" "${X[@]}" $so
    mark
    run with_timeout 20 rperftest "$tool" "${X[@]}" $co "$RXE_IP"
    wait_server 20
    bound 10 "$tool server '$so' client '$co'"
    [ "$LAST_RC" = 1 ] || fail "client rc=$LAST_RC, want 1"
    [ "$SERVER_RC" = 1 ] || fail "server rc=$SERVER_RC, want 1"
    for l in "$@"; do
        expect_contains "$l"
        # the server's view: "this side" and "peer" swapped
        local opt=${l%%:*} rest=${l#*: this side } mine theirs
        mine=${rest%%, peer *}; theirs=${rest#*, peer }
        grep -qxF -- "$opt: this side $theirs, peer $mine" "$SERVER_LOG" || fail "server lacks: $opt: this side $theirs, peer $mine"
    done
    # exactly one line per option on each side, and no sign of a started run
    [ "$(grep -c ': this side ' "$LAST_OUT")" = $# ] || fail "client: not one line per option"
    [ "$(grep -c ': this side ' "$SERVER_LOG")" = $# ] || fail "server: not one line per option"
    ! grep -qE "local address|Completion with error|#bytes" "$LAST_OUT" "$SERVER_LOG" || fail "resources or traffic after a mismatch"
}

log "== -q"
differ ib_write_bw "-q 2" "-q 1" "-q: this side 1, peer 2"
log "== -s"
differ ib_write_bw "-s 65536" "-s 4096" "-s: this side 4096, peer 65536"
log "== -c"
differ ib_write_bw "-c UC" "-c RC" "-c: this side RC, peer UC"
log "== -t"
differ ib_write_bw "-t 64" "-t 128" "-t: this side 128, peer 64"
log "== -m"
differ ib_write_bw "-m 512" "-m 1024" "-m: this side 1024, peer 512"
log "== several at once, another tool (read_bw -q and -s; send_lat -s)"
differ ib_read_bw "-q 2 -s 1024" "-s 2048" "-q: this side 1, peer 2" "-s: this side 2048, peer 1024"
differ ib_send_lat "-s 64" "-s 128" "-s: this side 128, peer 64"
log "== different tools on the two sides"
start_server -t 60 rperftest ib_read_bw "${X[@]}"
run with_timeout 20 rperftest ib_write_bw "${X[@]}" "$RXE_IP"
wait_server 20
[ "$LAST_RC" = 1 ] && [ "$SERVER_RC" = 1 ] || fail "rc client=$LAST_RC server=$SERVER_RC, want 1 and 1"
expect_contains "tool: this side ib_write_bw, peer ib_read_bw"
log "== the same options run"
start_server -t 60 rperftest ib_write_bw "${X[@]}" -q 2 -s 4096 -n 20
run with_timeout 60 rperftest ib_write_bw "${X[@]}" -q 2 -s 4096 -n 20 "$RXE_IP"
wait_server 30
[ "$LAST_RC" = 0 ] && [ "$SERVER_RC" = 0 ] || fail "rc client=$LAST_RC server=$SERVER_RC, want 0 and 0"
bw_sane "$LAST_OUT"
