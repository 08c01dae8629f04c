#!/bin/bash
# Run the VM case suite: ONE VM boot, every tests/vm/cases/*.sh inside it.
#
#   run-suite.sh [--mode full|bare] [--filter REGEX] [-v] BIN_DIR
#
# BIN_DIR: a directory whose top-level executable files (symlinks followed)
# are copied to /mnt/host/bin in the guest, which is first on the cases'
# PATH (typically a dir holding just `rperftest`).  A single file works too.
# Cases are bash scripts; they get RXE_DEV RXE_NETDEV RXE_IP RXE_GID_IDX
# RXE_VM_MODE VMTEST_LIB VMTEST_TMP (cwd) VMTEST_CASE, and source
# "$VMTEST_LIB" (tests/vm/cases/lib.sh).  Headers: see guest/suite-runner.sh
# (# timeout: SECS, # mode: full|bare|any, # xfail: REASON).  A selected case
# with "# overlay: cluster" boots the suite's VM with the cluster overlay
# (OpenSSH, munge, Slurm; nothing is started) for every case.
#
#   --mode M        image mode (default full)            [RXE_VM_MODE]
#   --filter REGEX  only cases whose name (file name without .sh) matches
#                   the extended regex
#   -v              print every case's output, not only failures
#   --cases DIR     case dir (default tests/vm/cases)
#   --kernel-suite S  boot the image whose kernel comes from Debian suite S
#                   (build-image.sh with RXE_VM_KERNEL_SUITE=S) and run only
#                   the cases with a "# kernel: S" header; without it, only
#                   the cases with no such header run
#
# Output (stdout): one line per case
#   VMTEST <name> ok|FAILED|skipped|xfail <seconds> [rc=N] [(note)]
# with the case's output (prefixed "    | ") on failure, then one summary line
#   VMSUITE mode=M passed=N failed=N skipped=N xfail=N boot=S cases=S total=S
# Cases the VM never reported (crash, VM timeout) are printed as FAILED.
# Exit status: 0 if no case failed and the VM finished; 1 if a case failed;
# 2 usage; otherwise run-in-vm.sh's code (124 VM timeout, 125 VM broke,
# 120-123 guest setup failed).
# Other run-in-vm.sh settings come from its env vars (RXE_VM_NET=virtio,
# RXE_VM_MEM, RXE_VM_TIMEOUT (default: sum of case timeouts + 180 s), ...).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MODE=${RXE_VM_MODE:-full}
FILTER=""
VERBOSE=0
CASES=$HERE/cases
DEF_TIMEOUT=300
BIN=""
KSUITE=""
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --mode) MODE=$2; shift 2 ;;
        --filter) FILTER=$2; shift 2 ;;
        --cases) CASES=$2; shift 2 ;;
        --kernel-suite) KSUITE=$2; shift 2 ;;
        -v) VERBOSE=1; shift ;;
        -h|--help) usage ;;
        -*) echo "run-suite: unknown option $1" >&2; usage ;;
        *) [ -z "$BIN" ] || usage; BIN=$1; shift ;;
    esac
done
[ -n "$BIN" ] || usage
[ -e "$BIN" ] || { echo "run-suite: no such BIN_DIR: $BIN" >&2; exit 2; }
case "$MODE" in full|bare) ;; *) echo "run-suite: bad --mode $MODE" >&2; exit 2 ;; esac
say() { echo "[run-suite] $*" >&2; }

T0=$(date +%s.%N)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/rxe-vm-suite.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# ------------------------------------------------------------ ship files
mkdir -p "$WORK/bin" "$WORK/suite/cases"
if [ -d "$BIN" ]; then
    while IFS= read -r f; do
        cp -L "$f" "$WORK/bin/"
    done < <(find -L "$BIN" -maxdepth 1 -type f -perm -u+x | LC_ALL=C sort)
else
    cp -L "$BIN" "$WORK/bin/"
