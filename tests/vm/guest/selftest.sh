#!/bin/bash
# Default guest command: prove rxe0 is usable and run perftest loopback on it.
# Env from /init: RXE_DEV RXE_NETDEV RXE_IP RXE_GID_IDX
# Set RXE_SELFTEST_QUICK=1 for the device checks only (no perftest).
set -u
D=${RXE_DEV:-rxe0}
X=${RXE_GID_IDX:-1}
fail=0
step() { echo; echo "===== [t=$(cut -d" " -f1 /proc/uptime)] $* ====="; }
now() { cut -d' ' -f1 /proc/uptime; }

step "uname / modules"
uname -a
lsmod | grep -E 'rdma_rxe|ib_uverbs|rdma_ucm|ib_core|udp_tunnel' || true

step "rdma link / dev"
rdma link show
rdma dev show

step "ip addr $RXE_NETDEV"
ip -br addr show dev "$RXE_NETDEV"

step "ls -l /dev/infiniband"
ls -l /dev/infiniband
for n in uverbs0 rdma_cm; do
    [ -c /dev/infiniband/$n ] || { echo "MISSING /dev/infiniband/$n"; fail=1; }
done

step "GID table (gids / gid_attrs/types / gid_attrs/ndevs)"
P=/sys/class/infiniband/$D/ports/1
# gid_tbl_len is 1024: use the read builtin, a fork per entry costs ~20 ms under TCG
for g in $P/gids/*; do
    i=${g##*/}
    read -r v <"$g" 2>/dev/null || continue
    [ "$v" = "0000:0000:0000:0000:0000:0000:0000:0000" ] && continue
    t=""; n=""
    read -r t <"$P/gid_attrs/types/$i" 2>/dev/null
    read -r n <"$P/gid_attrs/ndevs/$i" 2>/dev/null
    echo "gid[$i] $v type=$t ndev=$n"
done
echo "selected RoCEv2 IPv4 GID index: $X"

if [ "${RXE_VM_MODE:-full}" = bare ]; then
    # bare image: no rdma-core, no perftest; the kernel-side checks above are all there is
    step "SELFTEST RESULT (bare: kernel checks only): fail=$fail"
    exit $fail
fi

step "ibv_devices"
ibv_devices
step "ibv_devinfo -v -d $D"
ibv_devinfo -v -d "$D" || fail=1
ibv_devinfo -d "$D" | grep -q PORT_ACTIVE || { echo "port not PORT_ACTIVE"; fail=1; }

[ "${RXE_SELFTEST_QUICK:-0}" = 1 ] && { echo "SELFTEST quick done fail=$fail"; exit $fail; }

# poll a check (a command) up to 100 times, 0.1 s apart; false if it never held
wait_for() {
    i=0
    while [ $i -lt 100 ]; do
        "$@" && return 0
        sleep 0.1; i=$((i+1))
    done
    return 1
}
# a TCP port is listening (perftest OOB exchange, default 18515)
tcp_listening() { netstat -ltn 2>/dev/null | grep -q ":$1 "; }
# an rdma_cm listener exists (perftest -R server)
cm_listening() { rdma resource show cm_id 2>/dev/null | grep -q LISTEN; }
wait_listen() { wait_for tcp_listening "$1"; }

# serve_and_connect <name> <ready check> <target> <tool> <args...> : the server in the background,
# the client (args, then target) once the check holds (or after 2 s), both outputs and rcs
serve_and_connect() {
    name=$1 ready=$2 target=$3; shift 3
    tool=$1; shift
    t=$(now)
    echo "--- server: $tool $*"
    $tool "$@" >/tmp/srv.$name.log 2>&1 &
    spid=$!
    $ready || sleep 2
    echo "--- client: $tool $* $target"
    $tool "$@" "$target"
    crc=$?
    wait $spid; src=$?
    echo "--- server output:"
    cat /tmp/srv.$name.log
    echo "--- $name: client rc=$crc server rc=$src wall=$(awk "BEGIN{print $(now)-$t}")s"
    [ $crc = 0 ] && [ $src = 0 ] || { echo "FAILED: $name"; fail=1; }
}

# run_pair <name> <tool> <args...> : server in background, client against 127.0.0.1
run_pair() {
    name=$1; shift
    tool=$1; shift
    step "$name: $tool $*"
    serve_and_connect "$name" "wait_listen 18515" 127.0.0.1 "$tool" -d "$D" -x "$X" "$@"
}

# rdma_cm variant: connection set up via /dev/infiniband/rdma_cm to the rxe IP
run_pair_cm() {
    name=$1; shift
    tool=$1; shift
    step "$name: $tool -R $* (rdma_cm)"
    serve_and_connect "$name" "wait_for cm_listening" "$RXE_IP" "$tool" -d "$D" -R "$@"
}

T0=$(now)
step "ibv_rc_pingpong (rdma-core example)"
ibv_rc_pingpong -d "$D" -g "$X" -n 100 >/tmp/srv.pp.log 2>&1 &
spid=$!
wait_listen 18515 || sleep 2
ibv_rc_pingpong -d "$D" -g "$X" -n 100 127.0.0.1; crc=$?
wait $spid; src=$?
cat /tmp/srv.pp.log
echo "--- ibv_rc_pingpong: client rc=$crc server rc=$src"
[ $crc = 0 ] && [ $src = 0 ] || { echo "FAILED: ibv_rc_pingpong"; fail=1; }

run_pair write_bw   ib_write_bw  -F
run_pair send_lat   ib_send_lat  -F
run_pair read_bw    ib_read_bw   -F
run_pair atomic_bw  ib_atomic_bw -F -A FETCH_AND_ADD
run_pair_cm write_bw_cm ib_write_bw -F
run_pair_cm send_bw_cm  ib_send_bw  -F

step "perftest total wall: $(awk "BEGIN{print $(now)-$T0}")s"
step "SELFTEST RESULT: fail=$fail"
exit $fail
