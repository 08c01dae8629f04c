#!/bin/bash
# A cluster of rxe VMs on one virtual Ethernet segment, for tests that need
# several real hosts (RoCE packets between kernels, ssh, Slurm).
#
#   cluster.sh up N [--rails R] [--bare K,...] [--bin FILE] [--mem MB]
#   cluster.sh exec NODE -- CMD [ARG...]     CMD on NODE over ssh; its exit code
#   cluster.sh copy PATH NODE:DIR            scp -r PATH to NODE
#   cluster.sh fault NODE [--rail R] KIND [ARGS]   see FAULTS
#   cluster.sh miswire NODE RAIL OTHER_RAIL  NODE's rail-RAIL NIC onto OTHER_RAIL's segment
#   cluster.sh status                        one line per node
#   cluster.sh ssh-config                    path of the host's ssh config
#   cluster.sh down                          stop everything, check nothing is left
#
# up boots N VMs (2 <= N <= 8; 1 vCPU, --mem MB each, default 1024) from
# tests/vm/build-image.sh's image with the cluster overlay (OpenSSH, munge,
# Slurm).  Node K is "nodeK", 10.77.0.K/24 on eth0, MAC 52:54:0a:4d:00:0K,
# rxe0 on eth0; every node resolves every other by name.
# --rails R (1..4, default 1) gives every node R NICs: NIC r (r = 0..R-1) of
# every node sits on segment r (its own bridge, 10.77.r.0/24, node K at
# 10.77.r.K, MAC 52:54:0a:4d:0r:0K), named ethR in the guest with rxeR on it;
# names resolve on rail 0 (nodeK), and nodeK-railR names rail R's address.
# --bare K,... picks
# the nodes booted without rdma-core and C perftest (the others are "full").
# --bin is the rperftest put on every node's PATH (default: $RPERFTEST_BIN,
# else tests/vm/build-static.sh's output).
#
# The segment: a Linux bridge with one tap per VM, inside a network namespace
# that up creates and down deletes (root needed).  Nothing touches the host's
# own interfaces, and deleting the namespace removes every tap and the bridge
# with it.  The host reaches the nodes from inside the namespace (10.77.0.254).
#
# ssh: a key pair made per cluster is root's key on every node, the host keys
# are made per node and listed in every node's ssh_known_hosts, so
# `ssh nodeK CMD` works from any node (and from the host through exec) with
# no password and no prompt.  Slurm 22.05 with munge: slurmctld on node1,
# slurmd on every node, partition "all" (the default) with every node.
#
# FAULTS (applied out of band through a virtio-serial agent, so a fault that
# breaks the network can still be undone):
#   link-down | link-up       the NIC's carrier (qemu set_link: a pulled cable)
#   netem ARGS...             tc netem on eth0's egress (e.g. delay 20ms loss 5%)
#   rate RATE                 tbf rate limit (e.g. 10mbit), both ways
#   mtu N                     eth0's MTU (rxe's active MTU follows)
#   drop-udp PORT | drop-tcp PORT   what reaches the node on that port, or
#                             from it, is dropped (u32 filters on ingress)
#   stop-sshd | start-sshd | stop-slurmd | start-slurmd
#   kill                      the VM is killed outright (SIGKILL to qemu)
#   clear                     no qdisc or filter, link up, MTU 1500, every
#                             NIC of the node back on its own rail's segment
# --rail R puts the fault on that NIC only (default 0: eth0/rxe0); kill,
# sshd and slurmd faults are the node's and take no rail.
# miswire NODE RAIL OTHER moves the node's rail-RAIL NIC (its tap) onto rail
# OTHER's bridge: the crossed cable.  Its address stays rail RAIL's, so it
# reaches none of its rail's peers and hears rail OTHER's traffic.  `fault
# NODE clear` puts it back.
#
# State (logs, keys, pids) lives in $RPT_CLUSTER_DIR (default
# ${TMPDIR:-/tmp}/rperftest-cluster): nodeK.log is node K's console; down
# moves it to $RPT_CLUSTER_DIR.last.
# Bounds: a node that is not up within --boot-timeout (default 150 + 45*N s)
# is named and the cluster is taken down; exec/copy stop with ssh's
# ConnectTimeout 30 s and ServerAlive 15 s x 8 when a node dies.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
STATE=${RPT_CLUSTER_DIR:-${TMPDIR:-/tmp}/rperftest-cluster}
SUBNET=10.77.0
HOST_IP=$SUBNET.254
subnet_of() { echo "10.77.$1"; }          # rail -> its /24
tap_of() { if [ "$2" = 0 ]; then echo "tap$1"; else echo "tap${1}r$2"; fi; }  # node rail -> tap
rail_count() { cat "$STATE/rails" 2>/dev/null || echo 1; }

