#!/bin/bash
# Long burn-in flatness check in one VM: guest/burnin-flat.sh SECONDS
# INTERVAL TOOL with the rperftest binary BIN.
#   tests/vm/burnin-flat.sh [SECONDS (600)] [INTERVAL (30)] [TOOL (ib_write_bw)] [BIN]
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SECS=${1:-600}; IVL=${2:-30}; TOOL=${3:-ib_write_bw}; BIN=${4:-$("$HERE/build-static.sh")}
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
mkdir -p "$W/bin"; cp -L "$BIN" "$W/bin/rperftest"; cp "$HERE/guest/burnin-flat.sh" "$W/burnin-flat.sh"
"$HERE/build-image.sh" >/dev/null || exit 1
exec "$HERE/run-in-vm.sh" -q --timeout $((SECS + 300)) "$W/bin" "$W/burnin-flat.sh" -- \
    bash -c "export PATH=/mnt/host/bin:\$PATH; bash /mnt/host/burnin-flat.sh $SECS $IVL $TOOL"
