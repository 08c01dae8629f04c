#!/bin/bash
# Issue 18, item 3: `--adopt` (rperftest extension). A server started with only -d/-x/--adopt
# runs with an rperftest client's -s, -q, -n (and -a/-D/-t/-m): the client's run, both exit 0,
# the server's header and result line show the client's options. Options --adopt does not take
# (-c) still stop both sides with their line; a server that sets an adopted option itself is
# told so.
# mode: full
# (not in bare: the bare image differs only by lacking rdma-core, which 19-bare-all-tools covers)
# timeout: 150
. "$VMTEST_LIB"
X=(-d "$RXE_DEV" -x "$RXE_GID_IDX")

log "== write_bw: server --adopt, client -s 4096 -q 2 -n 500"
start_server -t 60 rperftest ib_write_bw "${X[@]}" --adopt
run with_timeout 90 rperftest ib_write_bw "${X[@]}" -s 4096 -q 2 -n 500 "$RXE_IP"
cp "$LAST_OUT" "$VMTEST_TMP/client.out"
wait_server 60
[ "$LAST_RC" = 0 ] && [ "$SERVER_RC" = 0 ] || fail "rc client=$LAST_RC server=$SERVER_RC, want 0 and 0"
for f in "$VMTEST_TMP/client.out" "$SERVER_LOG"; do
    grep -qE "Number of qps +: 2" "$f" || fail "$f: not 2 QPs"
    # perftest's BW line counts the iterations of all QPs: 500 x 2
    grep -qE "^ 4096 +1000 +[0-9.]+ +[0-9.]+" "$f" || fail "$f: no result line for 4096 B x 500 x 2 QPs"
    bw_sane "$f"
done
[ "$(grep -c 'remote address' "$SERVER_LOG")" = 2 ] || fail "server did not connect 2 QPs"

log "== send_lat: server --adopt, client -s 64 -n 200"
start_server -t 60 rperftest ib_send_lat "${X[@]}" --adopt
run with_timeout 90 rperftest ib_send_lat "${X[@]}" -s 64 -n 200 "$RXE_IP"
wait_server 60
[ "$LAST_RC" = 0 ] && [ "$SERVER_RC" = 0 ] || fail "rc client=$LAST_RC server=$SERVER_RC, want 0 and 0"
grep -qE "^ 64 +200 +[0-9.]+" "$SERVER_LOG" || fail "server: no result line for 64 B x 200"

log "== -c is not adopted: both sides stop with the line"
start_server -t 60 rperftest ib_write_bw "${X[@]}" --adopt
run with_timeout 30 rperftest ib_write_bw "${X[@]}" -c UC -s 4096 "$RXE_IP"
wait_server 30
[ "$LAST_RC" = 1 ] && [ "$SERVER_RC" = 1 ] || fail "rc client=$LAST_RC server=$SERVER_RC, want 1 and 1"
expect_contains "-c: this side UC, peer RC"

log "== a server with its own -s and --adopt"
start_server -t 60 rperftest ib_write_bw "${X[@]}" --adopt -s 1024
run with_timeout 30 rperftest ib_write_bw "${X[@]}" -s 4096 "$RXE_IP"
wait_server 30
[ "$SERVER_RC" = 1 ] || fail "server rc=$SERVER_RC, want 1"
[ "$LAST_RC" != 0 ] || fail "client rc=0, want a failure"
grep -qF -- "--adopt: the server takes -s, -q, -n, -t, -m, -a and -D from the client; do not give -s" "$SERVER_LOG" || fail "server line"
