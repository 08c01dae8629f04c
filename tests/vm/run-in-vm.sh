#!/bin/bash
# Boot the rxe-vm image in qemu, run one command inside, exit with its code.
#
#   run-in-vm.sh [options] [PATH...] [-- CMD [ARG...]]
#
# PATHs (host files or dirs) are packed into an extra cpio appended to the
# initramfs and appear in the guest as /mnt/host/<basename>; CMD runs under
# bash with cwd /mnt/host.  Without CMD the built-in selftest runs
# (ibv_devinfo, GID table, perftest loopback; needs --mode full).  Guest env
# provides RXE_DEV=rxe0 RXE_NETDEV RXE_IP RXE_GID_IDX (the IPv4 RoCEv2 GID
# index) and RXE_VM_MODE (full|bare).
#
# Options (env var in brackets):
#   --mode M        full|bare                         [RXE_VM_MODE, full]
#                   full = base image + rdma-core/perftest overlay;
#                   bare = no libibverbs/librdmacm/provider/perftest at all
#   --timeout S     hard wall-clock limit for the VM  [RXE_VM_TIMEOUT, 900]
#                   [RXE_VM_BOOT_TIMEOUT, 120]: give up (rc 125) if the guest
#                   has not started the command by then
#   --accel A       auto|tcg|kvm                      [RXE_VM_ACCEL, auto]
#                   auto = kvm only if /dev/kvm is usable AND cpuinfo has vmx/svm
#   --net N         netdev rxe0 binds to               [RXE_VM_NET, dummy]
#                   dummy            dummy interface (no NIC), loopback only
#                   virtio           virtio-net + qemu user net (slirp)
#                   listen:PORT      virtio-net wired to another VM through
#                   connect:PORT     qemu -netdev socket on 127.0.0.1:PORT
#                                    (two-VM RoCE over a virtual wire)
#                   tap:IFNAME       virtio-net on an existing tap device
#                                    (tests/vm/cluster.sh: taps on a bridge
#                                    in a network namespace of its own)
#   --ip A.B.C.D/N  guest address on that netdev (also sets a MAC derived
#                   from it, so two VMs never share a MAC)
#   --mem MB / --smp N                                [RXE_VM_MEM 2048, RXE_VM_SMP 2]
#   --overlay cluster  also unpack initramfs-cluster.cpio (OpenSSH, munge,
#                   Slurm) after the mode's archives
#   --qemu-arg ARG  one more qemu argument (repeatable)
#   --share DIR     also 9p-share host DIR read-write at /mnt/share (results
#                   written there land on the host)
#   -e NAME=VALUE   export in the guest before CMD (repeatable)
#   --log FILE      copy of the console log           [RXE_VM_LOG]
#   --timing-file F write "boot=S cmd=S total=S rc=N" (seconds) to F
#   --image DIR     image dir from build-image.sh     [RXE_VM_OUT]
#   --shell         interactive bash instead of CMD (needs a tty)
#   -q              stream only the command's output (no boot/kernel lines);
#                   the full console is printed to stderr if the exit code != 0
#
# Exit status: the guest command's status; 124 = timeout; 125 = VM ended
# without reporting a status (kernel panic, boot stall, qemu error);
# 120-123 = guest setup failures (see console).
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${RXE_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rxe-vm}
IMAGE=${RXE_VM_OUT:-$CACHE/image}
TIMEOUT=${RXE_VM_TIMEOUT:-900}
BOOT_TIMEOUT=${RXE_VM_BOOT_TIMEOUT:-120}
ACCEL=${RXE_VM_ACCEL:-auto}
NET=${RXE_VM_NET:-dummy}
MEM=${RXE_VM_MEM:-2048}
SMP=${RXE_VM_SMP:-2}
LOG=${RXE_VM_LOG:-}
MODE=${RXE_VM_MODE:-full}
TIMING_FILE=""
SHARE=""
GUEST_IP=${RXE_VM_IP:-}
SHELL_MODE=0
QUIET=0
ENVS=()
PATHS=()
OVERLAYS=()
QEMU_EXTRA=()
CMD=()

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --) shift; CMD=("$@"); break ;;
        --timeout) TIMEOUT=$2; shift 2 ;;
        --accel) ACCEL=$2; shift 2 ;;
        --net) NET=$2; shift 2 ;;
        --ip) GUEST_IP=$2; shift 2 ;;
        --mem) MEM=$2; shift 2 ;;
        --smp) SMP=$2; shift 2 ;;
        --overlay) OVERLAYS+=("$2"); shift 2 ;;
        --qemu-arg) QEMU_EXTRA+=("$2"); shift 2 ;;
        --share) SHARE=$(cd "$2" && pwd) || exit 2; shift 2 ;;
        -e) ENVS+=("$2"); shift 2 ;;
        --log) LOG=$2; shift 2 ;;
        --mode) MODE=$2; shift 2 ;;
        --timing-file) TIMING_FILE=$2; shift 2 ;;
        --image) IMAGE=$2; shift 2 ;;
        --shell) SHELL_MODE=1; shift ;;
        -q) QUIET=1; shift ;;
        -h|--help) usage ;;
        -*) echo "unknown option $1" >&2; usage ;;
        *) PATHS+=("$1"); shift ;;
    esac
