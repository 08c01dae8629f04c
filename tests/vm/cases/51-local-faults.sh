#!/bin/bash
# Local faults (issue #8 item 3), each caught with a one-line message before anything waits:
# no such device (the message lists the devices there are), no such port (-i 2 on one port), an
# empty GID index (-x) (an unreachable peer GID is in 53-completion-errors),
# RLIMIT_MEMLOCK too low (REG_MR ENOMEM → hint; run as nobody, since root's CAP_IPC_LOCK ignores
# the limit), no permission on /dev/infiniband (mode 000, run as nobody), -s beyond the port's
# max_msg_sz, -t beyond perftest's 15000 and -t × -q beyond max_cqe (rxe's max_qp_wr 16384 is above
# what the parser accepts, so the max_qp_wr check is only unit-tested). Each: exit code, message, and a time bound.
# mode: full
# (not in bare: the bare image differs only by lacking rdma-core, which 19-bare-all-tools covers)
# timeout: 240
. "$VMTEST_LIB"
X=(-d "$RXE_DEV" -x "$RXE_GID_IDX")
# fails_fast RC SECS MSG CMD...: CMD exits RC within SECS with MSG in its output, and no panic
fails_fast() {
    local rc=$1 secs=$2 msg=$3; shift 3
    mark
    run with_timeout $((secs + 10)) "$@"
    [ "$LAST_RC" = "$rc" ] || fail "rc=$LAST_RC, want $rc: $*"
    expect_contains "$msg"
    expect_not_contains "panicked at"
    bound "$secs" "$*"
}
DEVNODE=$(ls /dev/infiniband/uverbs* | head -1)
# An unprivileged user (busybox su, no password asked as root; busybox setpriv cannot change uid).
grep -q '^vmfault:' /etc/passwd || echo 'vmfault:x:65534:65534:fault tests:/tmp:/bin/bash' >>/etc/passwd
grep -q '^vmfault:' /etc/group || echo 'vmfault:x:65534:' >>/etc/group
RP=$(command -v rperftest)
# as_user CMDLINE: run CMDLINE (a string) as vmfault
as_user() { su -s /bin/bash -c "$1" vmfault; }

log "== no such device"
fails_fast 1 5 "IB device nosuch0 not found" rperftest ib_write_bw -d nosuch0 "$RXE_IP"
expect_contains "$RXE_DEV"          # the message lists the devices there are

log "== no such port"
fails_fast 1 5 " Port 2 (-i) does not exist: $RXE_DEV has 1 port; use -i 1 or leave -i out" \
    rperftest ib_write_bw "${X[@]}" -i 2 "$RXE_IP"

log "== empty GID index"
fails_fast 1 5 "GID index 5 (-x) is empty on $RXE_DEV port 1; populated indices: " \
    rperftest ib_write_bw -d "$RXE_DEV" -x 5 "$RXE_IP"
expect_contains "$RXE_GID_IDX"

log "== -s beyond the port's max_msg_sz"
fails_fast 1 5 "Message size 16777216 (-s) is larger than the port's max_msg_sz 8388608 on $RXE_DEV; use -s 8388608 or less" \
    rperftest ib_write_bw "${X[@]}" -s 16777216 "$RXE_IP"

log "== -t beyond what perftest accepts (parser), and -t × -q beyond the device's max_cqe"
fails_fast 1 5 "-t: Tx depth should be between 1 and 15000" \
    rperftest ib_write_bw "${X[@]}" -t 100000 "$RXE_IP"
MAXCQE=$(rperftest devinfo -v -d "$RXE_DEV" | awk '$1 == "max_cqe:" {print $2}')
log "max_cqe is $MAXCQE"
fails_fast 1 5 "CQ depth 45000 (-t/-r × -q 3) exceeds the device's max_cqe $MAXCQE on $RXE_DEV; lower -t, -r or -q" \
    rperftest ib_write_bw "${X[@]}" -t 15000 -q 3 -n 20000 "$RXE_IP"     # -n: perftest lowers -t to -n

log "== RLIMIT_MEMLOCK too low (64 KiB), as an unprivileged user"
MODE=$(stat -c %a "$DEVNODE")
chmod 666 "$DEVNODE"
start_server rperftest ib_write_bw "${X[@]}" -n 5 -s 1048576
as_user id
fails_fast 1 20 "RLIMIT_MEMLOCK" bash -c "ulimit -l 64 && $(declare -f as_user) && as_user '$RP ib_write_bw ${X[*]} -n 5 -s 1048576 $RXE_IP'"
expect_contains "ENOMEM"
mark
wait_server 20
[ "$SERVER_RC" = 1 ] || fail "server rc=$SERVER_RC, want 1"
grep -qF "peer closed the connection" "$SERVER_LOG" || fail "server does not say the peer closed"
bound 10 "server after the client's memlock failure"

log "== no permission on $DEVNODE (mode 000, unprivileged user)"
chmod 000 "$DEVNODE"
fails_fast 1 5 "/dev/infiniband" as_user "$RP ib_write_bw ${X[*]} -n 5 $RXE_IP"
expect_contains "ermission"
chmod "$MODE" "$DEVNODE"
