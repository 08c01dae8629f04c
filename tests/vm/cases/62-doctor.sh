#!/bin/bash
# rperftest doctor on one VM (expected ~5 s; 3.4 s bare, 4.5 s full on the bed): healthy -> no FAIL, exit 0, --json parses
# with "ok": true; --gpu: every GPU check n/a (no GPU), none ok; doctor --serve + doctor 127.0.0.1 -> RC SEND/WRITE/READ ok and the
# counters warn that only loopback moved; then each fault, named with its fix, and restored:
# `ulimit -l 64` (FAIL memlock without CAP_IPC_LOCK, warn with it), uverbs not openable by
# uid 65534 (chmod 600, as nobody via su), the netdev down, no RDMA device at all
# (rdma link delete rxe0; then rdma_rxe unloaded too; then both back exactly as /init made them).
# mode: any
# timeout: 90
. "$VMTEST_LIB"

command -v rperftest >/dev/null || fail "rperftest not on PATH"
P=/sys/class/infiniband/$RXE_DEV/ports/1
UV=/dev/infiniband/uverbs0
UV_MODE=$(stat -c %a "$UV")
ROUTES=$(ip route show)
want_gid=$(echo "$RXE_IP" | awk -F. '{printf "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", $1,$2,$3,$4}')

# Back to the state the bed made: the netdev up with its routes, rxe0 on it, ACTIVE, with the
# RoCE v2 IPv4 GID at $RXE_GID_IDX, uverbs0 its device node with its mode.
restore() {
    ip link set dev "$RXE_NETDEV" up 2>/dev/null
    [ -d /sys/class/infiniband/$RXE_DEV ] || rdma link add "$RXE_DEV" type rxe netdev "$RXE_NETDEV" 2>/dev/null
    local r
    while read -r r; do
        [ -z "$r" ] && continue
        # shellcheck disable=SC2086
        ip route show | grep -qxF "$r" || ip route add $r 2>/dev/null
    done <<<"$ROUTES"
    chmod "$UV_MODE" "$UV" 2>/dev/null
    local i=0 st g
    while [ $i -lt 100 ]; do
        st=""; read -r st <"$P/state" 2>/dev/null
        g=""; read -r g <"$P/gids/$RXE_GID_IDX" 2>/dev/null
        case "$st" in *ACTIVE*) [ "$g" = "$want_gid" ] && return 0 ;; esac
        sleep 0.1; i=$((i + 1))
    done
    return 1
}
trap 'restore; sed -i "/^rpt-doctor:/d" /etc/passwd; _vmtest_cleanup' EXIT

# --- healthy
expect_rc 0 rperftest doctor
expect_not_contains "FAIL "
expect_contains "ok    $RXE_DEV/1 GID: RoCE v2 GID of IPv4 $RXE_IP is index $RXE_GID_IDX"
expect_contains "ok    $RXE_DEV/1 netdev: $RXE_NETDEV up"
expect_contains "n/a   $RXE_DEV PCIe: n/a"
rperftest doctor --json >"$VMTEST_TMP/doctor.json"; rc=$?
[ "$rc" = 0 ] || fail "doctor --json: rc=$rc"
rperftest check-json "$VMTEST_TMP/doctor.json" || fail "doctor --json is not JSON"
grep -q '"ok": true' "$VMTEST_TMP/doctor.json" || fail "doctor --json does not say ok"
grep -q '"status": "FAIL"' "$VMTEST_TMP/doctor.json" && fail "doctor --json has a FAIL"
# --gpu on the bed (no GPU): every GPU check is n/a with the reason, none is ok.
expect_rc 0 rperftest doctor --gpu
expect_contains "n/a   GPU driver: no GPU (no NVIDIA or AMD"
expect_not_contains "ok    GPU"
[ "$(grep -c '^n/a   GPU ' "$LAST_OUT")" = 7 ] || fail "doctor --gpu: want 7 n/a GPU lines"

