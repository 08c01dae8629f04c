#!/bin/bash
# From a fresh Debian 12 machine with no RDMA hardware to ib_write_bw on
# Soft-RoCE, in one command:
#   1. installs qemu-system-x86 with apt if it is missing (needs root or sudo)
#   2. builds the VM image (Debian kernel + rdma_rxe; cached, ~15 s cold)
#   3. builds the static rperftest (tests/vm/build-static.sh)
#   4. boots the VM (full mode) and runs an ib_write_bw server in the
#      background and the client against $RXE_IP on rxe0, then prints
#      both result tables.
# Needs a Rust toolchain (rustup) for step 3.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
say() { echo "[demo] $*" >&2; }
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive

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
