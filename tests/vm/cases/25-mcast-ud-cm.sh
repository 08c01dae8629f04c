#!/bin/bash
# UD extras of issue #5.
# 1. Multicast (-g/--mcg, -M/--MGID) for send_bw and send_lat. rxe cannot loop a multicast
#    packet back to its own netdev (the copy never reaches the RoCE socket), so this case builds
#    a veth pair with one rxe device on each end (rxeA on va = client, rxeB on vb = server) and
#    joins each side's group at the IP level on the receiving netdev (rxe's ATTACH_MCAST adds
#    only the MAC filter): the server's group 239.1.2.4 on vb, the send_lat client's group
#    239.1.2.5 on va, given as IPv4-mapped MGIDs with -M. (perftest's default group
#    ff01:0:0:2:c985:: is interface-local and an IPv6 address: with rxe's IPv4 GID both
#    perftest and rperftest stop at "Found Incompatibility issue with GID types.", checked below;
#    with an IPv6 GID the kernel drops interface-local multicast on a real netdev.)
#    send_bw -g and send_lat -g: ours<->ours, ours -> C server, C client -> ours; the server's
#    BW line must be non-zero (the multicast messages arrived), the header must say
#    "Multicast" and the server's own address line must be its MGID with QPN 0xffffff.
# 2. UD over rdma_cm: send_bw and send_lat with -c UD -R (SIDR; the send_lat client tells the
#    server its QPN with one SEND) and -c UD -z, ours<->ours and against C both ways; send_bw
#    -c UD -R with -b and with -q 2 in the three pairings.
# mode: full
# (not in bare: the bare image differs only by lacking rdma-core, which 19-bare-all-tools covers)
# timeout: 900
. "$VMTEST_LIB"
full() { [ "$RXE_VM_MODE" = full ]; }

# ---- the veth pair -------------------------------------------------------------------------
ip link add va type veth peer name vb || fail "cannot create a veth pair"
ip link set va up && ip link set vb up
ip addr add 10.98.1.1/24 dev va && ip addr add 10.98.1.2/24 dev vb
# The devices and the veth pair go when the case ends, whatever happens: later cases (and
# tools that list every device, like 60's ibstat -l) see only rxe0.
_mcast_cleanup() {
    rdma link del rxeA 2>/dev/null; rdma link del rxeB 2>/dev/null; ip link del va 2>/dev/null
    _vmtest_cleanup
}
trap _mcast_cleanup EXIT
rdma link add rxeA type rxe netdev va || fail "rdma link add rxeA failed"
rdma link add rxeB type rxe netdev vb || fail "rdma link add rxeB failed"
# Both addresses are local to this one host: accept them as multicast sources.
for f in all default va vb; do
    echo 1 >/proc/sys/net/ipv4/conf/$f/accept_local
    echo 0 >/proc/sys/net/ipv4/conf/$f/rp_filter
done
ip route add 224.0.0.0/4 dev va || fail "no multicast route"
ip addr add 239.1.2.4/32 dev vb autojoin || fail "cannot join 239.1.2.4 on vb"
ip addr add 239.1.2.5/32 dev va autojoin || fail "cannot join 239.1.2.5 on va"
M4=0:0:0:0:0:0:0:0:0:0:255:255:239:1:2:4
M5=0:0:0:0:0:0:0:0:0:0:255:255:239:1:2:5
MGID4="00:00:00:00:00:00:00:00:00:00:255:255:239:01:02:04"
MGID5="00:00:00:00:00:00:00:00:00:00:255:255:239:01:02:05"

# gid_ix DEV HEX: the GID index of DEV whose entry ends in HEX (the IPv4 address)
gid_ix() {
    local t i
    for t in $(seq 50); do
        for i in $(seq 0 15); do
            grep -qs "$2\$" /sys/class/infiniband/$1/ports/1/gids/$i && { echo "$i"; return 0; }
        done
        sleep 0.1
    done
    return 1
}
GA=$(gid_ix rxeA ffff:0a62:0101) || fail "no IPv4 GID on rxeA"
GB=$(gid_ix rxeB ffff:0a62:0102) || fail "no IPv4 GID on rxeB"
log "rxeA GID index $GA, rxeB GID index $GB"
A=(-d rxeA -x "$GA")
B=(-d rxeB -x "$GB")