# --- peer mode against this host: the RDMA part works; the packets never left
start_server -p 18600 rperftest doctor --serve -p 18600 --listen-timeout 20
expect_rc 0 with_timeout 20 rperftest doctor -p 18600 127.0.0.1
for op in SEND WRITE READ; do expect_contains "ok    peer RC $op"; done
expect_contains "ok    peer MTU: active MTU"
expect_contains "only loopback moved"
wait_server 20
[ "$SERVER_RC" = 0 ] || fail "doctor --serve: rc=$SERVER_RC"
expect_contains "ok    peer RC SEND: received the client's" "$SERVER_LOG"
# Nothing listens: refused, named, fast.
t0=$(date +%s)
expect_rc 1 with_timeout 20 rperftest doctor -p 18601 127.0.0.1
expect_contains "FAIL  peer TCP: 127.0.0.1:18601 refused the connection"
expect_contains "fix: start 'rperftest doctor --serve -p 18601'"
[ $(( $(date +%s) - t0 )) -le 15 ] || fail "refused port took more than 15 s"

# A user of uid 65534 for su (busybox's su in bare mode needs a passwd entry; removed at exit).
NOBODY=$(awk -F: '$3 == 65534 { print $1; exit }' /etc/passwd)
if [ -z "$NOBODY" ]; then
    NOBODY=rpt-doctor
    echo "$NOBODY:x:65534:65534:doctor case:/:/bin/sh" >>/etc/passwd
fi
R=$(command -v rperftest)
as_nobody() { su -s /bin/sh "$NOBODY" -c "$*"; }

# --- ulimit -l 64: FAIL for a user; root keeps CAP_IPC_LOCK, so only a warning there
run as_nobody "ulimit -l 64 && exec $R doctor"
[ "$LAST_RC" = 1 ] || fail "doctor as uid 65534 with ulimit -l 64: rc=$LAST_RC, want 1"
expect_contains "FAIL  memlock: RLIMIT_MEMLOCK is 64 KiB; a default ib_write_bw (-s 65536, one QP) registers 128 KiB"
expect_contains "fix: ulimit -l unlimited"
expect_rc 0 bash -c 'ulimit -l 64 && exec rperftest doctor'
expect_contains "warn  memlock: RLIMIT_MEMLOCK is 64 KiB"
expect_contains "this process has CAP_IPC_LOCK"

# --- uverbs not openable by a non-root user
chmod 600 "$UV" || fail "chmod 600 $UV"
run as_nobody "$R doctor"
chmod "$UV_MODE" "$UV"
[ "$LAST_RC" = 1 ] || fail "doctor as uid 65534 with $UV mode 600: rc=$LAST_RC, want 1"
expect_contains "FAIL  $RXE_DEV access: $UV does not open for read/write as uid 65534 (Permission denied); fix: chmod 666 $UV"

# --- the netdev down
ip link set dev "$RXE_NETDEV" down || fail "ip link set dev $RXE_NETDEV down"
expect_rc 1 rperftest doctor
expect_contains "FAIL  $RXE_DEV/1 netdev: $RXE_NETDEV is down"
expect_contains "fix: ip link set dev $RXE_NETDEV up"
restore || fail "rxe0 not ACTIVE with its GID at $RXE_GID_IDX after the netdev came back"

# --- no RDMA device at all
rdma link delete "$RXE_DEV" || fail "rdma link delete $RXE_DEV"
expect_rc 1 rperftest doctor
expect_contains "FAIL  devices: no RDMA device in /sys/class/infiniband"
expect_contains "rdma link add rxe0 type rxe netdev"
# ... and without the rdma_rxe module (a kernel that never loaded it): the hint loads it first.
# /init insmods it from the line of /etc/rxe-vm/modules.load; the same line puts it back.
RXE_KO=$(awk '$1 ~ /\/rdma_rxe\.ko$/ { print $1 }' /etc/rxe-vm/modules.load)
[ -n "$RXE_KO" ] || fail "rdma_rxe not in /etc/rxe-vm/modules.load"
rmmod rdma_rxe || fail "rmmod rdma_rxe"
expect_rc 1 rperftest doctor
expect_contains "FAIL  devices: no RDMA device in /sys/class/infiniband"
expect_contains "modprobe rdma_rxe && rdma link add rxe0 type rxe netdev"
insmod "/lib/modules/$(uname -r)/$RXE_KO" || fail "insmod rdma_rxe"
restore || fail "rxe0 not re-created ACTIVE with its GID at $RXE_GID_IDX"
[ "$(cat /sys/class/infiniband_verbs/uverbs0/ibdev 2>/dev/null)" = "$RXE_DEV" ] || fail "uverbs0 is not $RXE_DEV after re-creating it"
[ "$(stat -c %a "$UV")" = "$UV_MODE" ] || chmod "$UV_MODE" "$UV"
expect_rc 0 rperftest doctor
log "doctor: healthy, loopback peer, and five faults named and restored"
