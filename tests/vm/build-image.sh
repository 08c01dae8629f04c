#!/bin/bash
# Build the rxe test-bed image: Debian 12's stock kernel with Soft-RoCE
# (rdma_rxe) plus a small userspace, from Debian .debs only (apt-get download +
# dpkg-deb -x; nothing is installed on the host).
#
# Two modes share one kernel and one base initramfs:
#   bare  initramfs-base.cpio: kernel modules, busybox, bash, iproute2 ip/rdma,
#         strace, glibc + libgcc_s.  NO rdma-core library, provider, tool or
#         perftest (checked here and again by a guest case).
#   full  initramfs-base.cpio + initramfs-rdma.cpio (an overlay: libibverbs1,
#         ibverbs-providers, librdmacm1, ibverbs-utils, rdmacm-utils, perftest,
#         qperf, infiniband-diags (ibstat)
#         and their library closure, ld.so.cache, mode file).  The kernel
#         unpacks concatenated newc archives in order; run-in-vm.sh joins them.
# A third overlay serves the multi-VM cluster (tests/vm/cluster.sh), on top of
# either mode:
#   initramfs-cluster.cpio: OpenSSH (server and client), munge and Slurm
#         (slurmctld, slurmd, slurmstepd, the client commands and the plugins
#         whose libraries resolve), nothing of rdma-core (checked), no
#         ld.so.cache (the libraries sit in the default search path, so the
#         cache of the mode below stays valid).
#
# Outputs (in $RXE_VM_OUT, default $RXE_VM_CACHE/image):
#   vmlinuz (bzImage)  vmlinux (same kernel, uncompressed ELF for PVH boot)
#   initramfs-base.cpio  initramfs-rdma.cpio  initramfs-cluster.cpio
#                      (uncompressed newc, each padded
#   to a multiple of 4 bytes)  manifest-bare.txt  manifest-full.txt
#   kernel-version  busybox (host-side cpio tool for run-in-vm.sh)
# The output dir is printed on stdout (the last line); progress goes to stderr.
#
# Env:
#   RXE_VM_CACHE   cache dir   (default ${XDG_CACHE_HOME:-$HOME/.cache}/rxe-vm)
#   RXE_VM_OUT     output dir  (default $RXE_VM_CACHE/image)
#   RXE_VM_KERNEL_PKG  e.g. linux-image-6.1.0-57-amd64 (default: what
#                  linux-image-amd64 depends on, per apt-cache)
#   RXE_VM_KERNEL_SUITE  e.g. trixie-backports: take the kernel (the newest
#                  linux-image-amd64 there) from that Debian suite through a
#                  private apt list under the cache, keep every other package
#                  from the host's suite; the image goes to image-SUITE (the
#                  netns bed needs a kernel whose rxe serves network namespaces)
#   RXE_VM_FORCE=1 rebuild even if the stamp matches
#   RXE_VM_OFFLINE=1 never call apt-get download; use whatever is cached
#
# Host requirements: bash, coreutils, apt-get/apt-cache (lists already
# updated), dpkg-deb, sha256sum, ldconfig (libc-bin).  busybox, cpio and
# depmod come from the downloaded busybox-static; xz from the downloaded
# xz-utils (run through the downloaded ld.so).  Root is not needed.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${RXE_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rxe-vm}
KSUITE=${RXE_VM_KERNEL_SUITE:-}
SFX=${KSUITE:+-$KSUITE}
OUT=${RXE_VM_OUT:-$CACHE/image$SFX}
DEBS=$CACHE/debs
STAGE=$CACHE/staging$SFX
TREE_BASE=$CACHE/tree-base$SFX
TREE_FULL=$CACHE/tree-full$SFX
mkdir -p "$CACHE" "$OUT" "$DEBS"
T_START=$(date +%s.%N)
say() { echo "[build-image] $*" >&2; }
die() { echo "[build-image] ERROR: $*" >&2; exit 1; }

for t in apt-get apt-cache dpkg-deb sha256sum ldconfig awk od cmp flock; do
    command -v $t >/dev/null || die "missing host tool: $t"
done
# one builder at a time per cache (run-in-vm.sh takes this lock shared while
# it reads the image)
exec 9>"$CACHE/.lock"
flock 9

# ---------------------------------------------------------------- packages
EMPTY=$(mktemp -d); trap 'rm -rf "$EMPTY"' EXIT
KDEBS=()   # kernel .debs from $KSUITE (downloaded by kernel_from_suite)
if [ -n "$KSUITE" ]; then
    # shellcheck source=kernel-suite.bash
    . "$HERE/kernel-suite.bash"
    kernel_from_suite "$KSUITE"   # sets KPKG and KDEBS, downloads into $DEBS
