#!/bin/bash
# Issue 22: `rperftest qperf` against Debian's qperf 0.4.11 (full image) both ways and against
# itself, for conf and the socket tests (tcp, udp, sctp): exit 0, non-zero figures, and our
# client's text equal to stock qperf's in the same pairing once figures are masked (also with
# -v); -n without -t ends; a remote quit is refused unless --allow-quit; argv[0] `qperf`
# selects the tool.
# mode: any
# timeout: 240
. "$VMTEST_LIB"

TESTS=(conf tcp_bw tcp_lat udp_bw udp_lat)
qperf_stock

# check_figures FILE: every result row of FILE has a number.
check_figures() {
    local n z
    n=$(grep -cE '^ +(bw|send_bw|recv_bw|latency) += +[0-9]' "$1")
    z=$(grep -cE '^ +(bw|send_bw|recv_bw|latency) += +0 ' "$1")
    [ "$n" -ge 7 ] && [ "$z" = 0 ] || { cat "$1"; fail "$1: $n result rows with figures ($z of them 0), want 7 non-zero (tcp_bw 1, tcp_lat 1, udp_bw 2, udp_lat 1, sctp_bw 1, sctp_lat 1)"; }
    grep -q '^    rem_qperf  =  0.4.11$' "$1" || fail "$1: no rem_qperf 0.4.11 row"
}

start_server -p $OURS_PORT rperftest qperf
OURS_PID=$SERVER_PID
if [ $have_stock = 1 ]; then
    start_server -p $STOCK_PORT "$STOCK" -lp $STOCK_PORT
fi
# sctp_bw and sctp_lat (SOCK_STREAM, IPPROTO_SCTP, as stock's): the image loads sctp.ko.
[ -d /proc/sys/net/sctp ] || fail "no SCTP in the guest kernel (tests/vm/build-image.sh loads sctp.ko)"
TESTS+=(sctp_bw sctp_lat)

log "== ours -> ours"
qperf_client 60 oo.out rperftest qperf 127.0.0.1 -t 1 "${TESTS[@]}"
check_figures oo.out

if [ $have_stock = 1 ]; then
    log "== ours -> stock and stock -> stock"
    qperf_client 60 os.out rperftest qperf -lp $STOCK_PORT 127.0.0.1 -t 1 "${TESTS[@]}"
    qperf_client 60 ss.out "$STOCK" -lp $STOCK_PORT 127.0.0.1 -t 1 "${TESTS[@]}"
    check_figures os.out
    check_figures ss.out
    qperf_same_text os.out ss.out "against stock server"

    log "== stock -> ours"
    qperf_client 60 so.out "$STOCK" 127.0.0.1 -t 1 "${TESTS[@]}"
    check_figures so.out
    qperf_same_text oo.out so.out "against our server"

    log "== -v and -oo, ours vs stock client, stock server"
    qperf_client 30 osv.out rperftest qperf -lp $STOCK_PORT 127.0.0.1 -t 1 -v tcp_lat -oo msg_size:1:2:*2 -ub tcp_bw
    qperf_client 30 ssv.out "$STOCK" -lp $STOCK_PORT 127.0.0.1 -t 1 -v tcp_lat -oo msg_size:1:2:*2 -ub tcp_bw
    expect_contains "loc_cpus_used" osv.out
    expect_contains "b/sec" osv.out   # -ub: bits (Kb/sec at these sizes under TCG)
    qperf_same_text osv.out ssv.out "-v, -oo, -ub against stock server"
fi

log "== -n without -t ends (stock qperf hangs here)"
mark
qperf_client 30 on.out rperftest qperf 127.0.0.1 -n 200 tcp_lat udp_lat sctp_lat
bound 20 "ours -> ours -n 200"
[ "$(grep -cE '^ +latency += +[0-9]' on.out)" = 3 ] || fail "-n run lacks latency figures"
if [ $have_stock = 1 ]; then
    mark
    qperf_client 30 osn.out rperftest qperf -lp $STOCK_PORT 127.0.0.1 -n 200 tcp_lat
    bound 20 "ours -> stock -n 200 tcp_lat"
    expect_contains "latency" osn.out
fi

log "== remote quit refused without --allow-quit"
if [ $have_stock = 1 ]; then
    run with_timeout 20 "$STOCK" 127.0.0.1 quit
else
    run with_timeout 20 rperftest qperf 127.0.0.1 quit
fi
[ "$LAST_RC" = 1 ] || fail "quit: rc=$LAST_RC, want 1"
expect_contains "server: quit refused: this server was started without --allow-quit"
kill -0 "$OURS_PID" 2>/dev/null || fail "our server exited on a refused quit"
qperf_client 30 after.out rperftest qperf 127.0.0.1 conf
expect_contains "rem_qperf  =  0.4.11" after.out

log "== argv[0] qperf, and --allow-quit"
# The link lives outside the case directory: the runner scans every file there for Rust panic
# messages, and the guest's grep would read the binary through the link.
QDIR=$(mktemp -d /tmp/qperf-link.XXXXXX)
ln -s "$(command -v rperftest)" "$QDIR/qperf"
run "$QDIR/qperf" -V
expect_contains "qperf 0.4.11"
start_server -p 19767 "$QDIR/qperf" -lp 19767 --allow-quit
qperf_client 30 q.out "$QDIR/qperf" -lp 19767 127.0.0.1 quit
wait_server 10
[ "$SERVER_RC" = 0 ] || fail "--allow-quit server exited $SERVER_RC after quit"
rm -rf "$QDIR"
log "qperf case passed"
