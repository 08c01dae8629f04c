#!/bin/bash
# Guest side of tests/vm/cluster.sh: turns one booted rxe-vm into cluster
# node K, then stays up until the host stops it.
#
#   cluster-node.sh DIR     (DIR = /mnt/host/cluster, written by cluster.sh)
#
# DIR holds: node (this node's name), hosts (/etc/hosts lines for every node),
# rails (one line per rail beyond rail 0: "R ADDR/24 MAC", may be empty),
# id_ed25519[.pub] (root's key, the same on every node, as on a cluster with a
# shared home), host_ed25519[.pub] (this node's host key), ssh_known_hosts
# (every node's host key), munge.key, slurm.conf, env (variables for ssh
# sessions), rperftest (the static binary; optional).
#
# Starts, in this order: sshd, munged, slurmctld (on the node named by
# slurm.conf's SlurmctldHost), slurmd.  Prints "CLUSTER_NODE_READY <name>" once
# they run, or "CLUSTER_NODE_FAILED <name> <what>" and exits 1.
set -uo pipefail
D=${1:?usage: cluster-node.sh DIR}
NODE=$(cat "$D/node")
export PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin
# (the image has busybox, which has no install(1))
put() { cp "$2" "$3" && chmod "$1" "$3"; }
fail() { echo "CLUSTER_NODE_FAILED $NODE $*"; for f in /var/log/sshd.log /var/log/munge/munged.log /var/log/slurm/*.log; do [ -s "$f" ] && { echo "--- $f"; tail -20 "$f"; }; done; exit 1; }

hostname "$NODE"

# ---- the host's out-of-band agent (cluster.sh fault): "ID CMD" lines on the
# virtio-serial port named rpt.agent, each answered "ID RC"; it works while
# the network is down, so a fault that cuts the node off can be undone
for p in /sys/class/virtio-ports/*; do
    n=""; read -r n <"$p/name" 2>/dev/null
    [ "$n" = rpt.agent ] || continue
    port=/dev/${p##*/}
    (
        exec 5<>"$port"
        while read -r -u 5 id cmd; do
            echo "[agent] $cmd"
            bash -c "$cmd" </dev/null 5>&-
            echo "$id $?" >&5
        done
    ) &
done
{ echo "127.0.0.1 localhost"; cat "$D/hosts"; } >/etc/hosts

# ---- rails beyond rail 0 (cluster.sh up --rails R): "R ADDR/24 MAC" per line;
# the NIC with that MAC becomes ethR with the address and rxeR on it
RAILS=/dev/null; [ -f "$D/rails" ] && RAILS=$D/rails
while read -r r cidr mac; do
    [ -n "$r" ] || continue
    dev=""
    for n in /sys/class/net/*; do
        [ "$(cat "$n/address" 2>/dev/null)" = "$mac" ] && dev=${n##*/}
    done
    [ -n "$dev" ] || fail "rail $r: no NIC with MAC $mac"
    if [ "$dev" != "eth$r" ]; then
        [ -e "/sys/class/net/eth$r" ] && fail "rail $r: its NIC is $dev and eth$r is another NIC"
        ip link set "$dev" name "eth$r" || fail "rail $r: cannot rename $dev to eth$r"
    fi
    ip link set "eth$r" up && ip addr add "$cidr" dev "eth$r" || fail "rail $r: cannot set $cidr on eth$r"
    rdma link add "rxe$r" type rxe netdev "eth$r" || fail "rail $r: rdma link add rxe$r failed"
done <"$RAILS"

# ---- accounts: sshd's privilege-separation user, munge; root may log in by
# key ('*' is a password that matches nothing but is not a locked account)
cat >/etc/passwd <<'EOF'
root:x:0:0:root:/root:/bin/bash
sshd:x:100:65534::/run/sshd:/usr/sbin/nologin
munge:x:101:101::/var/lib/munge:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
EOF
printf 'root:x:0:\nmunge:x:101:\nnogroup:x:65534:\n' >/etc/group
printf 'root:*:19000:0:99999:7:::\nsshd:*:19000::::::\nmunge:*:19000::::::\nnobody:*:19000::::::\n' >/etc/shadow
chmod 640 /etc/shadow
printf 'passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n' >/etc/nsswitch.conf

