# Sourced by build-image.sh when RXE_VM_KERNEL_SUITE is set: take the kernel from
# another Debian suite (e.g. trixie-backports) without touching the host's apt
# configuration.  A private source list, lists dir and cache under $CACHE/apt-SUITE;
# apt checks the suite's signature with the host's debian-archive-keyring.
#
# kernel_from_suite SUITE: sets KPKG (the linux-image-X the suite's
# linux-image-amd64 depends on) and KDEBS (the .deb file names of that package and
# of the linux-binary-X / linux-modules-X packages Debian 13 splits it into),
# downloaded into $DEBS.  RXE_VM_OFFLINE=1 takes what an earlier run cached.

kernel_from_suite() {
    local suite=$1 dir=$CACHE/apt-$1 mirror=${RXE_VM_KERNEL_MIRROR:-http://deb.debian.org/debian}
    local -a o
    mkdir -p "$dir/lists/partial" "$dir/archives/partial"
    o=(-o "Dir::Etc::SourceList=$dir/sources.list" -o "Dir::Etc::SourceParts=/nonexistent"
       -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir" -o "APT::Get::List-Cleanup=0")
    if [ "${RXE_VM_OFFLINE:-0}" = 1 ] && [ -f "$dir/kdebs" ]; then
        KPKG=$(head -1 "$dir/kdebs"); mapfile -t KDEBS < <(tail -n +2 "$dir/kdebs")
        return 0
    fi
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main" >"$dir/sources.list"
    apt-get "${o[@]}" update -qq >"$dir/update.log" 2>&1 \
        || { cat "$dir/update.log" >&2; die "apt-get update for $suite failed"; }
    KPKG=$(apt-cache "${o[@]}" depends linux-image-amd64 2>/dev/null \
           | awk '/Depends: linux-image-[0-9]/ && !k {k=$2} END {print k}')
    [ -n "$KPKG" ] || die "$suite has no linux-image-amd64 -> linux-image-X"
    local kver=${KPKG#linux-image-} p uri fn size hash
    local -a pkgs=("$KPKG")
    for p in "linux-binary-$kver" "linux-modules-$kver"; do
        apt-cache "${o[@]}" show "$p" >/dev/null 2>&1 && pkgs+=("$p")
    done
    KDEBS=()
    local uris
    uris=$(cd "$EMPTY" && apt-get "${o[@]}" download --print-uris "${pkgs[@]}") \
        || die "apt-get download --print-uris ${pkgs[*]} ($suite) failed"
    while read -r uri fn size hash; do
        KDEBS+=("$fn")
        [ -f "$DEBS/$fn" ] && [ "$(stat -c %s "$DEBS/$fn")" = "$size" ] && continue
        say "downloading $fn ($suite, $((size / 1048576)) MiB)"
        (cd "$DEBS" && apt-get "${o[@]}" download "${fn%%_*}" >/dev/null 2>"$dir/download.err") \
            || { cat "$dir/download.err" >&2; die "apt-get download $fn failed"; }
    done <<<"$uris"
    printf '%s\n' "$KPKG" "${KDEBS[@]}" >"$dir/kdebs"
}