say() { echo "cluster: $*" >&2; }
die() { echo "cluster: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }

netns() { cat "$STATE/netns" 2>/dev/null; }
in_ns() { ip netns exec "$(netns)" "$@"; }
node_count() { cat "$STATE/size" 2>/dev/null || echo 0; }
node_index() {  # nodeK -> K, checked against the cluster's size
    local n=${1#node}
    [[ $1 == node* && $n =~ ^[1-9][0-9]*$ ]] && [ "$n" -le "$(node_count)" ] \
        || die "no node '$1' in this cluster (node1..node$(node_count))"
    echo "$n"
}
need_up() { [ -f "$STATE/size" ] && ip netns list | grep -qw "$(netns)" || die "no cluster is up (cluster.sh up N)"; }
qemu_pid() { cat "$STATE/node$1.qemu.pid" 2>/dev/null; }
alive() { local p; p=$(qemu_pid "$1"); [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }

# ------------------------------------------------------------------ agent
# One request at a time per node: "ID CMD" down the virtio-serial port, the
# guest answers "ID RC".  Bounded: a guest that does not answer in 60 s (a
# TCG guest answers in well under a second) is reported, not waited for.
agent() {  # K CMD
    local k=$1 cmd=$2 id rc line t0
    exec 7>"$STATE/node$k.agent.lock"; flock -w 60 7 || die "node$k: agent busy for 60 s"
    id=$$.$RANDOM
    printf '%s %s\n' "$id" "$cmd" >"$STATE/node$k.agent.in"
    t0=$(date +%s)
    while :; do
        if IFS= read -r -t 5 line <>"$STATE/node$k.agent.out"; then
            case "$line" in "$id "*) rc=${line#"$id "}; break ;; esac
        fi
        alive "$k" || die "node$k: VM is not running"
        [ $(( $(date +%s) - t0 )) -lt 60 ] || die "node$k: no answer from the guest agent in 60 s"
    done
    exec 7>&-
    return "$rc"
}
monitor() {  # K HMP-COMMAND
    alive "$1" || die "node$1: VM is not running"
    printf '%s\n' "$2" >"$STATE/node$1.mon.in"
}

# -------------------------------------------------------------------- up
cmd_up() {
    local n="" bare="" bin=${RPERFTEST_BIN:-} mem=1024 boot_timeout="" rails=1
    while [ $# -gt 0 ]; do
        case "$1" in
            --bare) bare=$2; shift 2 ;;
            --rails) rails=$2; shift 2 ;;
            --bin) bin=$2; shift 2 ;;
            --mem) mem=$2; shift 2 ;;
            --boot-timeout) boot_timeout=$2; shift 2 ;;
            -*) die "up: unknown option $1" ;;
            *) [ -z "$n" ] || die "up: one N only"; n=$1; shift ;;
        esac
    done
    [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 2 ] && [ "$n" -le 8 ] || die "up: N must be 2..8 (got '${n}')"
    [[ $rails =~ ^[1-4]$ ]] || die "up: --rails must be 1..4 (got '$rails')"
    [ "$(id -u)" = 0 ] || die "up needs root (network namespace, bridge, taps)"
    for t in ip qemu-system-x86_64 ssh ssh-keygen scp flock; do
        command -v $t >/dev/null || die "up: $t is not installed (apt-get install iproute2 qemu-system-x86 openssh-client)"
    done
    if [ -f "$STATE/size" ]; then
        ip netns list | grep -qw "$(netns)" && die "a cluster is already up in $STATE (cluster.sh down first)"
        rm -rf "$STATE"
    fi
    [ -n "$boot_timeout" ] || boot_timeout=$((150 + 45 * n))
    if [ -z "$bin" ]; then bin=$("$ROOT/tests/vm/build-static.sh") || die "up: cannot build rperftest (tests/vm/build-static.sh)"; fi
    [ -f "$bin" ] || die "up: no rperftest binary at $bin"
    local img; img=$("$HERE/build-image.sh") || die "up: tests/vm/build-image.sh failed"
    declare -A isbare=()
    local k; for k in ${bare//,/ }; do
        [[ $k =~ ^[0-9]+$ ]] && [ "$k" -ge 1 ] && [ "$k" -le "$n" ] || die "up: --bare $k is not a node of 1..$n"
        isbare[$k]=1
    done

    local t0; t0=$(date +%s)
    mkdir -p "$STATE/keys"
    echo "$n" >"$STATE/size"
    echo "$rails" >"$STATE/rails"
    echo "rptcl$(echo "$STATE" | sha256sum | cut -c1-8)" >"$STATE/netns"
    # ---- keys: root's key pair, one host key per node
    ssh-keygen -q -t ed25519 -N '' -C "rperftest-cluster" -f "$STATE/keys/id_ed25519" || die "ssh-keygen failed"
    : >"$STATE/keys/known_hosts"; : >"$STATE/hosts"
    for k in $(seq 1 "$n"); do
        ssh-keygen -q -t ed25519 -N '' -C "node$k" -f "$STATE/keys/host$k" || die "ssh-keygen failed"
        echo "node$k,$SUBNET.$k $(cut -d' ' -f1,2 "$STATE/keys/host$k.pub")" >>"$STATE/keys/known_hosts"
        echo "$SUBNET.$k node$k" >>"$STATE/hosts"
        for r in $(seq 1 $((rails - 1))); do echo "$(subnet_of "$r").$k node$k-rail$r" >>"$STATE/hosts"; done
    done
    {
        echo "Host node*"
        echo "    User root"
        echo "    IdentityFile $STATE/keys/id_ed25519"
        echo "    IdentitiesOnly yes"
        echo "    UserKnownHostsFile $STATE/keys/known_hosts"
        echo "    GlobalKnownHostsFile /dev/null"
        echo "    StrictHostKeyChecking yes"
        echo "    BatchMode yes"
        echo "    ConnectTimeout 30"
        echo "    ServerAliveInterval 15"
        echo "    ServerAliveCountMax 8"
        echo "    LogLevel ERROR"
        # OpenSSH 9's default key exchange (sntrup761x25519) costs a TCG guest's sshd
        # about twice curve25519's CPU; every exec is a login.
        echo "    KexAlgorithms curve25519-sha256"
        for k in $(seq 1 "$n"); do echo "Host node$k"; echo "    HostName $SUBNET.$k"; done
    } >"$STATE/ssh_config"
    head -c 1024 /dev/urandom >"$STATE/keys/munge.key"
    # ---- Slurm: every node one CPU (1 vCPU each); generous timeouts for TCG
    cat >"$STATE/slurm.conf" <<EOF
ClusterName=rperftest
SlurmctldHost=node1
AuthType=auth/munge
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/linear
ReturnToService=2
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurm/slurmctld.pid
SlurmdPidFile=/run/slurm/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmctldTimeout=300
SlurmdTimeout=300
MessageTimeout=60
InactiveLimit=0
KillWait=10
PropagateResourceLimits=ALL
NodeName=node[1-$n] CPUs=1 State=UNKNOWN
PartitionName=all Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
    # ---- the segment
    local ns; ns=$(netns)
    ip netns add "$ns" || die "cannot create network namespace $ns"
    in_ns ip link set lo up
    local r tap
    for r in $(seq 0 $((rails - 1))); do
        in_ns ip link add "br$r" type bridge stp_state 0 forward_delay 0 mcast_snooping 0 || die "cannot create bridge br$r"
        in_ns ip addr add "$(subnet_of "$r").254/24" dev "br$r"
        in_ns ip link set "br$r" up
        for k in $(seq 1 "$n"); do
            tap=$(tap_of "$k" "$r")
            in_ns ip tuntap add "$tap" mode tap || die "cannot create $tap (/dev/net/tun?)"
            in_ns ip link set "$tap" master "br$r"
            in_ns ip link set "$tap" up
        done
    done
    # ---- the VMs
    : >"$STATE/nodes"
    for k in $(seq 1 "$n"); do
        local mode=full; [ -n "${isbare[$k]:-}" ] && mode=bare
        local d=$STATE/node$k/cluster
        mkdir -p "$d"
        echo "node$k" >"$d/node"
        cp "$STATE/hosts" "$d/hosts"
        cp "$STATE/keys/id_ed25519" "$STATE/keys/id_ed25519.pub" "$d/"
        cp "$STATE/keys/host$k" "$d/host_ed25519"; cp "$STATE/keys/host$k.pub" "$d/host_ed25519.pub"
        cp "$STATE/keys/known_hosts" "$d/ssh_known_hosts"
        cp "$STATE/keys/munge.key" "$d/munge.key"
        cp "$STATE/slurm.conf" "$d/slurm.conf"
        cp -L "$bin" "$d/rperftest"
        local railnics=()
        : >"$d/rails"
        for r in $(seq 1 $((rails - 1))); do
            printf '%s %s/24 52:54:0a:4d:%02x:%02x\n' "$r" "$(subnet_of "$r").$k" "$r" "$k" >>"$d/rails"
            railnics+=(--qemu-arg -netdev --qemu-arg "tap,id=n$r,ifname=$(tap_of "$k" "$r"),script=no,downscript=no"
                       --qemu-arg -device --qemu-arg "$(printf 'virtio-net-pci,netdev=n%s,romfile=,mac=52:54:0a:4d:%02x:%02x' "$r" "$r" "$k")")
        done
        printf '%s\n' "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin" "RXE_DEV=rxe0" "RXE_NETDEV=eth0" \
            "RXE_IP=$SUBNET.$k" "RXE_VM_MODE=$mode" "CLUSTER_NODE=node$k" "CLUSTER_SIZE=$n" >"$d/env"
        mkfifo "$STATE/node$k.mon.in" "$STATE/node$k.mon.out" "$STATE/node$k.agent.in" "$STATE/node$k.agent.out"
        # qemu holds the FIFOs open read-write; the monitor's output needs a
        # reader or qemu would block once the pipe is full
        setsid cat "$STATE/node$k.mon.out" >"$STATE/node$k.monitor.log" 2>&1 </dev/null &
        echo $! >"$STATE/node$k.moncat.pid"
        setsid ip netns exec "$ns" "$HERE/run-in-vm.sh" --mode "$mode" --overlay cluster \
            --net "tap:tap$k" --ip "$SUBNET.$k/24" --mem "$mem" --smp 1 --timeout 14400 \
            --qemu-arg -pidfile --qemu-arg "$STATE/node$k.qemu.pid" \
            --qemu-arg -chardev --qemu-arg "pipe,id=mon0,path=$STATE/node$k.mon" \
            --qemu-arg -mon --qemu-arg "chardev=mon0,mode=readline" \
            --qemu-arg -device --qemu-arg virtio-serial-pci \
            --qemu-arg -chardev --qemu-arg "pipe,id=agent0,path=$STATE/node$k.agent" \
            --qemu-arg -device --qemu-arg "virtserialport,chardev=agent0,name=rpt.agent" \
            "${railnics[@]}" \
            -e "RXE_VM_BOOT_TIMEOUT=$boot_timeout" \
            "$d" -- bash /usr/share/rxe-vm/cluster-node.sh /mnt/host/cluster \
            >"$STATE/node$k.log" 2>&1 </dev/null &
        echo $! >"$STATE/node$k.run.pid"
        echo "node$k $SUBNET.$k $mode" >>"$STATE/nodes"
    done
    # ---- wait until every node says it is up, or name the one that is not
    local pending left
    while :; do
        pending=()
        for k in $(seq 1 "$n"); do
            grep -q "^CLUSTER_NODE_READY node$k" "$STATE/node$k.log" 2>/dev/null && continue
            if grep -q "^CLUSTER_NODE_FAILED" "$STATE/node$k.log" 2>/dev/null; then
                say "node$k failed to start: $(grep -m1 '^CLUSTER_NODE_FAILED' "$STATE/node$k.log")"
                tail -30 "$STATE/node$k.log" >&2; cmd_down >/dev/null 2>&1; exit 1
            fi
            if ! kill -0 "$(cat "$STATE/node$k.run.pid")" 2>/dev/null; then
                say "node$k: the VM ended while booting (console: $STATE/node$k.log)"
                tail -30 "$STATE/node$k.log" >&2; cmd_down >/dev/null 2>&1; exit 1
            fi
            pending+=("node$k")
        done
        [ ${#pending[@]} = 0 ] && break
        left=$(( boot_timeout - ($(date +%s) - t0) ))
        if [ "$left" -le 0 ]; then
            say "not up within ${boot_timeout}s: ${pending[*]} (consoles: $STATE/nodeK.log); taking the cluster down"
            for p in "${pending[@]}"; do echo "--- $p" >&2; tail -15 "$STATE/$p.log" >&2; done
            cmd_down >/dev/null 2>&1; exit 1
        fi
        sleep 1
    done
    local t_boot=$(( $(date +%s) - t0 ))
    # ---- ssh from the host, then Slurm's view of every node
    for k in $(seq 1 "$n"); do
        cmd_exec "node$k" -- true || { say "node$k: ssh does not answer"; cmd_down >/dev/null 2>&1; exit 1; }
    done
    local idle=0 i=0
    while [ $i -lt 90 ]; do
        idle=$(cmd_exec node1 -- sinfo -h -N -o '%N %T' 2>/dev/null | grep -c -E ' (idle|mixed|allocated)$')
        [ "$idle" = "$n" ] && break
        sleep 2; i=$((i + 1))
    done
    if [ "$idle" != "$n" ]; then
        say "Slurm: only $idle of $n nodes idle after 180 s:"; cmd_exec node1 -- sinfo -N >&2
        cmd_down >/dev/null 2>&1; exit 1
    fi
    echo "$t_boot $(( $(date +%s) - t0 ))" >"$STATE/up-seconds"
    say "$n nodes up: booted in ${t_boot}s, ssh and Slurm ready in $(( $(date +%s) - t0 ))s"
    cmd_status
}

# ------------------------------------------------------------ exec / copy
cmd_exec() {
    need_up
    local node=$1; shift
    [ "${1:-}" = -- ] && shift
    [ $# -gt 0 ] || die "exec: no command (cluster.sh exec NODE -- CMD...)"
    node_index "$node" >/dev/null || exit 1
    local q; q=$(printf '%q ' "$@")
    in_ns ssh -F "$STATE/ssh_config" "$node" -- "$q"
    local rc=$?
    [ $rc = 255 ] && say "exec: ssh to $node failed (rc 255: node down, sshd stopped or unreachable)"
    return $rc
}
cmd_copy() {
    need_up
    [ $# = 2 ] && [[ $2 == *:* ]] || die "usage: cluster.sh copy PATH NODE:DIR"
    node_index "${2%%:*}" >/dev/null || exit 1
    [ -e "$1" ] || die "copy: no such path: $1"
    in_ns scp -q -r -F "$STATE/ssh_config" "$1" "$2"
}

# ----------------------------------------------------------------- fault
cmd_fault() {
    need_up
    [ $# -ge 2 ] || die "usage: cluster.sh fault NODE KIND [ARGS]"
    local k; k=$(node_index "$1") || exit 1
    shift
    local rail=0
    if [ "${1:-}" = --rail ]; then
        [[ ${2:-} =~ ^[0-9]+$ ]] && [ "$2" -lt "$(rail_count)" ] || die "fault: --rail must be 0..$(( $(rail_count) - 1 )) (got '${2:-}')"
        rail=$2; shift 2
    fi
    [ $# -ge 1 ] || die "usage: cluster.sh fault NODE [--rail R] KIND [ARGS]"
    local kind=$1; shift
    local dev=eth$rail tap; tap=$(tap_of "$k" "$rail")
    case "$kind" in
        link-down) monitor "$k" "set_link n$rail off" ;;
        link-up) monitor "$k" "set_link n$rail on" ;;
        kill)
            local p; p=$(qemu_pid "$k")
            [ -n "$p" ] && kill -9 "$p" 2>/dev/null || die "node$k: VM is not running"
            local i=0; while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done ;;
        # rxe spins in the kernel when its own transmit is refused (a qdisc
        # that drops: seen as a soft lockup of the 1-vCPU guest), so nothing
        # here drops on a node's egress: netem and tbf queue instead (a
        # limit far above any QP's window; netem's loss counts as sent), and
        # port drops act on ingress, as a host firewall would
        netem) [ $# -ge 1 ] || die "fault netem: give netem's arguments (e.g. delay 20ms loss 5%)"
               agent "$k" "tc qdisc replace dev $dev root netem $(printf '%q ' "$@") limit 1000000" ;;
        rate) [ $# = 1 ] || die "fault rate: give one rate (e.g. 10mbit)"
              # both ways: the node's egress in the guest, the tap's egress
              # (traffic to the node) on the host side
              agent "$k" "tc qdisc replace dev $dev root tbf rate $(printf '%q' "$1") burst 64kb limit 256mb" \
                  && in_ns tc qdisc replace dev "$tap" root tbf rate "$1" burst 64kb limit 256mb ;;
        mtu) [[ ${1:-} =~ ^[0-9]+$ ]] || die "fault mtu: give the MTU in bytes"
             agent "$k" "ip link set $dev mtu $1" ;;
        drop-udp|drop-tcp)
            [[ ${1:-} =~ ^[0-9]+$ ]] && [ "$1" -le 65535 ] || die "fault $kind: give a port number"
            local proto=17; [ "$kind" = drop-tcp ] && proto=6
            # what arrives for that port (dport) or from it (sport: the
            # answers of a remote server) is dropped: both directions of a
            # conversation on that port are cut
            agent "$k" "tc qdisc add dev $dev clsact 2>/dev/null; for m in dport sport; do tc filter add dev $dev ingress protocol ip u32 match ip protocol $proto 0xff match ip \$m $1 0xffff action drop || exit 1; done" ;;
        stop-sshd) agent "$k" 'kill $(cat /run/sshd.pid)' ;;
        start-sshd) agent "$k" '/usr/sbin/sshd -E /var/log/sshd.log' ;;
        stop-slurmd) agent "$k" 'kill $(cat /run/slurm/slurmd.pid)' ;;
        start-slurmd) agent "$k" '/usr/sbin/slurmd' ;;
        clear)  # every rail of the node, whatever --rail says
            local r d cmd=""
            for r in $(seq 0 $(( $(rail_count) - 1 ))); do
                alive "$k" && monitor "$k" "set_link n$r on"
                in_ns tc qdisc del dev "$(tap_of "$k" "$r")" root 2>/dev/null
                in_ns ip link set "$(tap_of "$k" "$r")" master "br$r"
                d=eth$r
                cmd+="tc qdisc del dev $d root 2>/dev/null; tc qdisc del dev $d clsact 2>/dev/null; ip link set $d mtu 1500; "
            done
            agent "$k" "${cmd}true" || return 1
            # A miswired NIC answered ARP for its node's other addresses on the wrong segment
            # (Linux answers for any local address): every node's neighbour cache may still
            # point at it, as after a real re-cabling, so each one forgets what it learnt.
            if [ -f "$STATE/miswired.$k" ]; then
                local j
                for j in $(seq 1 "$(node_count)"); do alive "$j" && agent "$j" "ip neigh flush all; true"; done
                in_ns ip neigh flush all
                rm -f "$STATE/miswired.$k"
            fi ;;
        *) die "fault: unknown kind '$kind' (link-down link-up netem rate mtu drop-udp drop-tcp stop-sshd start-sshd stop-slurmd start-slurmd kill clear)" ;;
    esac
}