done

say() { echo "[run-in-vm] $*" >&2; }
[ -f "$IMAGE/vmlinuz" ] && [ -f "$IMAGE/initramfs-base.cpio" ] && [ -f "$IMAGE/initramfs-rdma.cpio" ] \
    || { say "no image in $IMAGE; run tests/vm/build-image.sh first"; exit 125; }
case "$MODE" in
    full) INITRDS=("$IMAGE/initramfs-base.cpio" "$IMAGE/initramfs-rdma.cpio") ;;
    bare) INITRDS=("$IMAGE/initramfs-base.cpio") ;;
    *) say "bad --mode $MODE (full|bare)"; exit 2 ;;
esac
for o in "${OVERLAYS[@]}"; do
    case "$o" in
        cluster) [ -f "$IMAGE/initramfs-cluster.cpio" ] || { say "no initramfs-cluster.cpio in $IMAGE; run tests/vm/build-image.sh"; exit 125; }
                 INITRDS+=("$IMAGE/initramfs-cluster.cpio") ;;
        *) say "bad --overlay $o (cluster)"; exit 2 ;;
    esac
done
# vmlinux (PVH entry) boots ~4 s faster than the bzImage under TCG
KERNEL=${RXE_VM_KERNEL:-$IMAGE/vmlinux}
[ -f "$KERNEL" ] || KERNEL=$IMAGE/vmlinuz
command -v qemu-system-x86_64 >/dev/null || { say "qemu-system-x86_64 not installed"; exit 125; }
BB=$IMAGE/busybox
[ -x "$BB" ] || { say "missing $BB (rebuild the image)"; exit 125; }

