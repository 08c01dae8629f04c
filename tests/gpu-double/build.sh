#!/bin/sh
# Build the GPU runtime test doubles (NOT A GPU: see libcuda.c, libhsa.c) as OUT/libcuda.so.1 and
# OUT/libhsa-runtime64.so.1, default target/gpu-double/. Prints the directory to put on
# LD_LIBRARY_PATH.
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-$HERE/../../target/gpu-double}
mkdir -p "$OUT"
CFLAGS="-O2 -Wall -Wextra -fPIC -shared -I$HERE"
${CC:-cc} $CFLAGS -Wl,-soname,libcuda.so.1 -o "$OUT/libcuda.so.1" "$HERE/libcuda.c" -pthread
${CC:-cc} $CFLAGS -Wl,-soname,libhsa-runtime64.so.1 -o "$OUT/libhsa-runtime64.so.1" "$HERE/libhsa.c"
cd "$OUT" && pwd
