#!/bin/bash
# Long kill-anything soak in one VM: guest/kill-soak.sh RUNS [SEED] with the
# rperftest binary BIN (default: tests/vm/build-static.sh's output).
#   tests/vm/kill-soak.sh [RUNS (300)] [SEED] [BIN]
# Prints every run's line and the SOAK summary; exit 0 iff no run failed.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RUNS=${1:-300}; SEED=${2:-}; BIN=${3:-$("$HERE/build-static.sh")}
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
mkdir -p "$W/bin"; cp -L "$BIN" "$W/bin/rperftest"; cp "$HERE/guest/kill-soak.sh" "$W/kill-soak.sh"
"$HERE/build-image.sh" >/dev/null || exit 1
exec "$HERE/run-in-vm.sh" -q --timeout $((300 + RUNS * 20)) "$W/bin" "$W/kill-soak.sh" -- \
    bash -c "export PATH=/mnt/host/bin:\$PATH; bash /mnt/host/kill-soak.sh $RUNS $SEED"
