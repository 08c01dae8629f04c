#!/bin/sh
# EFA oracle: build the fake-kernel shim + harness in /tmp, run Debian's libefa (rdma-core 44)
# through them, and write the golden file into OUT (default: providers/tests/fixtures/efa/ of
# this repository). Usage: run.sh [OUT]. Needs no EFA hardware. CI runs it through
# providers/tests/efa_differential.rs; the product never links these packages.
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${1:-$ROOT/providers/tests/fixtures/efa}; mkdir -p "$OUT"
if ! [ -f /usr/include/infiniband/efadv.h ] || ! [ -e /usr/lib/x86_64-linux-gnu/libefa.so ] || ! command -v gcc >/dev/null; then
  apt-get install -y libibverbs-dev ibverbs-providers gcc
fi
dpkg-query -W -f='${Package} ${Version}\n' libibverbs1 ibverbs-providers libibverbs-dev > "$OUT/oracle_versions.txt" 2>/dev/null || true
# EFA_ORACLE_BUILD: where to build (default /tmp/efa-oracle-build).
B=${EFA_ORACLE_BUILD:-/tmp/efa-oracle-build}; mkdir -p "$B"
gcc -O1 -g -Wall -fPIC -shared -o "$B/libefaoracle_shim.so" "$HERE/src/shim.c" -ldl
gcc -O1 -g -Wall -o "$B/efaoracle" "$HERE/src/harness.c" -I"$HERE/src" -L"$B" -lefaoracle_shim -libverbs -lefa
SYS=$("$HERE/src/mkfakesys.sh" "$B/sys")
SHIM_SETUP="$OUT/setup.jsonl" SHIM_LOG="$B/shim.log" SYSFS_PATH=$SYS LD_LIBRARY_PATH="$B" LD_PRELOAD="$B/libefaoracle_shim.so" "$B/efaoracle" "$OUT/golden.jsonl"
# The differential run: a random sequence of requests and completions (seed and length fixed, so
# the file is reproducible).
SHIM_LOG="$B/shim-random.log" SYSFS_PATH=$SYS LD_LIBRARY_PATH="$B" LD_PRELOAD="$B/libefaoracle_shim.so" "$B/efaoracle" "$OUT/random.jsonl" 0x5eed 600
# The events run: a CQ with a completion channel on a device with CQ notifications (caps: RDMA
# read 1 | CQ notifications 4); its own set-up record.
SHIM_CAPS=5 SHIM_SETUP="$OUT/setup-events.jsonl" SHIM_LOG="$B/shim-events.log" SYSFS_PATH=$SYS LD_LIBRARY_PATH="$B" LD_PRELOAD="$B/libefaoracle_shim.so" "$B/efaoracle" "$OUT/events.jsonl" events
# EFA_ORACLE_SEEDS="1 2 ...": also a random run of 600 steps per seed, random-SEED.jsonl (the
# differential test, providers/tests/efa_differential.rs).
for SEED in ${EFA_ORACLE_SEEDS:-}; do
  SHIM_LOG="$B/shim-random.log" SYSFS_PATH=$SYS LD_LIBRARY_PATH="$B" LD_PRELOAD="$B/libefaoracle_shim.so" "$B/efaoracle" "$OUT/random-$SEED.jsonl" "$SEED" 600
done
echo "efa-oracle: $(wc -l < "$OUT/golden.jsonl") events in $OUT/golden.jsonl, $(wc -l < "$OUT/random.jsonl") in $OUT/random.jsonl, $(wc -l < "$OUT/setup.jsonl") in $OUT/setup.jsonl, $(wc -l < "$OUT/events.jsonl") in $OUT/events.jsonl"
