#!/bin/bash
# Many cluster nodes inside ONE VM of the bed: a network namespace per node.
#
#   netns-cluster.sh up N [--prefix P] [--subnet A.B.C] [--rdma auto|yes|no]   (2 <= N <= 64)
#   netns-cluster.sh exec NODE -- CMD [ARG...]   CMD in NODE's namespace, its exit code
#   netns-cluster.sh fault NODE KIND [ARGS]      see FAULTS
#   netns-cluster.sh ssh                         path of an ssh wrapper that reaches
#                                                the nodes (for matrix --ssh)
#   netns-cluster.sh status                      one line per node
#   netns-cluster.sh rdma                        yes when the nodes have rxe devices
#   netns-cluster.sh down                        remove everything; check nothing is left
#
# Runs in the guest, as root, on an image with the cluster overlay (sshd,
# ssh, ssh-keygen: tests/vm/build-image.sh) or on a node of the cluster bed.
# Node K is "PK" (prefix default n: n1..nN), the namespace of that name,
# with eth0 (one end of a veth; the other, nc-vK, is in the VM's own
# namespace), address A.B.C.K (default 10.78.0), and its own sshd on
# A.B.C.K:22; /etc/hosts gets "A.B.C.K PK".  The image's kernel has no bridge
# module, so the VM's own namespace routes instead: it holds A.B.C.254 on
# every nc-vK and a /32 route to each node, with forwarding on; a node
# reaches A.B.C.0/24 through A.B.C.254 (one routed hop, TTL - 1).
#
# RDMA (`up --rdma auto|yes|no`, default auto): each node gets its own rxe
# device on its eth0, named rxe-PK, seen by that node only.  That needs the
# kernel's RDMA netns mode set to exclusive (done by up, undone by down) and an
# rxe that opens its UDP 4791 socket and looks up routes in the device's
# namespace: Debian 13's kernels have it (the bed's second image,
# build-image.sh with RXE_VM_KERNEL_SUITE=trixie-backports), Debian 12's 6.1
# does not.  There `rdma link add` inside a namespace still registers the
# device in the initial one and `rdma dev set DEV netns NS` answers EOPNOTSUPP,
# so auto brings the nodes up without RDMA (logins, names, the preflight's
# fan-out, faults on the path) and says so; yes fails instead.
# ssh: one client key and one host key per node, made by up, in the state
# dir; each sshd takes that key as its AuthorizedKeysFile, and `ssh` (the
# wrapper) uses the key and a known_hosts of every node, so logins need no
# password and ask nothing.  Nothing in ~root/.ssh is touched.
#
# FAULTS (from the VM's own namespace, so they can always be undone):
#   link-down | link-up     the VM side of the node's veth (a pulled cable:
#                           eth0 loses carrier)
#   netem ARGS...           tc netem on eth0's egress (e.g. delay 20ms loss 5%)
#   rate RATE               tbf rate limit (e.g. 10mbit), both ways
#   mtu N                   eth0's MTU
#   drop-udp PORT | drop-tcp PORT   what reaches the node on that port, or
#                           from it, is dropped (u32 filters on eth0 ingress)
#   stop-sshd | start-sshd  the node's sshd
#   kill                    every process in the namespace, and the link down
#   clear                   no qdisc or filter, link up, MTU 1500, sshd running
# (as in cluster.sh, nothing drops on a node's egress, for when a node has
# rxe: it spins in the kernel when its own transmit is refused; netem and
# tbf queue instead)
#
# State: $NETNS_CLUSTER_DIR (default /run/netns-cluster).  down removes every
# namespace, veth, route, sshd, the /etc/hosts lines and forwarding as it
# was; it fails naming anything left.
#
# Not modelled (see docs/testbed.md): one kernel (TCP and the qdiscs
# are shared, a kernel fault hits every node), one set of CPUs (every node
# competes for the VM's vCPUs), one filesystem (the same /tmp, binary and
# /etc for every node), one clock.
set -uo pipefail
STATE=${NETNS_CLUSTER_DIR:-/run/netns-cluster}
MAX=64