# daemons that drop root open /dev/null: it must be the device, mode 666
[ -c /dev/null ] || { rm -f /dev/null; mknod /dev/null c 1 3; }
chmod 666 /dev/null
mkdir -p /usr/local/bin
[ -f "$D/rperftest" ] && put 755 "$D/rperftest" /usr/local/bin/rperftest

# ---- OpenSSH
# root's home as the passwd entry above gives it
RSSH=~root/.ssh
mkdir -p /etc/ssh /run/sshd "$RSSH" /var/log
chmod 755 /run/sshd; chmod 700 "$RSSH"
put 600 "$D/host_ed25519" /etc/ssh/ssh_host_ed25519_key
put 644 "$D/host_ed25519.pub" /etc/ssh/ssh_host_ed25519_key.pub
put 600 "$D/id_ed25519" "$RSSH/id_ed25519"
put 644 "$D/id_ed25519.pub" "$RSSH/id_ed25519.pub"
put 600 "$D/id_ed25519.pub" "$RSSH/authorized_keys"
put 644 "$D/ssh_known_hosts" /etc/ssh/ssh_known_hosts
# sessions get the bed's variables (RXE_DEV, RXE_GID_IDX, PATH, ...) the way
# a site profile would give them
put 600 "$D/env" "$RSSH/environment"
cat >/etc/ssh/sshd_config <<'EOF'
Port 22
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PermitUserEnvironment yes
UseDNS no
Subsystem sftp /usr/lib/openssh/sftp-server
# a TCG guest answers slowly: do not drop a connection that is only slow
LoginGraceTime 300
MaxStartups 64:30:128
MaxSessions 64
EOF
cat >/etc/ssh/ssh_config <<'EOF'
Host *
    BatchMode yes
    # sntrup761x25519, OpenSSH 9's default, costs a TCG guest about twice the CPU per login
    KexAlgorithms curve25519-sha256
    StrictHostKeyChecking yes
    ConnectTimeout 30
    ServerAliveInterval 15
    ServerAliveCountMax 8
EOF
/usr/sbin/sshd -E /var/log/sshd.log || fail "sshd did not start"

# ---- munge (Slurm's authentication)
mkdir -p /etc/munge /var/lib/munge /var/log/munge /run/munge
put 400 "$D/munge.key" /etc/munge/munge.key
chown munge:munge /etc/munge/munge.key /var/lib/munge /var/log/munge /run/munge /etc/munge
chmod 700 /etc/munge /var/lib/munge /var/log/munge; chmod 755 /run/munge
# as the munge user, as Debian's unit runs it (User=munge)
su -s /bin/sh munge -c '/usr/sbin/munged --num-threads=2' || fail "munged did not start"
i=0; until munge -n </dev/null | unmunge >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "munge credential round trip failed"; sleep 0.2
done

# ---- Slurm
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/slurm
put 644 "$D/slurm.conf" /etc/slurm/slurm.conf
# slurmd 22.05 always initialises a cgroup plugin, even with
# proctrack/linuxproc and task/none; cgroup/v2 talks to systemd over D-Bus,
# which this init-less guest has not, so v1 hierarchies are mounted for it
mount -t tmpfs -o mode=755 cgroup_root /sys/fs/cgroup 2>/dev/null
for c in freezer cpuset memory devices cpu,cpuacct; do
    mkdir -p "/sys/fs/cgroup/$c"
    mount -t cgroup -o "$c" "$c" "/sys/fs/cgroup/$c" 2>/dev/null
done
printf 'CgroupPlugin=cgroup/v1\nCgroupMountpoint=/sys/fs/cgroup\n' >/etc/slurm/cgroup.conf
CTLD=$(sed -n 's/^SlurmctldHost=\([^( ]*\).*/\1/p' /etc/slurm/slurm.conf)
if [ "$CTLD" = "$NODE" ]; then
    /usr/sbin/slurmctld -i || fail "slurmctld did not start"
fi
/usr/sbin/slurmd || fail "slurmd did not start"

echo "CLUSTER_NODE_READY $NODE"
# stay up; cluster.sh down (or fault kill) ends the VM
while :; do sleep 3600; done