# mcast_checks TOOLNAME FILE ROLE: the multicast header and address lines of one side
mcast_checks() {
    grep -qF "                    $1 Multicast Test" "$2" || fail "no '$1 Multicast Test' header in $2"
    grep -qF " MultiCast runs on UD!" "$2" || fail "no 'MultiCast runs on UD!' line in $2"
    grep -qF " Connection type : UD" "$2" || fail "-g did not force UD in $2"
    case $3 in
        server) grep -A1 -F " local address: LID 0000 QPN 0xffffff" "$2" | grep -qF " MGID: $MGID4" \
                    || fail "server's local address is not its group (QPN 0xffffff, MGID $MGID4) in $2" ;;
        client) grep -A1 -F " remote address: LID 0000 QPN 0xffffff" "$2" | grep -qF " MGID: $MGID4" \
                    || fail "client's remote address is not the server's group in $2" ;;
    esac
}

for tool in ib_send_bw ib_send_lat; do
    n=100; [ $tool = ib_send_lat ] && n=50
    name="Send BW"; [ $tool = ib_send_lat ] && name="Send Latency"
    # send_bw: only the server attaches (the client's -M is not used); send_lat: both do.
    CM=$M4; [ $tool = ib_send_lat ] && CM=$M5
    log "== $tool -g ours <-> ours (rxeA -> rxeB over veth)"
    pair $tool rperftest $tool "${B[@]}" -g -M $M4 -n $n -- rperftest $tool "${A[@]}" -g -M $CM -n $n 10.98.1.2
    mcast_checks "$name" "$SERVER_LOG" server
    mcast_checks "$name" "$VMTEST_TMP/client.out" client
    if [ $tool = ib_send_lat ]; then
        grep -A1 -F " local address: LID 0000 QPN 0xffffff" "$VMTEST_TMP/client.out" | grep -qF " GID: $MGID5" \
            || fail "send_lat client's own line is not its group $MGID5 (labelled GID, as perftest)"
    fi
    if full; then
        log "== $tool -g ours -> C server"
        pair $tool $tool "${B[@]}" -g -M $M4 -n $n -- rperftest $tool "${A[@]}" -g -M $CM -n $n 10.98.1.2
        mcast_checks "$name" "$VMTEST_TMP/client.out" client
        log "== $tool -g C client -> ours"
        pair $tool rperftest $tool "${B[@]}" -g -M $M4 -n $n -- $tool "${A[@]}" -g -M $CM -n $n 10.98.1.2
        mcast_checks "$name" "$SERVER_LOG" server
    fi
done

log "== ib_send_bw -g ours <-> ours over the ioctl transport (ATTACH/DETACH_MCAST through INVOKE_WRITE)"
pair ib_send_bw env RPERFTEST_VERBS_TRANSPORT=ioctl rperftest ib_send_bw "${B[@]}" -g -M $M4 -n 100 -- \
    env RPERFTEST_VERBS_TRANSPORT=ioctl rperftest ib_send_bw "${A[@]}" -g -M $M4 -n 100 10.98.1.2
mcast_checks "Send BW" "$SERVER_LOG" server

# Golden output of the multicast runs: our stdout against C perftest's for the same commands
# (QPN/PSN masked, result-line numbers masked), client and server.
gmask() {
    sed -E 's/QPN 0x[0-9a-f]+/QPN X/; s/PSN 0x[0-9a-f]+/PSN X/; /^ [0-9]/{s/[0-9][0-9.]*/#/g; s/[ \t]+/ /g; s/ $//}' "$1"
}
golden_mcast() {
    local tool=$1 cm=$2 who try rc
    for who in c ours; do
        local bin=("$tool"); [ $who = ours ] && bin=(rperftest "$tool")
        for try in 1 2 3; do
            start_server -t 60 bash -c 'exec "$@" 2>'"$who.srv.err" _ "${bin[@]}" "${B[@]}" -g -M $M4 -n 50
            with_timeout 120 "${bin[@]}" "${A[@]}" -g -M $cm -n 50 10.98.1.2 >"$who.cli.out" 2>"$who.cli.err"
            rc=$?
            wait_server 60 >/dev/null
            cp "$SERVER_LOG" "$who.srv.out"
            if [ $who = c ] && [ $try -lt 3 ] && c_clock_flaked "$who".{cli,srv}.{out,err}; then
                log "C perftest could not calibrate its clock (try $try); retrying"
                continue
            fi
            break
        done
        [ "$rc" = 0 ] && [ "$SERVER_RC" = 0 ] || { cat "$who".{cli,srv}.{out,err}; fail "golden $who $tool: rc $rc/$SERVER_RC"; }
    done
    for side in cli srv; do
        gmask c.$side.out >c.$side.masked
        gmask ours.$side.out >ours.$side.masked
        diff -u c.$side.masked ours.$side.masked || fail "$tool -g $side output differs from C perftest's (- C, + ours)"
        log "$tool -g $side: stdout identical to C perftest's after masking"
    done
}
if full; then
    golden_mcast ib_send_bw $M4
    golden_mcast ib_send_lat $M5