say() { echo "netns-cluster: $*" >&2; }
die() { echo "netns-cluster: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }

size() { cat "$STATE/size" 2>/dev/null || echo 0; }
prefix() { cat "$STATE/prefix" 2>/dev/null || echo n; }
subnet() { cat "$STATE/subnet" 2>/dev/null || echo 10.78.0; }
need_up() { [ -f "$STATE/size" ] || die "no netns cluster is up (netns-cluster.sh up N)"; }
index_of() {  # PK -> K, checked
    local p k; p=$(prefix); k=${1#"$p"}
    [[ $1 == "$p"* && $k =~ ^[1-9][0-9]*$ ]] && [ "$k" -le "$(size)" ] \
        || die "no node '$1' in this cluster ($(prefix)1..$(prefix)$(size))"
    echo "$k"
}
in_node() { local ns=$1; shift; ip netns exec "$ns" "$@"; }

# ------------------------------------------------------------------ sshd
sshd_config() {  # K
    local k=$1 d=$STATE/node$1
    cat <<EOF
ListenAddress $(subnet).$k
Port 22
HostKey $d/host_ed25519
PidFile $d/sshd.pid
AuthorizedKeysFile $STATE/id_ed25519.pub
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
# a TCG guest answers slowly, and a matrix opens every node at once
LoginGraceTime 300
MaxStartups 128:30:256
MaxSessions 128
EOF
}
start_sshd() {  # K
    local k=$1 ns; ns=$(prefix)$1
    in_node "$ns" /usr/sbin/sshd -f "$STATE/node$k/sshd_config" -E "$STATE/node$k/sshd.log" \
        || { tail -5 "$STATE/node$k/sshd.log" >&2; return 1; }
}
stop_sshd() {  # K
    local p; p=$(cat "$STATE/node$1/sshd.pid" 2>/dev/null) || return 0
    kill "$p" 2>/dev/null
    local i=0; while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
    rm -f "$STATE/node$1/sshd.pid"
}

# The accounts and name service sshd and ssh need, on an image that lacks
# them (the suite VM's init writes neither); the originals are kept for down.
etc_setup() {
    mkdir -p "$STATE/etc" /run/sshd; chmod 755 /run/sshd
    local f
    for f in passwd group nsswitch.conf hosts; do
        if [ -e "/etc/$f" ]; then cp -p "/etc/$f" "$STATE/etc/$f"; else : >"$STATE/etc/$f.absent"; fi
    done
    grep -q '^root:' /etc/passwd 2>/dev/null || echo 'root:x:0:0:root:/root:/bin/bash' >>/etc/passwd
    grep -q '^sshd:' /etc/passwd || echo 'sshd:x:100:65534::/run/sshd:/usr/sbin/nologin' >>/etc/passwd
    grep -q '^nogroup:' /etc/group 2>/dev/null || echo 'nogroup:x:65534:' >>/etc/group
    grep -q '^root:' /etc/group || echo 'root:x:0:' >>/etc/group
    grep -q '^hosts:' /etc/nsswitch.conf 2>/dev/null || echo 'hosts: files dns' >>/etc/nsswitch.conf
    grep -q '^passwd:' /etc/nsswitch.conf || printf 'passwd: files\ngroup: files\n' >>/etc/nsswitch.conf
    [ -c /dev/null ] || { rm -f /dev/null; mknod /dev/null c 1 3; }
    chmod 666 /dev/null
}
etc_restore() {
    local f
    for f in passwd group nsswitch.conf hosts; do
        if [ -e "$STATE/etc/$f" ]; then cp -p "$STATE/etc/$f" "/etc/$f"
        elif [ -e "$STATE/etc/$f.absent" ]; then rm -f "/etc/$f"; fi
    done
}

# -------------------------------------------------------------------- up
node_up() {  # K: namespace, veth, address, routes, host key
    local k=$1 ns; ns=$(prefix)$1
    local ip=$(subnet).$k d=$STATE/node$k
    mkdir -p "$d"
    ip netns add "$ns" || return 1
    # Two ip processes per node, not eleven: each start of ip costs a TCG
    # guest about 0.2 s, which at 64 nodes was most of `up`.
    ip -batch - <<EOB || return 1
link add nc-v$k type veth peer name eth0 netns $ns
addr add $(subnet).254/32 dev nc-v$k
link set nc-v$k up
route add $ip/32 dev nc-v$k
EOB
    ip -n "$ns" -batch - <<EOB || return 1
link set lo up
addr add $ip/32 dev eth0
link set eth0 up
route add $(subnet).254/32 dev eth0
route add $(subnet).0/24 via $(subnet).254 dev eth0
EOB
    if [ "$(cat "$STATE/rdma")" = yes ]; then
        in_node "$ns" rdma link add "rxe-$ns" type rxe netdev eth0 || return 1
        rdma dev set "rxe-$ns" netns "$ns" || return 1
    fi
    ssh-keygen -q -t ed25519 -N '' -C "$ns" -f "$d/host_ed25519" || return 1
    echo "$ns,$ip $(cut -d' ' -f1,2 "$d/host_ed25519.pub")" >>"$STATE/known_hosts"
    sshd_config "$k" >"$d/sshd_config"
    echo "$ip $ns" >>/etc/hosts
}

# RDMA per node: the netns mode goes to exclusive (the old one is kept for
# down), then a throw-away namespace tells whether an rxe made in a namespace
# can be moved into it (it cannot on 6.1: EOPNOTSUPP).  Prints yes or no.
rdma_probe() {
    local want=$1 ns=netns-cluster-probe why=""
    [ "$want" = no ] && { echo no; return 0; }
    rdma system show 2>/dev/null | awk '{print $2}' >"$STATE/rdma_mode"
    if [ "$(cat "$STATE/rdma_mode")" != exclusive ] && ! rdma system set netns exclusive 2>"$STATE/rdma.err"; then
        why="rdma system set netns exclusive: $(head -1 "$STATE/rdma.err")"
    else
        ip netns add "$ns" && ip link add nc-probe type veth peer name eth0 netns "$ns" \
            && in_node "$ns" ip link set eth0 up \
            && in_node "$ns" rdma link add rxe-probe type rxe netdev eth0 2>"$STATE/rdma.err" \
            && rdma dev set rxe-probe netns "$ns" 2>>"$STATE/rdma.err" \
            || why="an rxe cannot be moved into a namespace on $(uname -r): $(head -1 "$STATE/rdma.err")"
        rdma link delete rxe-probe 2>/dev/null; in_node "$ns" rdma link delete rxe-probe 2>/dev/null
        ip netns del "$ns" 2>/dev/null
        for _ in $(seq 1 50); do ip link show nc-probe >/dev/null 2>&1 || break; sleep 0.1; done
    fi
    if [ -n "$why" ]; then   # no RDMA per node: the netns mode goes back at once
        [ "$(cat "$STATE/rdma_mode")" = exclusive ] || rdma system set netns "$(cat "$STATE/rdma_mode")" 2>/dev/null
        rm -f "$STATE/rdma_mode"
        [ "$want" = yes ] && { say "up --rdma yes: $why"; return 1; }
        say "up: no RDMA per node ($why); nodes for logins, names and faults only"
        echo no
    else
        echo yes
    fi
}

cmd_up() {
    local n="" p=n sn=10.78.0 rd=auto
    while [ $# -gt 0 ]; do
        case "$1" in
            --prefix) p=$2; shift 2 ;;
            --subnet) sn=$2; shift 2 ;;
            --rdma) rd=$2; shift 2 ;;
            -*) die "up: unknown option $1" ;;
            *) [ -z "$n" ] || die "up: one N only"; n=$1; shift ;;
        esac
    done
    [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 2 ] && [ "$n" -le $MAX ] || die "up: N must be 2..$MAX (got '${n}')"
    [[ $p =~ ^[a-z][a-z0-9-]*$ ]] || die "up: --prefix '$p': a lower-case letter, then letters, digits, '-'"
    [[ $sn =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "up: --subnet '$sn': three numbers, like 10.78.0"
    [[ $rd =~ ^(auto|yes|no)$ ]] || die "up: --rdma '$rd': auto, yes or no"
    [ "$(id -u)" = 0 ] || die "up needs root"
    local t
    for t in ip tc ssh ssh-keygen /usr/sbin/sshd; do
        command -v "$t" >/dev/null || die "up: $t is missing (the image needs the cluster overlay: run-in-vm.sh --overlay cluster)"
    done
    [ -f "$STATE/size" ] && die "a netns cluster is already up in $STATE (netns-cluster.sh down first)"
    local t0=$SECONDS
    mkdir -p "$STATE"
    echo "$p" >"$STATE/prefix"; echo "$sn" >"$STATE/subnet"
    rdma_probe "$rd" >"$STATE/rdma.new" || { rm -rf "$STATE"; exit 1; }
    mv "$STATE/rdma.new" "$STATE/rdma"
    etc_setup
    ssh-keygen -q -t ed25519 -N '' -C netns-cluster -f "$STATE/id_ed25519" || die "ssh-keygen failed"
    : >"$STATE/known_hosts"
    cat >"$STATE/ssh_config" <<EOF
Host *
    User root
    IdentityFile $STATE/id_ed25519
    IdentitiesOnly yes
    UserKnownHostsFile $STATE/known_hosts
    GlobalKnownHostsFile /dev/null
    StrictHostKeyChecking yes
    BatchMode yes
    # OpenSSH 9's default key exchange (sntrup761x25519) costs a TCG guest
    # about 1.6 s of CPU per login, curve25519 half that: at 32 nodes the
    # logins were most of the preflight.  Real CPUs do either in a millisecond.
    KexAlgorithms curve25519-sha256
EOF
    printf '#!/bin/sh\nexec ssh -F %s "$@"\n' "$STATE/ssh_config" >"$STATE/ssh"
    chmod 755 "$STATE/ssh"
    # The size is written first: down cleans up a half-made cluster too.
    echo "$n" >"$STATE/size"
    cat /proc/sys/net/ipv4/ip_forward >"$STATE/ip_forward"
    echo 1 >/proc/sys/net/ipv4/ip_forward || die "up: cannot turn on forwarding"
    local k
    for k in $(seq 1 "$n"); do
        node_up "$k" || { say "up: node $p$k failed"; cmd_down; exit 1; }
    done
    for k in $(seq 1 "$n"); do
        start_sshd "$k" || { say "up: sshd of $p$k did not start"; cmd_down; exit 1; }
    done
    # sshd writes its pid file once it listens: that is the readiness check
    # (a login per node costs seconds of a TCG guest's CPU); one login then
    # proves the keys and the config, which every node shares.
    local left=$n
    for _ in $(seq 1 300); do
        left=0
        for k in $(seq 1 "$n"); do [ -s "$STATE/node$k/sshd.pid" ] || left=$((left + 1)); done
        [ "$left" = 0 ] && break
        sleep 0.2
    done
    [ "$left" = 0 ] || { say "up: $left sshd(s) wrote no pid file in 60 s"; cmd_down; exit 1; }
    "$STATE/ssh" -o ConnectTimeout=60 "${p}1" true \
        || { say "up: no login to ${p}1 (the keys or the sshd config)"; cmd_down; exit 1; }
    local with=""; [ "$(cat "$STATE/rdma")" = yes ] && with=", each with its rxe-$p<K>"
    say "up: $n nodes (${p}1..$p$n, $sn.1-$sn.$n$with) in $((SECONDS - t0)) s"
}

# ------------------------------------------------------------------ exec
cmd_exec() {
    need_up
    [ $# -ge 3 ] && [ "$2" = -- ] || die "usage: netns-cluster.sh exec NODE -- CMD [ARG...]"
    index_of "$1" >/dev/null || exit 1
    local ns=$1; shift 2
    in_node "$ns" "$@"
}

# ----------------------------------------------------------------- fault
# The VM side up again, with the node's route (a link going down takes its routes away).
link_up() {
    ip link set "nc-v$1" up && ip route replace "$(subnet).$1/32" dev "nc-v$1"
}
cmd_fault() {
    need_up
    [ $# -ge 2 ] || die "usage: netns-cluster.sh fault NODE KIND [ARGS]"
    local k; k=$(index_of "$1") || exit 1
    local ns=$1 kind=$2; shift 2
    case "$kind" in
        link-down) ip link set "nc-v$k" down ;;
        link-up) link_up "$k" ;;
        netem) [ $# -ge 1 ] || die "fault netem: give netem's arguments (e.g. delay 20ms loss 5%)"
               in_node "$ns" tc qdisc replace dev eth0 root netem "$@" limit 1000000 ;;
        rate) [ $# = 1 ] || die "fault rate: give one rate (e.g. 10mbit)"
              # both ways: the node's egress, and the VM side's egress
              # (what is sent to the node)
              in_node "$ns" tc qdisc replace dev eth0 root tbf rate "$1" burst 64kb limit 256mb \
                  && tc qdisc replace dev "nc-v$k" root tbf rate "$1" burst 64kb limit 256mb ;;
        mtu) [[ ${1:-} =~ ^[0-9]+$ ]] || die "fault mtu: give the MTU in bytes"
             in_node "$ns" ip link set eth0 mtu "$1" ;;
        drop-udp|drop-tcp)
            [[ ${1:-} =~ ^[0-9]+$ ]] && [ "$1" -le 65535 ] || die "fault $kind: give a port number"
            local proto=17 m; [ "$kind" = drop-tcp ] && proto=6
            in_node "$ns" tc qdisc add dev eth0 clsact 2>/dev/null
            for m in dport sport; do
                in_node "$ns" tc filter add dev eth0 ingress protocol ip u32 match ip protocol $proto 0xff match ip $m "$1" 0xffff action drop || return 1
            done ;;
        stop-sshd) stop_sshd "$k" ;;
        start-sshd) start_sshd "$k" ;;
        kill) local pids; pids=$(ip netns pids "$ns")
              [ -z "$pids" ] || kill -9 $pids 2>/dev/null
              rm -f "$STATE/node$k/sshd.pid"
              ip link set "nc-v$k" down ;;
        clear)
            link_up "$k"
            tc qdisc del dev "nc-v$k" root 2>/dev/null
            in_node "$ns" tc qdisc del dev eth0 root 2>/dev/null
            in_node "$ns" tc qdisc del dev eth0 clsact 2>/dev/null
            in_node "$ns" ip link set eth0 mtu 1500
            [ -f "$STATE/node$k/sshd.pid" ] || start_sshd "$k" ;;
        *) die "fault: unknown kind '$kind' (link-down link-up netem rate mtu drop-udp drop-tcp stop-sshd start-sshd kill clear)" ;;
    esac
}

