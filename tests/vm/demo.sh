#!/bin/bash
# From a fresh Debian 12 machine with no RDMA hardware to ib_write_bw on
# Soft-RoCE, in one command:
#   1. installs qemu-system-x86 with apt if it is missing (needs root or sudo)
#   2. builds the VM image (Debian kernel + rdma_rxe; cached, ~15 s cold)
#   3. builds the static rperftest (tests/vm/build-static.sh)
#   4. boots the VM (full mode) and runs an ib_write_bw server in the
#      background and the client against $RXE_IP on rxe0, then prints
#      both result tables.
#   5. as root (network namespace, bridge and taps), boots a 4-VM cluster
#      (tests/vm/cluster.sh: node2 and node4 without rdma-core) and runs
#      `rperftest matrix` over ssh from node1: every pair and its text
#      matrix.  Before it takes the cluster down it copies the matrix's
#      report.html (a heatmap per test), results.jsonl, results.csv and the
#      text report (matrix.txt) to a folder on this host, and its last line
#      names that folder and the headless-Chromium command that renders
#      report.html to report.png.
#
#   tests/vm/demo.sh [--no-cluster] [--out DIR] [--render]
#
#   --no-cluster  stop after step 4
#   --out DIR     the host folder for the matrix's files (default
#                 $RPERFTEST_DEMO_OUT, else demo-out/ in the repository,
#                 which git ignores)
#   --render      also run that command (installs Debian's chromium with apt
#                 if it is missing, about 120 MB)
# Needs a Rust toolchain (rustup) for step 3.
set -euo pipefail
CALLER_PWD=$PWD
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
say() { echo "[demo] $*" >&2; }
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
CLUSTER=1
RENDER=0
OUT=${RPERFTEST_DEMO_OUT:-$ROOT/demo-out}
while [ $# -gt 0 ]; do
    case "$1" in
        --no-cluster) CLUSTER=0 ;;
        --render) RENDER=1 ;;
        --out) [ $# -ge 2 ] || { say "--out needs a folder"; exit 2; }; OUT=$2; shift ;;
        *) say "unknown argument: $1 (try --no-cluster, --out DIR, --render)"; exit 2 ;;
    esac
    shift