fi

log "== send_bw -g with perftest's default group on rxe's IPv4 GID: the GID families differ"
start_server rperftest ib_send_bw -d "$RXE_DEV" -g -n 20
expect_rc 1 with_timeout 60 rperftest ib_send_bw -d "$RXE_DEV" -g -n 20 "$RXE_IP"
expect_contains "Found Incompatibility issue with GID types."
wait_server 30
[ "$SERVER_RC" = 1 ] || fail "server rc=$SERVER_RC, want 1"
grep -qF "Found Incompatibility issue with GID types." "$SERVER_LOG" || fail "server did not report the GID families"

log "== -M that is not 16 byte values: one line naming the option, exit 1"
expect_rc 1 with_timeout 10 rperftest ib_send_bw "${B[@]}" -g -M 255:1:2
expect_contains "-M/--MGID"
[ "$(wc -l <"$LAST_OUT")" = 1 ] || fail "the -M error is not one line"

# ---- UD over rdma_cm ------------------------------------------------------------------------
cm_header() {
    grep -qF $' rdma_cm QPs\t : '"$2" "$1" || fail "no 'rdma_cm QPs : $2' header line in $1"
    grep -qF " Data ex. method : rdma_cm" "$1" || fail "no 'Data ex. method : rdma_cm' header line in $1"
    grep -qF " Connection type : UD" "$1" || fail "not a UD run: $1"
}
for spec in "ib_send_bw:-n 200" "ib_send_lat:-n 100"; do
    tool=${spec%%:*}
    opts=${spec#*:}
    for cm in -R -z; do
        on=ON; [ $cm = -z ] && on=OFF
        D=(-d "$RXE_DEV" -c UD $cm)
        log "== $tool -c UD $cm ours <-> ours"
        pair -c "$tool" rperftest "$tool" "${D[@]}" $opts -- rperftest "$tool" "${D[@]}" $opts "$RXE_IP"
        cm_header "$VMTEST_TMP/client.out" $on
        cm_header "$SERVER_LOG" $on
        if full; then
            log "== $tool -c UD $cm ours -> C server"
            pair -c "$tool" "$tool" "${D[@]}" $opts -- rperftest "$tool" "${D[@]}" $opts "$RXE_IP"
            cm_header "$VMTEST_TMP/client.out" $on
            log "== $tool -c UD $cm C client -> ours"
            pair -c "$tool" rperftest "$tool" "${D[@]}" $opts -- "$tool" "${D[@]}" $opts "$RXE_IP"
            cm_header "$SERVER_LOG" $on
        fi
    done
done
# -b (the client's QPN message makes the server's way back) and -q 2 (one SIDR per QP)
for opts in "-b -n 200" "-q 2 -n 200"; do
    D=(-d "$RXE_DEV" -c UD -R)
    log "== ib_send_bw -c UD -R $opts ours <-> ours"
    pair -c ib_send_bw rperftest ib_send_bw "${D[@]}" $opts -- rperftest ib_send_bw "${D[@]}" $opts "$RXE_IP"
    cm_header "$SERVER_LOG" ON
    if full; then
        log "== ib_send_bw -c UD -R $opts ours -> C server"
        pair -c ib_send_bw ib_send_bw "${D[@]}" $opts -- rperftest ib_send_bw "${D[@]}" $opts "$RXE_IP"
        log "== ib_send_bw -c UD -R $opts C client -> ours"
        pair -c ib_send_bw rperftest ib_send_bw "${D[@]}" $opts -- ib_send_bw "${D[@]}" $opts "$RXE_IP"
    fi
done
if rdma resource show cm_id 2>/dev/null | grep -q .; then
    rdma resource show cm_id
    fail "rdma_cm ids left after the UD rdma_cm runs"
fi
log "multicast and UD over rdma_cm: all pairs passed"