elif [ -n "${RXE_VM_KERNEL_PKG:-}" ]; then
    KPKG=$RXE_VM_KERNEL_PKG
elif [ "${RXE_VM_OFFLINE:-0}" = 1 ] && [ -f "$CACHE/kernel-pkg" ]; then
    KPKG=$(cat "$CACHE/kernel-pkg")
else
    KPKG=$(apt-cache depends linux-image-amd64 2>/dev/null \
           | awk '/Depends: linux-image-[0-9]/ && !k {k=$2} END {print k}')
    [ -n "$KPKG" ] || die "cannot resolve linux-image-amd64 -> linux-image-X (run apt-get update first)"
fi
[ -n "$KSUITE" ] || echo "$KPKG" >"$CACHE/kernel-pkg"

# Library packages are listed explicitly; the ELF closure check below fails
# the build if anything resolves outside the staging tree.
BASE_PKGS=(
  busybox-static bash libtinfo6
  libc6 libgcc-s1
  iproute2 libbpf1 libelf1 libmnl0 libbsd0 libmd0 libcap2 zlib1g
  strace libunwind8 liblzma5 libxtables12
  xz-utils
)
# (xz-utils is only used on the host, via the staged loader, to extract an
#  uncompressed vmlinux from the xz bzImage; it is not put into the image)
RDMA_PKGS=(
  libibverbs1 ibverbs-providers librdmacm1 ibverbs-utils rdmacm-utils perftest
  qperf infiniband-diags libibmad5 libibnetdisc5
  libnl-3-200 libnl-route-3-200 libpci3 libudev1 libibumad3
)
# The cluster overlay: Debian's OpenSSH, munge and Slurm 22.05 with the
# libraries their binaries and plugins link (the closure check names any gap).
CLUSTER_PKGS=(
  openssh-server openssh-client openssh-sftp-server
  munge libmunge2 slurmd slurmctld slurm-client slurm-wlm-basic-plugins
  libssl3 libcrypt1 libaudit1 libcap-ng0 libgssapi-krb5-2 libkrb5-3 libk5crypto3
  libkrb5support0 libkeyutils1 libcom-err2 libwrap0 libnsl2 libtirpc3 libselinux1
  libpcre2-8-0 libpam0g libsystemd0 libzstd1 liblz4-1 libgcrypt20 libgpg-error0
  libedit2 libncursesw6 libfido2-1 libcbor0.8 libhwloc15 libnuma1 libjson-c5
  libyaml-0-2 liblua5.1-0 libreadline8 libstdc++6 libbz2-1.0
)
# (Debian 13's bzImage carries a zstd payload: the staged zstd extracts its vmlinux)
if [ -n "$KSUITE" ]; then BASE_PKGS+=(zstd); else BASE_PKGS+=("$KPKG"); fi
PKGS=("${BASE_PKGS[@]}" "${RDMA_PKGS[@]}" "${CLUSTER_PKGS[@]}")

DEBFILES=()
if [ "${RXE_VM_OFFLINE:-0}" = 1 ]; then
    for p in "${PKGS[@]}"; do
        f=$(cd "$DEBS" && ls -t "${p}_"*.deb 2>/dev/null | head -1)
        [ -n "$f" ] || die "offline and $p not cached in $DEBS"
        DEBFILES+=("$f")
    done
else
    # One apt call for all packages (each apt invocation costs ~0.8 s).  Run it
    # in an empty dir: apt prints nothing for a .deb already present in cwd.
    # Output lines: 'URI' filename size SHA256:hash
    URIS=$(cd "$EMPTY" && apt-get download --print-uris "${PKGS[@]}") \
        || die "apt-get download --print-uris failed (run apt-get update first?)"
    MISSING=()
    while read -r uri fn size hash; do
        DEBFILES+=("$fn")
        if [ ! -f "$DEBS/$fn" ] || [ "$(stat -c %s "$DEBS/$fn")" != "$size" ]; then
            MISSING+=("$fn")
        fi
    done <<<"$URIS"
    [ "${#DEBFILES[@]}" = "${#PKGS[@]}" ] || die "expected ${#PKGS[@]} .debs, apt listed ${#DEBFILES[@]}"
    if [ "${#MISSING[@]}" -gt 0 ]; then
        say "downloading ${#MISSING[@]} .debs: ${MISSING[*]}"
        # package names are the part before the first '_'
        (cd "$DEBS" && apt-get download "${MISSING[@]%%_*}" >/dev/null 2>"$EMPTY/apt.err") \
            || { cat "$EMPTY/apt.err" >&2; die "apt-get download failed"; }
        for fn in "${MISSING[@]}"; do [ -f "$DEBS/$fn" ] || die "missing $DEBS/$fn after download"; done
    fi
