#!/bin/sh
# The GPU flavour for the VM case tests/vm/cases/35-gpu-double.sh: a glibc debug build of
# rperftest with --features gpu, copied as OUT/rperftest-gpu, beside the CUDA and HSA test
# doubles (NOT A GPU) as OUT/libcuda.so.1 and OUT/libhsa-runtime64.so.1. OUT defaults to
# target/gpu-flavour; prints OUT.
# A debug build suffices (the case checks plumbing, not speed) and reuses target/debug.
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${1:-$ROOT/target/gpu-flavour}
mkdir -p "$OUT"
cd "$ROOT"
cargo build -p rperftest --features gpu >&2
TD=${CARGO_TARGET_DIR:-$ROOT/target}
cp "$TD/debug/rperftest" "$OUT/rperftest-gpu"
"$HERE/build.sh" "$OUT" >/dev/null
echo "$OUT"