cmd_status() {
    need_up
    local k p; p=$(prefix)
    for k in $(seq 1 "$(size)"); do
        local s=down; [ -f "$STATE/node$k/sshd.pid" ] && kill -0 "$(cat "$STATE/node$k/sshd.pid")" 2>/dev/null && s=up
        local dev=""; [ "$(cat "$STATE/rdma")" = yes ] && dev=" rxe-$p$k"
        echo "$p$k $(subnet).$k sshd-$s$dev"
    done
}

# ------------------------------------------------------------------ down
cmd_down() {
    [ -f "$STATE/size" ] || { say "down: no netns cluster"; return 0; }
    local n p k ns pids
    n=$(size); p=$(prefix)
    for k in $(seq 1 "$n"); do
        ns=$p$k
        stop_sshd "$k"
        ip netns list | grep -qw "^$ns" || continue
        pids=$(ip netns pids "$ns")
        [ -z "$pids" ] || kill -9 $pids 2>/dev/null
        ip netns del "$ns"
    done
    # A namespace's links go away asynchronously after `ip netns del`.
    for _ in $(seq 1 100); do ip -o link show | grep -q ' nc-v[0-9]*@' || break; sleep 0.1; done
    [ -f "$STATE/ip_forward" ] && cat "$STATE/ip_forward" >/proc/sys/net/ipv4/ip_forward
    etc_restore
    # a node's rxe goes with its eth0 (the namespace's end of the veth)
    for _ in $(seq 1 100); do rdma link show 2>/dev/null | grep -q "link rxe-$p[0-9]" || break; sleep 0.1; done
    local mode; mode=$(cat "$STATE/rdma_mode" 2>/dev/null)
    [ -z "$mode" ] || [ "$mode" = exclusive ] || rdma system set netns "$mode" 2>/dev/null
    # What is left, if anything, is named.
    local left=()
    for k in $(seq 1 "$n"); do
        ip netns list | grep -qw "^$p$k" && left+=("namespace $p$k")
        ip link show "nc-v$k" >/dev/null 2>&1 && left+=("link nc-v$k")
        ip route show "$(subnet).$k/32" 2>/dev/null | grep -q . && left+=("route to $(subnet).$k")
        grep -q " $p$k\$" /etc/hosts 2>/dev/null && left+=("/etc/hosts line of $p$k")
        rdma link show 2>/dev/null | grep -q "link rxe-$p$k/" && left+=("rdma device rxe-$p$k")
    done
    [ -z "$mode" ] || [ "$(rdma system show 2>/dev/null | awk '{print $2}')" = "$mode" ] || left+=("rdma netns mode (was $mode)")
    [ -f "$STATE/ip_forward" ] && [ "$(cat /proc/sys/net/ipv4/ip_forward)" != "$(cat "$STATE/ip_forward")" ] && left+=("ip_forward")
    local c
    for c in /proc/[0-9]*/cmdline; do
        tr '\0' ' ' <"$c" 2>/dev/null | grep -q "sshd -f $STATE/" && { left+=("sshd ${c%/cmdline}"); break; }
    done
    rm -rf "$STATE"
    [ ${#left[@]} = 0 ] || die "down: left behind: ${left[*]}"
    say "down: $n nodes removed, nothing left"
}

[ $# -ge 1 ] || usage
cmd=$1; shift
case "$cmd" in
    up) cmd_up "$@" ;;
    exec) cmd_exec "$@" ;;
    fault) cmd_fault "$@" ;;
    ssh) need_up; echo "$STATE/ssh" ;;
    rdma) need_up; cat "$STATE/rdma" ;;
    status) cmd_status ;;
    down) cmd_down ;;
    -h|--help|help) usage ;;
    *) say "unknown command '$cmd'"; usage ;;
esac
