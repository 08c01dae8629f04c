#!/bin/sh
# dma-buf MR oracle: what rdma-core's ibv_reg_dmabuf_mr sends to the kernel, captured through the
# crypto oracle's fake mlx5 kernel (LD_PRELOAD of /dev/infiniband/uverbs0; this directory's
# answer.c takes the place of its devx.c). Writes OUT (default:
# uverbs/tests/fixtures/reg_dmabuf_mr.hex) and the library versions beside it.
# Dev tool only, not run by CI; the product never links these packages.
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CRYPTO=$ROOT/tests/mlx5-oracle/crypto/src
OUT=${1:-$ROOT/uverbs/tests/fixtures/reg_dmabuf_mr.hex}
if ! [ -f /usr/include/infiniband/verbs.h ] || ! [ -e /usr/lib/x86_64-linux-gnu/libmlx5.so.1 ] || ! command -v gcc >/dev/null; then
  apt-get install -y libibverbs-dev ibverbs-providers gcc
fi
B=/tmp/dmabuf-oracle-build; mkdir -p $B
gcc -O1 -g -Wall -fPIC -shared -I"$CRYPTO" -o $B/libdmabuforacle_shim.so "$CRYPTO/shim.c" "$HERE/src/answer.c" -ldl
gcc -O1 -g -Wall -o $B/dmabuforacle "$HERE/src/harness.c" -libverbs
SYS=$("$CRYPTO/mkfakesys.sh" /tmp/dmabuf-oracle-sys)
DMABUF_CAPTURE="$OUT" SHIM_LOG=$B/shim.log SYSFS_PATH=$SYS LD_PRELOAD=$B/libdmabuforacle_shim.so $B/dmabuforacle
dpkg-query -W -f='${Package} ${Version}\n' libibverbs1 ibverbs-providers > "${OUT%.hex}.versions.txt" 2>/dev/null || true
echo "captured: $OUT"
