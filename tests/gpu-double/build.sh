#!/bin/sh
# Build the CUDA test double (NOT A GPU: see libcuda.c) as OUT/libcuda.so.1, default
# target/gpu-double/. Prints the directory to put on LD_LIBRARY_PATH.
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-$HERE/../../target/gpu-double}
mkdir -p "$OUT"
${CC:-cc} -O2 -Wall -Wextra -fPIC -shared -Wl,-soname,libcuda.so.1 -o "$OUT/libcuda.so.1" "$HERE/libcuda.c"
cd "$OUT" && pwd