fi
cp "$HERE/guest/suite-runner.sh" "$WORK/suite/runner.sh"
cp "$CASES/lib.sh" "$WORK/suite/cases/lib.sh"
cp "$HERE/guest/tcp-listening.bash" "$WORK/suite/cases/tcp-listening.bash"
cp "$HERE/guest/kill-soak.sh" "$WORK/suite/cases/kill-soak.bash"     # for 71-kill-soak
cp "$HERE/guest/burnin-flat.sh" "$WORK/suite/cases/burnin-flat.bash" # for 72-burnin-flat
cp "$HERE/../hw/first-contact.sh" "$WORK/suite/cases/first-contact.bash" # for 63-first-contact
cp "$HERE/../hw/first-contact-lib.bash" "$WORK/suite/cases/first-contact-lib.bash"
cp "$HERE/netns-cluster.sh" "$WORK/suite/cases/netns-cluster.bash"  # for 66-netns-bed
OVERLAY_ARGS=()
NAMES=()
VM_TIMEOUT=180
for c in "$CASES"/*.sh; do
    name=${c##*/}; name=${name%.sh}
    [ "$name" = lib ] && continue
    if [ -n "$FILTER" ] && ! [[ $name =~ $FILTER ]]; then continue; fi
    k=$(sed -n '1,40s/^# kernel:[[:space:]]*\([^[:space:]]*\).*/\1/p' "$c" | head -1)
    [ "$k" = "$KSUITE" ] || continue
    cp "$c" "$WORK/suite/cases/"
    NAMES+=("$name")
    t=$(sed -n '1,40s/^# timeout:[[:space:]]*\([0-9]\+\).*/\1/p' "$c" | head -1)
    VM_TIMEOUT=$((VM_TIMEOUT + ${t:-$DEF_TIMEOUT}))
    if sed -n '1,40p' "$c" | grep -q '^# overlay:[[:space:]]*cluster'; then OVERLAY_ARGS=(--overlay cluster); fi
done
if [ ${#NAMES[@]} = 0 ]; then
    say "no cases selected (filter '${FILTER}')"
    echo "VMSUITE mode=$MODE${KSUITE:+ kernel=$KSUITE} passed=0 failed=0 skipped=0 xfail=0 boot=- cases=- total=0.0"
    exit 0
fi
say "mode=$MODE cases=${#NAMES[@]} bins=$(ls "$WORK/bin" | tr '\n' ' ')"

IMAGE_ARGS=()
if [ -n "$KSUITE" ]; then
    img=$(RXE_VM_KERNEL_SUITE=$KSUITE "$HERE/build-image.sh") || { say "no image with the $KSUITE kernel"; exit 125; }
    IMAGE_ARGS=(--image "$img")
fi

# ------------------------------------------------------------ run
"$HERE/run-in-vm.sh" -q --mode "$MODE" "${IMAGE_ARGS[@]}" "${OVERLAY_ARGS[@]}" --timeout "${RXE_VM_TIMEOUT:-$VM_TIMEOUT}" \
    --timing-file "$WORK/timing" \
    -e "VMTEST_VERBOSE=$VERBOSE" -e "VMTEST_DEFAULT_TIMEOUT=$DEF_TIMEOUT" \
    "$WORK/bin" "$WORK/suite" -- bash /mnt/host/suite/runner.sh | tee "$WORK/out"
RC=${PIPESTATUS[0]}

# ------------------------------------------------------------ verdict
declare -A SEEN
passed=0 failed=0 skipped=0 xfail=0
while read -r tag name status rest; do
    [ "$tag" = VMTEST ] || continue
    SEEN[$name]=1
    case "$status" in
        ok) passed=$((passed + 1)) ;;
        skipped) skipped=$((skipped + 1)) ;;
        xfail) xfail=$((xfail + 1)) ;;
        *) failed=$((failed + 1)) ;;
    esac
done <"$WORK/out"
for n in "${NAMES[@]}"; do
    if [ -z "${SEEN[$n]:-}" ]; then
        echo "VMTEST $n FAILED 0.0 rc=$RC (not run: the VM ended first, run-in-vm rc=$RC)"
        failed=$((failed + 1))
    fi
done
boot=- cmd=-
if [ -f "$WORK/timing" ]; then
    read -r b c _ <"$WORK/timing"; boot=${b#boot=}; cmd=${c#cmd=}
fi
grep -q '^VMTEST-DONE' "$WORK/out" || { [ "$RC" = 0 ] && RC=125; say "the guest runner did not finish (rc=$RC)"; }
echo "VMSUITE mode=$MODE${KSUITE:+ kernel=$KSUITE} passed=$passed failed=$failed skipped=$skipped xfail=$xfail boot=$boot cases=$cmd total=$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N)-$T0}")"
[ "$RC" != 0 ] && exit "$RC"
[ "$failed" = 0 ] || exit 1
exit 0