fi

DEBFILES+=("${KDEBS[@]}")
# canonical order (apt --print-uris does not keep the command-line order)
mapfile -t DEBFILES < <(printf '%s\n' "${DEBFILES[@]}" | LC_ALL=C sort)

# --------------------------------------------------------------- stamp check
INPUT_HASH=$( {
    printf '%s\n' "${DEBFILES[@]}"
    cat "$0" "$HERE/kernel-suite.bash" "$HERE/guest/init" "$HERE/guest/selftest.sh" "$HERE/guest/cluster-node.sh"
} | sha256sum | cut -c1-16)
if [ "${RXE_VM_FORCE:-0}" != 1 ] && [ -f "$OUT/.stamp" ] \
   && [ "$(cat "$OUT/.stamp")" = "$INPUT_HASH" ] \
   && [ -f "$OUT/initramfs-base.cpio" ] && [ -f "$OUT/initramfs-rdma.cpio" ] \
   && [ -f "$OUT/initramfs-cluster.cpio" ] \
   && [ -f "$OUT/vmlinuz" ] && [ -x "$OUT/busybox" ]; then
    say "up to date ($OUT, stamp $INPUT_HASH, $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N)-$T_START}")s)"
    echo "$OUT"
    exit 0
fi

# ------------------------------------------------------------------- unpack
DEB_HASH=$(printf '%s\n' "${DEBFILES[@]}" | sha256sum | cut -c1-16)
if [ ! -f "$STAGE/.stamp" ] || [ "$(cat "$STAGE/.stamp")" != "$DEB_HASH" ]; then
    say "unpacking ${#DEBFILES[@]} .debs into $STAGE"
    rm -rf "$STAGE"; mkdir -p "$STAGE"
    for f in "${DEBFILES[@]}"; do dpkg-deb -x "$DEBS/$f" "$STAGE"; done
    echo "$DEB_HASH" >"$STAGE/.stamp"
fi
BB=$STAGE/bin/busybox
[ -x "$BB" ] || die "busybox not found in staging"
# Debian 13's kernels put modules (and vmlinuz) under /usr/lib/modules
if [ ! -d "$STAGE/lib/modules" ] && [ -d "$STAGE/usr/lib/modules" ]; then
    ln -s ../usr/lib/modules "$STAGE/lib/modules"
fi
KVER=$(ls "$STAGE/lib/modules" | head -1)
[ -n "$KVER" ] || die "no kernel modules in staging"
VMLINUZ=$STAGE/boot/vmlinuz-$KVER
[ -f "$VMLINUZ" ] || VMLINUZ=$STAGE/lib/modules/$KVER/vmlinuz
[ -f "$VMLINUZ" ] || die "no vmlinuz for $KVER in staging"

LDSO=$STAGE/lib64/ld-linux-x86-64.so.2
LP=$STAGE/lib/x86_64-linux-gnu:$STAGE/usr/lib/x86_64-linux-gnu:$STAGE/usr/lib/x86_64-linux-gnu/libibverbs
# Slurm's binaries find libslurmfull.so through their RUNPATH, which names
# the plugin dir by its absolute path
LP+=:$STAGE/usr/lib/x86_64-linux-gnu/slurm-wlm

