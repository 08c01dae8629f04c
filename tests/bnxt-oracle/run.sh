#!/bin/sh
# bnxt_re oracle: build the fake-kernel shim + harness in /tmp, run Debian's libbnxt_re (rdma-core 44)
# through every case, and write the golden files into OUT (default: providers/tests/fixtures/bnxt_re/).
# Usage: run.sh [OUT]. Needs no RDMA hardware or kernel support; about 5 s. The product never links
# these packages. BNXT_ORACLE_BUILD: where to build (default /tmp/bnxt-oracle-build).
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${1:-$ROOT/providers/tests/fixtures/bnxt_re}; mkdir -p "$OUT"
if ! [ -e /usr/lib/x86_64-linux-gnu/libibverbs/libbnxt_re-rdmav34.so ] || ! [ -f /usr/include/infiniband/verbs.h ] || ! command -v gcc >/dev/null; then
  apt-get install -y libibverbs-dev ibverbs-providers gcc
fi
dpkg-query -W -f='${Package} ${Version}\n' libibverbs1 ibverbs-providers libibverbs-dev > "$OUT/oracle_versions.txt" 2>/dev/null || true
B=${BNXT_ORACLE_BUILD:-/tmp/bnxt-oracle-build}; mkdir -p "$B"
gcc -O1 -g -Wall -fPIC -shared -o "$B/libbnxtoracle_shim.so" "$HERE/src/shim.c" -ldl
gcc -O1 -g -Wall -o "$B/bnxtoracle" "$HERE/src/harness.c" -I"$HERE/src" -L"$B" -lbnxtoracle_shim -libverbs
SYS=$("$HERE/src/mkfakesys.sh" "$B/sys")
# static: a Whitney+ chip (BCM57414) with no WQE mode in the answer: 128-byte WQEs, 8-byte PSN entries.
# variable: a Thor chip (BCM57508) that says variable WQEs: WQEs of their own size, 16-byte PSN entries.
for V in static variable; do
  case $V in static) CHIP=0x16d7; MODE=;; variable) CHIP=0x1750; MODE=variable;; esac
  env SHIM_CHIP=$CHIP ${MODE:+SHIM_MODE=$MODE} SHIM_LOG="$B/shim_log_$V.txt" SYSFS_PATH=$SYS \
    LD_LIBRARY_PATH="$B" LD_PRELOAD="$B/libbnxtoracle_shim.so" "$B/bnxtoracle" "$OUT/$V.jsonl" "$V"
done
echo "bnxt oracle: wrote $OUT/static.jsonl $OUT/variable.jsonl"
# BNXT_ORACLE_SEEDS="1 2 ...": also a random run (600 steps of posts, completions, polls, arms) per
# seed and mode, random-SEED-static.jsonl and random-SEED-variable.jsonl (the differential test).
for SEED in ${BNXT_ORACLE_SEEDS:-}; do
  for V in static variable; do
    case $V in static) CHIP=0x16d7; MODE=;; variable) CHIP=0x1750; MODE=variable;; esac
    env SHIM_CHIP=$CHIP ${MODE:+SHIM_MODE=$MODE} BNXT_ORACLE_SEED=$SEED SHIM_LOG="$B/shim_log_random.txt" SYSFS_PATH=$SYS \
      LD_LIBRARY_PATH="$B" LD_PRELOAD="$B/libbnxtoracle_shim.so" "$B/bnxtoracle" "$OUT/random-$SEED-$V.jsonl" "random-$SEED-$V"
  done
done