T0=$(date +%s.%N)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/rxe-vm-run.XXXXXX")
QPID=""
cleanup() {
    [ -n "$QPID" ] && kill "$QPID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ------------------------------------------------------------ extra cpio
X=$WORK/extra
mkdir -p "$X/rxe-vm" "$X/mnt/host"
for p in "${PATHS[@]}"; do
    [ -e "$p" ] || { say "no such path: $p"; exit 125; }
    cp -a --reflink=auto "$p" "$X/mnt/host/" || exit 125
done
{
    echo '#!/bin/bash'
    echo 'cd /mnt/host'
    for e in "${ENVS[@]}"; do printf 'export %q\n' "$e"; done
    if [ ${#CMD[@]} -gt 0 ]; then
        printf 'exec'; printf ' %q' "${CMD[@]}"; echo
    else
        echo 'exec /bin/bash /usr/share/rxe-vm/selftest.sh'
    fi
} >"$X/rxe-vm/cmd.sh"
chmod 755 "$X/rxe-vm/cmd.sh"
# uncompressed on purpose: gunzip under TCG is slow, a plain copy is not
(cd "$X" && find . -mindepth 1 | LC_ALL=C sort | "$BB" cpio -o -H newc -R 0:0 2>/dev/null) >"$WORK/extra.cpio" \
    || { say "cpio failed"; exit 125; }
# The kernel only accepts an uncompressed cpio member at a 4-byte aligned
# offset ("invalid magic at start of compressed archive" otherwise); NUL
# padding between members is skipped.  Order: base, [rdma overlay], extra.
# Shared lock: build-image.sh (exclusive) does not replace the image meanwhile.
[ -d "$CACHE" ] && exec 9>"$CACHE/.lock" && flock -s -w 600 9
{
    for f in "${INITRDS[@]}"; do
        cat "$f"
        head -c $(( (4 - $(stat -c %s "$f") % 4) % 4 )) /dev/zero
    done
    cat "$WORK/extra.cpio"
} >"$WORK/initrd"
exec 9>&-

# --------------------------------------------------------------- accel
if [ "$ACCEL" = auto ]; then
    ACCEL=tcg
    if [ -r /dev/kvm ] && [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then ACCEL=kvm; fi
fi
case "$ACCEL" in
    kvm) ACCEL_ARGS=(-accel kvm -cpu host) ;;
    tcg) ACCEL_ARGS=(-accel tcg,thread=multi -cpu max) ;;
    *) say "bad --accel $ACCEL"; exit 2 ;;
esac

# --------------------------------------------------------------- qemu
GNET=$NET
MAC=52:54:00:12:34:56
if [ -n "$GUEST_IP" ]; then
    MAC=$(echo "${GUEST_IP%/*}" | awk -F. '{printf "52:54:%02x:%02x:%02x:%02x", $1,$2,$3,$4}')
fi
case "$NET" in
    dummy)  NETARGS=(-nic none) ;;
    virtio) NETARGS=(-netdev user,id=n0 -device "virtio-net-pci,netdev=n0,romfile=,mac=$MAC") ;;
    listen:*|connect:*)
        [ -n "$GUEST_IP" ] || { say "--net $NET needs --ip"; exit 2; }
        NETARGS=(-netdev "socket,id=n0,${NET%%:*}=127.0.0.1:${NET#*:}"
                 -device "virtio-net-pci,netdev=n0,romfile=,mac=$MAC")
        GNET=virtio ;;
    tap:*)
        [ -n "$GUEST_IP" ] || { say "--net $NET needs --ip"; exit 2; }
        NETARGS=(-netdev "tap,id=n0,ifname=${NET#tap:},script=no,downscript=no"
                 -device "virtio-net-pci,netdev=n0,romfile=,mac=$MAC")
        GNET=virtio ;;
    *) say "bad --net $NET"; exit 2 ;;
esac
NONCE=$(od -An -tx1 -N6 /dev/urandom | tr -d ' \n')
APPEND="console=ttyS0 panic=-1 quiet loglevel=4 rxe_vm.net=$GNET rxe_vm.cmd=/rxe-vm/cmd.sh rxe_vm.nonce=$NONCE"
[ -n "$GUEST_IP" ] && APPEND+=" rxe_vm.ip=$GUEST_IP"
[ "$SHELL_MODE" = 1 ] && APPEND+=" rxe_vm.shell=1"
SHAREARGS=()
if [ -n "$SHARE" ]; then
    SHAREARGS=(-virtfs "local,path=$SHARE,mount_tag=hostshare,security_model=none,id=hostshare")
fi
BIOSARGS=()
[ -f /usr/share/qemu/qboot.rom ] && BIOSARGS=(-bios /usr/share/qemu/qboot.rom)  # skips SeaBIOS: faster, no escape-code noise

QEMU=(qemu-system-x86_64 "${ACCEL_ARGS[@]}" "${BIOSARGS[@]}" -m "$MEM" -smp "$SMP"
      -nographic -no-reboot -kernel "$KERNEL" -initrd "$WORK/initrd"
      -append "$APPEND" "${NETARGS[@]}" "${SHAREARGS[@]}" "${QEMU_EXTRA[@]}")
say "mode=$MODE accel=$ACCEL kernel=${KERNEL##*/} net=$NET mem=${MEM}M smp=$SMP timeout=${TIMEOUT}s files=${#PATHS[@]} initrd=$(du -h "$WORK/initrd" | cut -f1)"