# --------------------------------------------------------------- miswire
cmd_miswire() {
    need_up
    [ $# = 3 ] || die "usage: cluster.sh miswire NODE RAIL OTHER_RAIL"
    local k; k=$(node_index "$1") || exit 1
    local nr; nr=$(rail_count)
    [[ $2 =~ ^[0-9]+$ && $3 =~ ^[0-9]+$ ]] && [ "$2" -lt "$nr" ] && [ "$3" -lt "$nr" ] && [ "$2" != "$3" ] \
        || die "miswire: RAIL and OTHER_RAIL must be two different rails of 0..$((nr - 1))"
    in_ns ip link set "$(tap_of "$k" "$2")" master "br$3" || die "miswire: cannot move $(tap_of "$k" "$2") to br$3"
    : >"$STATE/miswired.$k"
    say "node$k's rail-$2 NIC (eth$2, $(subnet_of "$2").$k) is now on rail $3's segment"
}

# ---------------------------------------------------------------- status
cmd_status() {
    [ -f "$STATE/nodes" ] || { echo "no cluster"; return 1; }
    local name ip mode k
    while read -r name ip mode; do
        k=${name#node}
        if alive "$k"; then echo "$name $ip $mode running"; else echo "$name $ip $mode stopped"; fi
    done <"$STATE/nodes"
}

# ------------------------------------------------------------------ down
cmd_down() {
    [ -f "$STATE/size" ] || { say "no cluster in $STATE"; return 0; }
    local n k p ns left=""
    n=$(node_count); ns=$(netns)
    for k in $(seq 1 "$n"); do
        p=$(cat "$STATE/node$k.run.pid" 2>/dev/null) && kill -TERM -- "-$p" 2>/dev/null
        p=$(qemu_pid "$k") && [ -n "$p" ] && kill -TERM "$p" 2>/dev/null
    done
    local i=0
    while [ $i -lt 100 ]; do
        left=""
        for k in $(seq 1 "$n"); do alive "$k" && left+=" node$k"; done
        [ -z "$left" ] && break
        sleep 0.1; i=$((i + 1))
    done
    for k in $(seq 1 "$n"); do
        alive "$k" && kill -9 "$(qemu_pid "$k")" 2>/dev/null
        p=$(cat "$STATE/node$k.run.pid" 2>/dev/null) && kill -9 -- "-$p" 2>/dev/null
        p=$(cat "$STATE/node$k.moncat.pid" 2>/dev/null) && kill -9 "$p" 2>/dev/null
    done
    [ -n "$ns" ] && ip netns list | grep -qw "$ns" && ip netns del "$ns"
    # the check: no qemu of ours, no namespace, no tap
    sleep 0.2
    left=""
    for k in $(seq 1 "$n"); do alive "$k" && left+=" qemu(node$k)"; done
    [ -n "$ns" ] && ip netns list | grep -qw "$ns" && left+=" netns($ns)"
    pgrep -f "path=$STATE/node[0-9]*\.mon" >/dev/null && left+=" qemu-processes"
    if [ -n "$left" ]; then say "down: still there:$left"; return 1; fi
    rm -f "$STATE/size" "$STATE/netns"
    rm -rf "$STATE.last"; mv "$STATE" "$STATE.last"
    say "down: no VM, tap, bridge or namespace left (logs in $STATE.last)"
}

[ $# -ge 1 ] || usage
c=$1; shift
case "$c" in
    up) cmd_up "$@" ;;
    exec) [ $# -ge 1 ] || die "usage: cluster.sh exec NODE -- CMD..."; cmd_exec "$@" ;;
    copy) cmd_copy "$@" ;;
    fault) cmd_fault "$@" ;;
    miswire) cmd_miswire "$@" ;;
    status) cmd_status ;;
    ssh-config) echo "$STATE/ssh_config" ;;
    down) cmd_down ;;
    -h|--help|help) usage ;;
    *) say "unknown command '$c'"; usage ;;
esac