done
case "$OUT" in /*) ;; *) OUT=$CALLER_PWD/$OUT ;; esac

if ! command -v qemu-system-x86_64 >/dev/null 2>&1; then
    say "installing qemu-system-x86 (apt)"
    $SUDO apt-get update -q
    $SUDO apt-get install -y -q --no-install-recommends qemu-system-x86
elif ! [[ $(apt-cache policy linux-image-amd64 2>/dev/null) == *"Candidate: "[0-9]* ]]; then
    say "apt lists are empty: apt-get update"
    $SUDO apt-get update -q
fi
command -v cargo >/dev/null 2>&1 || {
    say "cargo not found: install Rust first (https://rustup.rs), then rerun"; exit 1; }

say "building the VM image"
tests/vm/build-image.sh >/dev/null
say "building the static rperftest"
BIN=$(tests/vm/build-static.sh)

W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
cp tests/vm/cases/lib.sh "$W/lib.sh"
cp tests/vm/guest/tcp-listening.bash "$W/tcp-listening.bash"
cat >"$W/demo-guest.sh" <<'GUEST'
cd /tmp
. /mnt/host/lib.sh
export PATH=/mnt/host:$PATH
echo "rxe: $RXE_DEV on $RXE_NETDEV ($RXE_IP), RoCEv2 GID index $RXE_GID_IDX, kernel $(uname -r)"
TOOL=(rperftest ib_write_bw)
start_server "${TOOL[@]}" -d "$RXE_DEV" -x "$RXE_GID_IDX"
echo "--- client: ${TOOL[*]} -d $RXE_DEV -x $RXE_GID_IDX $RXE_IP"
"${TOOL[@]}" -d "$RXE_DEV" -x "$RXE_GID_IDX" "$RXE_IP"
rc=$?
wait_server 60
[ "$rc" = 0 ] && [ "$SERVER_RC" = 0 ]
GUEST
say "booting the VM: ib_write_bw server + client on rxe0"
tests/vm/run-in-vm.sh -q --mode full "$BIN" "$W/lib.sh" "$W/tcp-listening.bash" "$W/demo-guest.sh" -- bash /mnt/host/demo-guest.sh

[ "$CLUSTER" = 1 ] || exit 0
if [ "$(id -u)" != 0 ]; then
    say "skipping the cluster matrix: tests/vm/cluster.sh needs root (network namespace, bridge, taps)"
    exit 0
fi
for need in "ssh openssh-client" "ip iproute2" "tc iproute2"; do
    set -- $need
    command -v "$1" >/dev/null 2>&1 || { say "installing $2 (apt)"; apt-get install -y -q --no-install-recommends "$2"; }
done
CL=tests/vm/cluster.sh
export RPT_CLUSTER_DIR="$W/cluster"
say "booting a 4-node cluster (node2, node4 without rdma-core): rperftest matrix over ssh from node1"
trap '"$CL" down >/dev/null 2>&1 || true; rm -rf "$W"' EXIT
"$CL" up 4 --bare 2,4 --bin "$BIN"
mkdir -p "$OUT"
rm -f "$OUT"/{report.html,report.png,results.jsonl,results.csv,matrix.txt}
# --rel 0.25: TCG VMs differ 2-3x from one pair to the next (docs/testbed.md).
"$CL" exec node1 -- rperftest matrix --launcher ssh --preflight-timeout 120 --hosts 'node[1-4]' \
    --test write_bw,send_lat --devices rxe0 --rel 0.25 --rel-lat 10 --out /tmp/matrix -- -s 4096 -n 200 \
    | tee "$OUT/matrix.txt" || true
# node1's files to the host before the cluster goes down
got=(matrix.txt)
for f in report.html results.jsonl results.csv; do
    if "$CL" exec node1 -- cat "/tmp/matrix/$f" >"$OUT/$f" 2>/dev/null; then
        got+=("$f")
    else
        rm -f "$OUT/$f"; say "node1 has no /tmp/matrix/$f"
    fi
done
"$CL" down >&2
trap 'rm -rf "$W"' EXIT
[ -s "$OUT/report.html" ] || { say "no report.html from the matrix: see $OUT/matrix.txt"; exit 1; }

CHROME=chromium
command -v chromium >/dev/null 2>&1 || ! command -v chromium-browser >/dev/null 2>&1 || CHROME=chromium-browser
# the flags and page size of tests/plot-render.sh: --no-sandbox for root, no GPU in a server
RENDER_ARGS=(--headless=new --no-sandbox --disable-gpu --hide-scrollbars --window-size=1000,1200
             "--screenshot=$OUT/report.png" "file://$OUT/report.html")
if [ "$RENDER" = 1 ]; then
    if ! command -v "$CHROME" >/dev/null 2>&1; then
        say "installing chromium (apt, about 120 MB) for --render"
        $SUDO apt-get install -y -q chromium >/dev/null
    fi
    say "rendering report.html to report.png (headless chromium)"
    "$CHROME" "${RENDER_ARGS[@]}" >/dev/null 2>&1 && [ -s "$OUT/report.png" ] \
        || { say "chromium could not render $OUT/report.html"; exit 1; }
    got+=(report.png)
    echo "[demo] the matrix's files are in $OUT: ${got[*]}; open report.png (or report.html in a browser)"
else
    # the command as one pastable line: an argument is quoted only where the shell needs it
    cmd=$CHROME
    for a in "${RENDER_ARGS[@]}"; do
        [[ $a =~ ^[A-Za-z0-9_./:=,+@%-]+$ ]] && cmd+=" $a" || cmd+=" $(printf '%q' "$a")"
    done
    command -v "$CHROME" >/dev/null 2>&1 || cmd="apt-get install chromium && $cmd"
    echo "[demo] the matrix's files are in $OUT: ${got[*]}; render the heatmaps to report.png with: $cmd 2>/dev/null"
fi
