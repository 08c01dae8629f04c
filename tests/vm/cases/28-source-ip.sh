#!/bin/bash
# --source_ip / --bind_source_ip (perftest 6.06: the TCP client binds it before connect, the
# server listens on it only, -z/-R resolve the rdma_cm control connection from it). A second
# address $SRC goes on the rxe netdev (removed at the end); ib_write_bw runs with the client
# bound to it, and the server side must see the connection come from $SRC: the established
# sockets of port 18515 (/proc/net/tcp) or, with -R, the rdma_cm ids (`rdma resource show
# cm_id`: src-addr $SRC -> dst-addr $RXE_IP:18515). Pairs: ours<->ours, ours -> C server,
# C client -> ours; a server bound to $SRC only; and a non-local address: one line, exit 1.
# mode: full
# (not in bare: the bare image differs only by lacking rdma-core, which 19-bare-all-tools covers)
# timeout: 900
. "$VMTEST_LIB"
X=(-d "$RXE_DEV" -x "$RXE_GID_IDX")
full() { [ "$RXE_VM_MODE" = full ]; }

# A second address of the rxe netdev, next to $RXE_IP.
last=${RXE_IP##*.}
SRC=${RXE_IP%.*}.$((last == 2 ? 3 : 2))
BAD=10.1.2.3
ip addr add "$SRC/32" dev "$RXE_NETDEV" || fail "cannot add $SRC to $RXE_NETDEV"
trap 'ip addr del "$SRC/32" dev "$RXE_NETDEV" 2>/dev/null; _vmtest_cleanup' EXIT
ip -4 addr show dev "$RXE_NETDEV"
# rdma_cm needs the RoCEv2 GID of $SRC in rxe0's table (filled asynchronously).
want=$(echo "$SRC" | awk -F. '{printf "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", $1,$2,$3,$4}')
P=/sys/class/infiniband/$RXE_DEV/ports/1
i=0
until grep -qx "$want" $P/gids/* 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 100 ] || fail "no GID for $SRC on $RXE_DEV after 10 s"
    sleep 0.1
done
log "source address $SRC on $RXE_NETDEV (RXE_IP $RXE_IP), GID present"

# hexip A.B.C.D: the address as /proc/net/tcp prints it (little-endian host)
hexip() { local IFS=.; set -- $1; printf '%02X%02X%02X%02X' "$4" "$3" "$2" "$1"; }

# Background watchers, started before a pair and stopped after it.
_tcp_watch() {
    local sl loc rem st rest
    while :; do
        while read -r sl loc rem st rest; do
            [ "$st" = 01 ] && [ "${loc: -5}" = :4853 ] && echo "$loc $rem"
        done </proc/net/tcp >>"$1"
        sleep 0.05
    done
}
_cm_watch() {
    while :; do rdma resource show cm_id >>"$1" 2>/dev/null; sleep 0.1; done
}
WATCH_PID=""
watch_start() { : >"$2"; "$1" "$2" & WATCH_PID=$!; _VMTEST_BG+=("$WATCH_PID"); }
watch_stop() { kill "$WATCH_PID" 2>/dev/null; wait "$WATCH_PID" 2>/dev/null; WATCH_PID=""; }

# tcp_peer_is FILE ADDR: every established connection on the server's port 18515 came from ADDR
tcp_peer_is() {
    local h; h=$(hexip "$2")
    sort -u "$1" | sed 's/^/  established: /'
    grep -q " $h:" "$1" || fail "no established connection from $2 ($h) to port 18515 seen"
    ! grep -qv " $h:" "$1" || fail "a connection to port 18515 came from another address than $2"
}
# cm_src_is FILE ADDR: an rdma_cm id from ADDR to the server's $RXE_IP:18515 was seen
cm_src_is() {
    grep -F "dst-addr $RXE_IP:18515" "$1" | sed 's/.*\(src-addr\)/  cm_id: \1/' | sort -u
    grep -q "src-addr $2:[0-9]* dst-addr $RXE_IP:18515" "$1" \
        || fail "no rdma_cm id from $2 to $RXE_IP:18515 seen (rdma resource show cm_id)"
}

W=$VMTEST_TMP/watch.txt
log "== TCP: ours client --source_ip $SRC <-> ours server"
watch_start _tcp_watch "$W"
pair ib_write_bw rperftest ib_write_bw "${X[@]}" -D 2 -- rperftest ib_write_bw "${X[@]}" -D 2 --source_ip "$SRC" "$RXE_IP"
watch_stop
tcp_peer_is "$W" "$SRC"

log "== TCP: --bind_source_ip (6.29's spelling) ours <-> ours"
watch_start _tcp_watch "$W"
pair ib_write_bw rperftest ib_write_bw "${X[@]}" -D 2 -- rperftest ib_write_bw "${X[@]}" -D 2 --bind_source_ip "$SRC" "$RXE_IP"
watch_stop
tcp_peer_is "$W" "$SRC"

# server_bound CLIENT...: our server given --source_ip $SRC listens on $SRC:18515 only, and the
# client (ours, or C's in full mode) run against $SRC gets a result.
server_bound() {
    start_server -t 60 rperftest ib_write_bw "${X[@]}" -D 2 --source_ip "$SRC"
    listen_rows=$(awk -v p=":4853" '$4 == "0A" && substr($2, length($2) - 4) == p { print $2 }' /proc/net/tcp)
    echo "  listening: $listen_rows"
    [ "$listen_rows" = "$(hexip "$SRC"):4853" ] || fail "server listens on '$listen_rows', want $(hexip "$SRC"):4853 only"
    run with_timeout 120 "$@" "${X[@]}" -D 2 "$SRC"
    cp "$LAST_OUT" "$VMTEST_TMP/client.out"
    wait_server 60
    [ "$LAST_RC" = 0 ] || fail "client to $SRC rc=$LAST_RC"
    [ "$SERVER_RC" = 0 ] || fail "server bound to $SRC rc=$SERVER_RC"
    bw_sane "$VMTEST_TMP/client.out"; bw_sane "$SERVER_LOG"
}
log "== TCP: ours server --source_ip $SRC listens on $SRC only; ours client to $SRC"
server_bound rperftest ib_write_bw

if full; then
    log "== TCP: ours client --source_ip $SRC -> C server"
    watch_start _tcp_watch "$W"
    pair ib_write_bw ib_write_bw "${X[@]}" -D 2 -- rperftest ib_write_bw "${X[@]}" -D 2 --source_ip "$SRC" "$RXE_IP"
    watch_stop
    tcp_peer_is "$W" "$SRC"
    # C 6.06's --source_ip never reaches its socket code: getopt_long matches the raw-Ethernet
    # `source_ip` (-j) entry first. Its client therefore connects from the routing table's
    # address; the C side is checked against our server bound to $SRC instead.
    log "== TCP: C client -> ours server --source_ip $SRC"
    server_bound ib_write_bw
fi

log "== -R: ours client --source_ip $SRC <-> ours server (control connection resolved from $SRC)"
D=(-d "$RXE_DEV" -R)
watch_start _cm_watch "$W"
pair -c ib_write_bw rperftest ib_write_bw "${D[@]}" -D 2 -- rperftest ib_write_bw "${D[@]}" -D 2 --source_ip "$SRC" "$RXE_IP"
watch_stop
cm_src_is "$W" "$SRC"
if full; then
    log "== -R: ours client --source_ip $SRC -> C server"
    watch_start _cm_watch "$W"
    pair -c ib_write_bw ib_write_bw "${D[@]}" -D 2 -- rperftest ib_write_bw "${D[@]}" -D 2 --source_ip "$SRC" "$RXE_IP"
    watch_stop
    cm_src_is "$W" "$SRC"
    log "== -R: C client -> ours server --source_ip $SRC (rdma_cm listeners bound to $SRC)"
    watch_start _cm_watch "$W"
    pair -c ib_write_bw rperftest ib_write_bw "${D[@]}" -D 2 --source_ip "$SRC" -- ib_write_bw "${D[@]}" -D 2 "$SRC"
    watch_stop
    grep -F "src-addr $SRC:18515" "$W" | sed 's/.*\(src-addr\)/  cm_id: \1/' | sort -u
    grep -q "src-addr $SRC:18515" "$W" || fail "no rdma_cm id of our server on $SRC:18515 seen"
    ! grep -q "src-addr 0.0.0.0:18515" "$W" || fail "our server listened on the wildcard address"
fi

if [ -r /proc/net/tcp6 ] && ip -6 addr show dev lo | grep -q "inet6 ::1/"; then
    log "== IPv6 (an rperftest extension; 6.06 takes IPv4 only): server and client --source_ip ::1"
    start_server -t 60 rperftest ib_write_bw "${X[@]}" -D 2 --source_ip ::1
    run with_timeout 120 rperftest ib_write_bw "${X[@]}" -D 2 --bind_source_ip ::1 ::1
    cp "$LAST_OUT" "$VMTEST_TMP/client.out"
    wait_server 60
    [ "$LAST_RC" = 0 ] || fail "IPv6 client rc=$LAST_RC"
    [ "$SERVER_RC" = 0 ] || fail "IPv6 server rc=$SERVER_RC"
    bw_sane "$VMTEST_TMP/client.out"; bw_sane "$SERVER_LOG"
else
    log "no IPv6 on lo: the IPv6 pair is left out"
fi

log "== a source address on no interface: one line, exit 1, at once (client, server, -R)"
bad() {
    mark
    expect_rc 1 with_timeout 30 rperftest "$@"
    bound 10 "the refusal of --source_ip $BAD"
    expect_contains "--source_ip $BAD: no local interface has this address"
    [ "$(wc -l <"$LAST_OUT")" = 1 ] || fail "not one line: $*"
}
bad ib_write_bw "${X[@]}" --source_ip "$BAD" "$RXE_IP"
bad ib_write_bw "${X[@]}" --bind_source_ip "$BAD"
bad ib_send_lat -d "$RXE_DEV" -R --source_ip "$BAD" "$RXE_IP"
log "--source_ip: all checks passed"
