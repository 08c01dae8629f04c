#!/bin/bash
# Issue 18, items 2-3: -q and -s differing between rperftest and C perftest 6.06 (which cannot
# negotiate), both ways. Each run ends within 10 s, our side exits 1 with one line naming the
# likely option, the C side does not hang, nobody prints a result line, and a REM_ACCESS_ERR is
# not blamed on the rkey.
# mode: full
# timeout: 240
. "$VMTEST_LIB"
X=(-d "$RXE_DEV" -x "$RXE_GID_IDX")

# mismatch WHO WANT SRV... -- CLI...: run the pair; WHO (client|server) is ours and must exit 1
# with WANT in its output; the other side must exit non-zero; both within 10 s; no result line.
mismatch() {
    local who=$1 want=$2; shift 2
    local srv=() cli=()
    while [ "$1" != "--" ]; do srv+=("$1"); shift; done
    shift
    cli=("$@")
    start_server -t 60 "${srv[@]}"
    mark
    run with_timeout 20 "${cli[@]}"
    cp "$LAST_OUT" "$VMTEST_TMP/client.out"
    wait_server 20
    bound 10 "${cli[*]} against ${srv[*]}"
    local ours theirs ours_rc theirs_rc
    if [ "$who" = client ]; then
        ours=$VMTEST_TMP/client.out; theirs=$SERVER_LOG; ours_rc=$LAST_RC; theirs_rc=$SERVER_RC
    else
        ours=$SERVER_LOG; theirs=$VMTEST_TMP/client.out; ours_rc=$SERVER_RC; theirs_rc=$LAST_RC
    fi
    [ "$ours_rc" = 1 ] || fail "our $who rc=$ours_rc, want 1"
    case "$theirs_rc" in 0|124|137|143) fail "C side rc=$theirs_rc (want a failure, not a hang or a pass)";; esac
    grep -qF -- "$want" "$ours" || fail "our $who does not say: $want"
    ! grep -qF "the peer rejected the rkey" "$ours" || fail "our $who blames the rkey"
    # No result line (a size, an iteration count, then figures) on either side.
    ! grep -qE '^ +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+' "$ours" "$theirs" || fail "a result line was printed"
}

log "== -q: C client -q 2 -> our server -q 1 (issue 18's garbage report)"
mismatch server "runs more QPs than this side's -q 1" rperftest ib_write_bw "${X[@]}" -n 50 -- ib_write_bw "${X[@]}" -n 50 -q 2 "$RXE_IP"
log "== -q: C client -q 1 -> our server -q 2"
mismatch server "fewer QPs than this side's -q 2" rperftest ib_write_bw "${X[@]}" -n 50 -q 2 -- ib_write_bw "${X[@]}" -n 50 "$RXE_IP"
log "== -q: our client -q 2 -> C server -q 1"
mismatch client "fewer QPs than this side's -q 2" ib_write_bw "${X[@]}" -n 50 -- rperftest ib_write_bw "${X[@]}" -n 50 -q 2 "$RXE_IP"
log "== -q: our client -q 1 -> C server -q 2 (read_bw)"
mismatch client "runs more QPs than this side's -q 1" ib_read_bw "${X[@]}" -n 50 -q 2 -- rperftest ib_read_bw "${X[@]}" -n 50 "$RXE_IP"
log "== -s: our client -s 65536 -> C server -s 4096 (write_bw: the writes overrun its buffer)"
mismatch client "a message larger than the peer's buffer: are both sides run with the same -s" \
    ib_write_bw "${X[@]}" -n 50 -s 4096 -- rperftest ib_write_bw "${X[@]}" -n 50 -s 65536 "$RXE_IP"
log "== -s: C client -s 65536 -> our server -s 4096 (our passive server sees the client fail)"
mismatch server "usually means the two sides run different -s, -a or -q" \
    rperftest ib_write_bw "${X[@]}" -n 50 -s 4096 -- ib_write_bw "${X[@]}" -n 50 -s 65536 "$RXE_IP"
log "== -s: our client -s 65536 -> C server -s 4096 (read_bw)"
mismatch client "a message larger than the peer's buffer" \
    ib_read_bw "${X[@]}" -n 50 -s 4096 -- rperftest ib_read_bw "${X[@]}" -n 50 -s 65536 "$RXE_IP"