CONSOLE=$WORK/console.log
if [ "$SHELL_MODE" = 1 ]; then
    timeout -k 10 "$TIMEOUT" "${QEMU[@]}"
    exit $?
fi

# qemu in the background writing into a FIFO; we stream + scan it
mkfifo "$WORK/fifo"
timeout -k 10 "$TIMEOUT" "${QEMU[@]}" </dev/null >"$WORK/fifo" 2>&1 &
QPID=$!
T_CMD=""
T_END=""
INCMD=0
PARTIAL=""
STALLED=0
exec 3<"$WORK/fifo"
while :; do
    # read with a 1 s tick so a guest that never reaches the command (e.g. KVM
    # on a PVM host: silent hang right after the bootloader) is caught early
    if IFS= read -r -t 1 line <&3; then
        line=$PARTIAL$line; PARTIAL=""
    else
        st=$?
        if [ $st -gt 128 ]; then        # tick: keep any partial line
            PARTIAL+=$line
            if [ -z "$T_CMD" ] && [ "$STALLED" = 0 ] && \
               [ "$(awk "BEGIN{print ($(date +%s.%N)-$T0 > $BOOT_TIMEOUT)}")" = 1 ]; then
                say "guest did not reach the command within ${BOOT_TIMEOUT}s (RXE_VM_BOOT_TIMEOUT); killing qemu"
                STALLED=1
                kill "$QPID" 2>/dev/null   # timeout(1) forwards TERM to qemu
            fi
            continue
        fi
        [ -n "$PARTIAL$line" ] || break  # EOF
        line=$PARTIAL$line; PARTIAL=""
    fi
    line=${line%$'\r'}
    printf '%s\n' "$line" >>"$CONSOLE"
    SHOW=$INCMD
    case "$line" in
        RXE_VM_CMD_START*) T_CMD=$(date +%s.%N); INCMD=1; SHOW=0 ;;
        *RXE_VM_CMD_END)   T_END=$(date +%s.%N); INCMD=0; SHOW=0
                           line=${line%RXE_VM_CMD_END}; [ -n "$line" ] && SHOW=1 ;;
    esac
    if [ "$QUIET" = 0 ] || [ "$SHOW" = 1 ]; then
        printf '%s\n' "$line"
    fi
done
exec 3<&-
wait "$QPID"; QRC=$?
QPID=""
T1=$(date +%s.%N)

RC=$(grep -a -o "RXE_VM_EXIT=[0-9]* ($NONCE)" "$CONSOLE" | tail -1 | sed 's/^RXE_VM_EXIT=\([0-9]*\) .*/\1/')
if [ "$STALLED" = 1 ]; then
    RC=125
elif [ "$QRC" = 124 ] || [ "$QRC" = 137 ]; then
    say "TIMEOUT after ${TIMEOUT}s (qemu killed)"
    RC=124
elif [ -z "$RC" ]; then
    say "VM ended without RXE_VM_EXIT sentinel (qemu rc=$QRC): kernel panic or early failure"
    RC=125
fi
[ -n "$LOG" ] && cp "$CONSOLE" "$LOG"
if [ "$QUIET" = 1 ] && [ "$RC" != 0 ]; then
    say "full console log follows"; cat "$CONSOLE" >&2
fi
f() { awk "BEGIN{printf \"%.1f\", $1}"; }
if [ -n "$T_CMD" ]; then
    say "timing: boot-to-command $(f "$T_CMD-$T0")s, command $(f "${T_END:-$T1}-$T_CMD")s, total $(f "$T1-$T0")s"
    [ -n "$TIMING_FILE" ] && echo "boot=$(f "$T_CMD-$T0") cmd=$(f "${T_END:-$T1}-$T_CMD") total=$(f "$T1-$T0") rc=$RC" >"$TIMING_FILE"
else
    say "timing: total $(f "$T1-$T0")s (command never started)"
    [ -n "$TIMING_FILE" ] && echo "boot=- cmd=- total=$(f "$T1-$T0") rc=$RC" >"$TIMING_FILE"
fi
say "exit code $RC"
exit "$RC"