# Uncompressed vmlinux (ELF with a PVH entry note): qemu boots it directly,
# skipping the bzImage self-decompression, which costs ~3-4 s under TCG.
# Payload offset = (setup_sects+1)*512 + payload_offset; the payload ends with
# a 4-byte size trailer that xz must not see.  busybox unxz lacks the x86 BCJ
# filter the kernel uses, so use the staged xz-utils.
VMLINUX=$STAGE/vmlinux-$KVER
if [ ! -s "$VMLINUX" ]; then
    ss=$(od -An -tu1 -j $((0x1f1)) -N1 "$VMLINUZ" | tr -d ' ')
    po=$(od -An -tu4 -j $((0x248)) -N4 "$VMLINUZ" | tr -d ' ')
    pl=$(od -An -tu4 -j $((0x24c)) -N4 "$VMLINUZ" | tr -d ' ')
    off=$(( (ss + 1) * 512 + po ))
    say "extracting vmlinux (payload at $off, $pl bytes)"
    unpack=("$STAGE/usr/bin/xz" -dc)
    [ "$(od -An -tx1 -j "$off" -N4 "$VMLINUZ" | tr -d ' ')" != 28b52ffd ] || unpack=("$STAGE/usr/bin/zstd" -dcq)
    if dd if="$VMLINUZ" iflag=skip_bytes,count_bytes skip=$off count=$((pl - 4)) bs=1M status=none \
         | "$LDSO" --library-path "$LP" "${unpack[@]}" >"$VMLINUX.tmp" 2>/dev/null \
       && [ "$(head -c 4 "$VMLINUX.tmp" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
        mv "$VMLINUX.tmp" "$VMLINUX"
    else
        say "WARNING: vmlinux extraction failed; run-in-vm.sh will boot the bzImage (slower)"
        rm -f "$VMLINUX.tmp"
    fi
fi

# depmod (the .deb ships no modules.dep; busybox depmod generates one)
MODDIR=$STAGE/lib/modules/$KVER
if [ ! -f "$MODDIR/modules.dep" ] && [ -z "$KSUITE" ]; then
    say "busybox depmod $KVER"
    "$BB" depmod -b "$STAGE" "$KVER"
fi

# ------------------------------------------------------- module load order
# crc32_generic: rdma_rxe calls crypto_alloc_shash("crc32") for the ICRC; it
# is CONFIG_CRYPTO_CRC32=m and NOT in rdma_rxe's modules.dep, so without it
# `rdma link add` fails with ENOENT ("failed to init crc32 algorithm err:-2").
# A|B: the first of the names this kernel has (6.1: crc32_generic, 7.x:
# crc32_cryptoapi).
WANT_MODS=(
  virtio_pci virtio_net dummy veth crc32_generic\|crc32_cryptoapi
  configfs ib_core ib_uverbs ib_umad ib_cm iw_cm rdma_cm rdma_ucm rdma_rxe
  9p 9pnet_virtio
  sch_netem sch_tbf sch_prio sch_ingress cls_u32 act_gact virtio_console
  crc32c_generic\|crc32c_cryptoapi sctp
)
# (the qdisc/classifier modules serve tests/vm/cluster.sh's fault injection:
#  netem delay/loss, tbf rate limits, u32 drop filters; virtio_console
#  carries its out-of-band agent)
# (sctp: qperf's sctp_bw/sctp_lat in cases/80-qperf.sh; its libcrc32c asks the
#  crypto API for "crc32c" at load, and crc32c-intel needs SSE4.2, which the TCG
#  CPU lacks, so crc32c_generic goes first, as crc32_generic does for rxe)
# A kernel from another suite (xz modules): busybox depmod would unpack all ~6000 of them
# (about 25 s), so write a modules.dep for the modules wanted here and what they depend on,
# read from each one's .modinfo "depends=" field.
mini_depmod() {
    local f n m d alts a deps line
    local -A path=() seen=()
    while IFS= read -r f; do
        n=${f##*/}; n=${n%.ko*}; path[${n//-/_}]=$f
    done < <(cd "$MODDIR" && find kernel -name '*.ko*')
    local -a todo=()
    for alts in "${WANT_MODS[@]}"; do for a in ${alts//|/ }; do [ -n "${path[$a]:-}" ] && todo+=("$a"); done; done
    : >"$MODDIR/modules.dep.new"
    while [ ${#todo[@]} -gt 0 ]; do
        m=${todo[0]}; todo=("${todo[@]:1}")
        [ -n "${seen[$m]:-}" ] && continue
        seen[$m]=1
        f=$MODDIR/${path[$m]}
        case "$f" in
            *.xz) deps=$("$LDSO" --library-path "$LP" "$STAGE/usr/bin/xz" -dc "$f" | grep -a -o -m1 'depends=[a-z0-9_,-]*' || true) ;;
            *) deps=$(grep -a -o -m1 'depends=[a-z0-9_,-]*' "$f" || true) ;;
        esac
        line="${path[$m]}:"
        for d in ${deps//,/ }; do
            d=${d#depends=}; [ -n "$d" ] || continue; d=${d//-/_}
            [ -n "${path[$d]:-}" ] || die "$m depends on $d, which $KVER does not have"
            line+=" ${path[$d]}"; todo+=("$d")
        done
        echo "$line" >>"$MODDIR/modules.dep.new"
    done
    mv "$MODDIR/modules.dep.new" "$MODDIR/modules.dep"
}
if [ -n "$KSUITE" ] && [ ! -f "$MODDIR/modules.dep" ]; then
    say "modules.dep for the wanted modules of $KVER"
    mini_depmod
fi
declare -A MODPATH MODDEPS SEEN
while IFS= read -r line; do   # pure bash: ~4000 lines, no subshells
    path=${line%%:*}; deps=${line#*:}
    name=${path##*/}; name=${name%.ko*}; name=${name//-/_}
    MODPATH[$name]=$path
    MODDEPS[$name]=$deps
done <"$MODDIR/modules.dep"
ORDER=()
visit() {  # post-order DFS => dependencies first
    local n=$1 d dn
    [ -n "${SEEN[$n]:-}" ] && return
    SEEN[$n]=1
    [ -n "${MODPATH[$n]:-}" ] || die "module $n not found (builtin? check modules.builtin)"
    for d in ${MODDEPS[$n]}; do
        dn=${d##*/}; dn=${dn%.ko*}; dn=${dn//-/_}
        visit "$dn"
    done
    ORDER+=("${MODPATH[$n]}")
}
for alts in "${WANT_MODS[@]}"; do
    m=""
    for a in ${alts//|/ }; do [ -n "${MODPATH[$a]:-}" ] && { m=$a; break; }; done
    [ -n "$m" ] || m=${alts%%|*}
    if grep -q "/$m.ko\$" "$MODDIR/modules.builtin" 2>/dev/null; then continue; fi
    # Debian 13's kernel .debs ship no modules.builtin: a module they lack is built in there
    if [ ! -f "$MODDIR/modules.builtin" ] && [ -z "${MODPATH[$m]:-}" ]; then continue; fi
    visit "$m"
done

# --------------------------------------------------------- binaries per mode
# real binaries (they shadow busybox applets of the same name)
BASE_BINS=( bin/bash bin/ip sbin/tc usr/bin/rdma usr/bin/strace )
RDMA_BINS=(
  usr/bin/ibv_devices usr/bin/ibv_devinfo usr/bin/ibv_rc_pingpong
  usr/bin/ibv_uc_pingpong usr/bin/ibv_ud_pingpong usr/bin/ibv_srq_pingpong
  usr/bin/ibv_xsrq_pingpong usr/bin/ibv_asyncwatch
  usr/bin/rping usr/bin/ucmatose usr/bin/udaddy usr/bin/mckey
  usr/bin/rdma_server usr/bin/rdma_client usr/bin/rdma_xserver usr/bin/rdma_xclient
  usr/bin/riostream usr/bin/rstream usr/bin/cmtime
  usr/bin/qperf usr/sbin/ibstat usr/sbin/ibaddr
)
for b in "$STAGE"/usr/bin/ib_*_{bw,lat}; do RDMA_BINS+=("${b#$STAGE/}"); done
CLUSTER_BINS=(
  usr/sbin/sshd usr/bin/ssh usr/bin/scp usr/bin/ssh-keygen usr/lib/openssh/sftp-server
  usr/sbin/munged usr/bin/munge usr/bin/unmunge
  usr/sbin/slurmctld-wlm usr/sbin/slurmd-wlm usr/sbin/slurmstepd-wlm
  usr/bin/srun usr/bin/salloc usr/bin/sbatch usr/bin/squeue usr/bin/sinfo
  usr/bin/scontrol usr/bin/scancel usr/bin/sbcast
)
# libibverbs provider for rxe (dlopen()ed, so not visible to ld.so --list)
RDMA_DLOPEN=( usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so )
# libgcc_s: not linked by the tools but needed by glibc-dynamic Rust binaries;
# libm/libdl/libpthread/librt/...: cheap, commonly needed by user binaries
BASE_EXTRA_LIBS=( libgcc_s.so.1 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1
                  libresolv.so.2 libnss_files.so.2 libnss_dns.so.2 )

# copy_closure TREE FILE...: copy FILEs (staging-relative) and the shared
# libraries they need (resolved by the *staged* loader) into TREE
copy_closure() {
    local tree=$1 f out lib rel; shift
    declare -A libs=()
    for f in "$@"; do
        [ -f "$STAGE/$f" ] || die "missing $f in staging"
        rm -f "$tree/$f"; mkdir -p "$tree/$(dirname "$f")"
        cp -L "$STAGE/$f" "$tree/$f"
        out=$("$LDSO" --library-path "$LP" --list "$STAGE/$f") || die "ld.so --list $f failed"
        if echo "$out" | grep -q 'not found'; then die "unresolved libs for $f: $(echo "$out" | grep 'not found')"; fi
        while read -r lib; do
            case "$lib" in "$STAGE"/*) libs[$lib]=1 ;; *) die "$f: $lib resolved outside staging (add its package)";; esac
        done < <(echo "$out" | awk '/=>/ {print $3} !/=>/ && $1 ~ /^\// {print $1}')
    done
    for lib in "${!libs[@]}"; do
        rel=${lib#$STAGE/}
        [ -e "$tree/$rel" ] && continue
        mkdir -p "$tree/$(dirname "$rel")"
        cp -L "$lib" "$tree/$rel"
    done
}

# ------------------------------------------------------------ base tree
say "assembling base (bare) tree"
rm -rf "$TREE_BASE"; mkdir -p "$TREE_BASE"
cd "$TREE_BASE"
mkdir -p bin sbin usr/bin usr/sbin lib/x86_64-linux-gnu usr/lib/x86_64-linux-gnu \
         lib64 etc/rxe-vm usr/share/rxe-vm proc sys dev tmp run \
         root mnt/host rxe-vm "lib/modules/$KVER"
declare -A REAL
for f in "${BASE_BINS[@]}" "${RDMA_BINS[@]}"; do REAL[$(basename "$f")]=1; done
# busybox + applet links, except where a real binary of that name exists (in
# either mode: the rdma overlay must only add files, never replace a link)
cp "$BB" bin/busybox
while read -r a; do
    [ "$a" = bin/busybox ] && continue
    [ -n "${REAL[${a##*/}]:-}" ] && continue
    [ -e "$a" ] || [ -L "$a" ] || ln -s /bin/busybox "$a"
done < <("$BB" --list-full)
copy_closure "$TREE_BASE" "${BASE_BINS[@]}"
for l in "${BASE_EXTRA_LIBS[@]}"; do
    cp -L "$STAGE/lib/x86_64-linux-gnu/$l" lib/x86_64-linux-gnu/
done
# the ELF interpreter path is /lib64/ld-linux-x86-64.so.2: keep Debian's layout
cp -L "$STAGE/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" lib/x86_64-linux-gnu/
ln -sf /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 lib64/ld-linux-x86-64.so.2
printf '/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n' >etc/ld.so.conf

# kernel modules
: >etc/rxe-vm/modules.load
declare -A MODARGS=( [dummy]="numdummies=0" )   # no stray dummy0
for m in "${ORDER[@]}"; do
    mkdir -p "lib/modules/$KVER/$(dirname "$m")"
    case "$m" in   # busybox insmod takes plain .ko: unpack compressed modules here
        *.ko.xz) "$LDSO" --library-path "$LP" "$STAGE/usr/bin/xz" -dc "$MODDIR/$m" >"lib/modules/$KVER/${m%.xz}"
                 m=${m%.xz} ;;
        *) cp "$MODDIR/$m" "lib/modules/$KVER/$m" ;;
    esac
    n=${m##*/}; n=${n%.ko}
    echo "$m ${MODARGS[$n]:-}" >>etc/rxe-vm/modules.load
done
for f in modules.order modules.builtin; do [ ! -f "$MODDIR/$f" ] || cp "$MODDIR/$f" "lib/modules/$KVER/"; done
"$BB" depmod -b "$TREE_BASE" "$KVER"   # small tree: lets `modprobe` work in the guest too

# minimal /etc
echo 'root:x:0:0:root:/root:/bin/sh' >etc/passwd
echo 'root:x:0:' >etc/group
printf 'hosts: files dns\n' >etc/nsswitch.conf
cat >etc/profile <<'EOF'
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PS1='rxe-vm:\w# '
EOF
cp "$HERE/guest/init" init; chmod 755 init
cp "$HERE/guest/selftest.sh" usr/share/rxe-vm/selftest.sh
echo bare >etc/rxe-vm/mode

# ------------------------------------------------------------ full tree
say "assembling full tree (base + rdma-core + perftest)"
rm -rf "$TREE_FULL"
cp -a "$TREE_BASE" "$TREE_FULL"
cd "$TREE_FULL"
mkdir -p etc/libibverbs.d
copy_closure "$TREE_FULL" "${RDMA_BINS[@]}" "${RDMA_DLOPEN[@]}"
# libibverbs finds providers through /etc/libibverbs.d/*.driver ("driver rxe")
# and dlopen()s librxe-rdmav34.so from its compiled-in provider dir.
cp "$STAGE/etc/libibverbs.d/rxe.driver" etc/libibverbs.d/
echo full >etc/rxe-vm/mode

# ------------------------------------------------------------ cluster tree
# base + OpenSSH + munge + Slurm.  Slurm dlopen()s its plugins by path, so
# ld.so cannot see them: every plugin whose libraries resolve inside staging
# is taken (with its closure), the others (MySQL accounting, PMIx, ...) are
# left out and named in the manifest.
say "assembling cluster tree (base + OpenSSH + munge + Slurm)"
TREE_CLUSTER=$CACHE/tree-cluster$SFX
rm -rf "$TREE_CLUSTER"
cp -a "$TREE_BASE" "$TREE_CLUSTER"
cd "$TREE_CLUSTER"
SLURM_PLUGDIR=usr/lib/x86_64-linux-gnu/slurm-wlm
PLUGINS=() PLUGINS_SKIPPED=()
for f in "$STAGE/$SLURM_PLUGDIR"/*.so; do
    rel=${f#$STAGE/}
    out=$("$LDSO" --library-path "$LP" --list "$f" 2>/dev/null) || { PLUGINS_SKIPPED+=("${rel##*/}"); continue; }
    if echo "$out" | grep -q 'not found' \
       || echo "$out" | awk '/=>/ {print $3}' | grep -qv "^$STAGE/"; then
        PLUGINS_SKIPPED+=("${rel##*/}"); continue
    fi
    PLUGINS+=("$rel")
done
[ ${#PLUGINS[@]} -gt 20 ] || die "only ${#PLUGINS[@]} Slurm plugins resolve (staging incomplete?)"
copy_closure "$TREE_CLUSTER" "${CLUSTER_BINS[@]}" "${PLUGINS[@]}"
# the names Debian's update-alternatives would link (slurmd runs
# /usr/sbin/slurmstepd by that name)
for d in slurmctld slurmd slurmstepd; do ln -sf "$d-wlm" "usr/sbin/$d"; done
cp "$HERE/guest/cluster-node.sh" usr/share/rxe-vm/cluster-node.sh
echo "${PLUGINS_SKIPPED[*]}" >etc/rxe-vm/slurm-plugins-skipped
leak=$(find . \( -name 'libibverbs*' -o -name 'librdmacm*' -o -name 'librxe*' -o -name '*rdmav*' \
                 -o -name 'libmlx*' -o -name 'libefa*' -o -name 'ib_*_bw' -o -name 'ib_*_lat' \
                 -o -name 'ibv_*' -o -name 'libibverbs.d' \) -print)
[ -z "$leak" ] || die "cluster tree contains rdma-core/perftest files: $leak"

ldconfig -r "$TREE_BASE" || die "ldconfig -r (base) failed"
ldconfig -r "$TREE_FULL" || die "ldconfig -r (full) failed"

# ------------------------------------------------- bare must have no rdma-core
cd "$TREE_BASE"
leak=$(find . \( -name 'libibverbs*' -o -name 'librdmacm*' -o -name 'librxe*' -o -name '*rdmav*' \
                 -o -name 'libmlx*' -o -name 'libefa*' -o -name 'ib_*_bw' -o -name 'ib_*_lat' \
                 -o -name 'ibv_*' -o -name 'libibverbs.d' \) -print)
[ -z "$leak" ] || die "bare tree contains rdma-core/perftest files: $leak"
if grep -qaE 'libibverbs|librdmacm' etc/ld.so.cache; then die "bare ld.so.cache names rdma-core libraries"; fi

# ------------------------------------------------------------ manifests
manifest() {  # mode tree pkgs...
    local mode=$1 tree=$2 f p; shift 2
    declare -A want=()
    for p in "$@"; do want[$p]=1; done
    echo "mode=$mode"
    echo "kernel_version=$KVER"
    echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "stamp=$INPUT_HASH"
    echo "[packages]"
    for f in "${DEBFILES[@]}"; do
        p=$(dpkg-deb -f "$DEBS/$f" Package)
        [ -n "${want[$p]:-}" ] || continue
        [ "$p" = xz-utils ] && continue
        printf '%s %s\n' "$p" "$(dpkg-deb -f "$DEBS/$f" Version)"
    done
    echo "[modules.load]"
    cat "$tree/etc/rxe-vm/modules.load"
    echo "[libraries]"
    (cd "$tree" && find lib usr/lib -name '*.so*' \( -type f -o -type l \) | LC_ALL=C sort)
}
manifest bare "$TREE_BASE" "${BASE_PKGS[@]}" >"$OUT/manifest-bare.txt.new"
manifest full "$TREE_FULL" "${BASE_PKGS[@]}" "${RDMA_PKGS[@]}" >"$OUT/manifest-full.txt.new"
{ manifest cluster "$TREE_CLUSTER" "${CLUSTER_PKGS[@]}"; echo "[slurm-plugins-left-out]"
  printf '%s\n' "${PLUGINS_SKIPPED[@]}"; } >"$OUT/manifest-cluster.txt"
cp "$OUT/manifest-bare.txt.new" "$TREE_BASE/etc/rxe-vm/manifest.txt"
cp "$OUT/manifest-full.txt.new" "$TREE_FULL/etc/rxe-vm/manifest.txt"

# ------------------------------------------------------- overlay file lists
# Everything in an overlay tree that the base tree lacks or has with other
# contents.  Replacing a symlink is not allowed: the kernel's initramfs
# unpacker cannot overwrite an existing symlink with another one.
overlay_list() {  # TREE [EXCLUDED_PATH...]: prints the entries, one a line
    local tree=$1 p b x; shift
    cd "$tree"
    while IFS= read -r p; do
        for x in "$@"; do [ "$p" = "$x" ] && continue 2; done
        b=$TREE_BASE/$p
        if [ ! -e "$b" ] && [ ! -L "$b" ]; then echo "$p"; continue; fi
        if [ -L "$p" ]; then
            [ -L "$b" ] && [ "$(readlink "$p")" = "$(readlink "$b")" ] || die "overlay would replace $p (symlink)"
            continue
        fi
        [ -d "$p" ] && continue
        if [ -L "$b" ] || ! cmp -s "$p" "$b"; then echo "$p"; fi
    done < <(find . -mindepth 1 | LC_ALL=C sort)
}
mapfile -t OVERLAY < <(overlay_list "$TREE_FULL")
mapfile -t OVERLAY_CLUSTER < <(overlay_list "$TREE_CLUSTER" ./etc/ld.so.cache ./etc/rxe-vm/mode ./etc/rxe-vm/manifest.txt)
say "rdma overlay: ${#OVERLAY[@]} entries; cluster overlay: ${#OVERLAY_CLUSTER[@]} entries (${#PLUGINS[@]} Slurm plugins, ${#PLUGINS_SKIPPED[@]} left out)"

# ------------------------------------------------------------------ pack
# Uncompressed on purpose: gunzip inside a TCG guest costs more than reading
# ~20 MB more from the host page cache.  Each archive is padded to a multiple
# of 4 bytes, so they can be concatenated (the kernel only accepts a newc
# member at a 4-byte aligned offset; NUL padding between members is skipped).
pad4() { local n; n=$(stat -c %s "$1"); head -c $(( (4 - n % 4) % 4 )) /dev/zero >>"$1"; }
say "packing cpio archives"
(cd "$TREE_BASE" && find . -mindepth 1 | LC_ALL=C sort | "$BB" cpio -o -H newc -R 0:0 2>/dev/null) \
    >"$OUT/initramfs-base.cpio.new"
pad4 "$OUT/initramfs-base.cpio.new"
(cd "$TREE_FULL" && printf '%s\n' "${OVERLAY[@]}" | "$BB" cpio -o -H newc -R 0:0 2>/dev/null) \
    >"$OUT/initramfs-rdma.cpio.new"
pad4 "$OUT/initramfs-rdma.cpio.new"
(cd "$TREE_CLUSTER" && printf '%s\n' "${OVERLAY_CLUSTER[@]}" | "$BB" cpio -o -H newc -R 0:0 2>/dev/null) \
    >"$OUT/initramfs-cluster.cpio.new"
pad4 "$OUT/initramfs-cluster.cpio.new"
cp "$VMLINUZ" "$OUT/vmlinuz.new"
rm -f "$OUT/initramfs.cpio" "$OUT/manifest.txt"
if [ -s "$VMLINUX" ]; then cp "$VMLINUX" "$OUT/vmlinux.new" && mv "$OUT/vmlinux.new" "$OUT/vmlinux"; else rm -f "$OUT/vmlinux"; fi
cp "$BB" "$OUT/busybox"   # run-in-vm.sh uses it for cpio (host may lack cpio)
mv "$OUT/vmlinuz.new" "$OUT/vmlinuz"
mv "$OUT/initramfs-base.cpio.new" "$OUT/initramfs-base.cpio"
mv "$OUT/initramfs-rdma.cpio.new" "$OUT/initramfs-rdma.cpio"
mv "$OUT/initramfs-cluster.cpio.new" "$OUT/initramfs-cluster.cpio"
mv "$OUT/manifest-bare.txt.new" "$OUT/manifest-bare.txt"
mv "$OUT/manifest-full.txt.new" "$OUT/manifest-full.txt"
echo "$KVER" >"$OUT/kernel-version"
echo "$INPUT_HASH" >"$OUT/.stamp"
say "done: $OUT (base $(du -h "$OUT/initramfs-base.cpio" | cut -f1), rdma overlay $(du -h "$OUT/initramfs-rdma.cpio" | cut -f1), cluster overlay $(du -h "$OUT/initramfs-cluster.cpio" | cut -f1), kernel $KVER) in $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N)-$T_START}")s"
echo "$OUT"
