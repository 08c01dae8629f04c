#!/bin/sh
# mlx5 AES-XTS crypto oracle: build the fake-kernel shim + harness in /tmp, run Debian's libmlx5
# (rdma-core 44) through perftest 6.06's --aes_xts sequence, and write the golden files into OUT
# (default: providers/tests/fixtures/mlx5/crypto/ of this repository).
# Usage: run.sh [OUT]. Needs no RDMA hardware or kernel support. Dev tool only: not run by CI,
# and the product never links these packages.
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
OUT=${1:-$ROOT/providers/tests/fixtures/mlx5/crypto}; mkdir -p "$OUT"
if ! [ -f /usr/include/infiniband/mlx5dv.h ] || ! [ -e /usr/lib/x86_64-linux-gnu/libmlx5.so ] || ! command -v gcc >/dev/null; then
  apt-get install -y libibverbs-dev ibverbs-providers gcc
fi
dpkg-query -W -f='${Package} ${Version}\n' libibverbs1 ibverbs-providers libibverbs-dev > "$OUT/oracle_versions.txt" 2>/dev/null || true
B=/tmp/mlx5-crypto-oracle-build; mkdir -p $B
gcc -O1 -g -Wall -fPIC -shared -o $B/libmlx5cryptooracle_shim.so "$HERE/src/shim.c" "$HERE/src/devx.c" -ldl
gcc -O1 -g -Wall -o $B/mlx5cryptooracle "$HERE/src/harness.c" -I"$HERE/src" -L$B -lmlx5cryptooracle_shim -libverbs -lmlx5
SYS=$("$HERE/src/mkfakesys.sh" /tmp/mlx5-crypto-oracle-sys)
# multi_block: the device reports aes_xts_multi_block_be_tweak (the default and the interesting case);
# single_block: only aes_xts_single_block_le_tweak (tweak kept little-endian, length <= one data unit).
# multi_block_shut_up_bf: multi_block with MLX5_SHUT_UP_BF=1 (UARs mapped non-cached, 8-byte doorbells only).
for V in multi_block single_block multi_block_shut_up_bf; do
  case $V in single*) E=single;; *) E=multi;; esac
  case $V in *shut_up_bf) export MLX5_SHUT_UP_BF=1;; *) unset MLX5_SHUT_UP_BF;; esac
  SHIM_CRYPTO_ENGINES=$E SHIM_LOG="$OUT/shim_log_$V.txt" SHIM_DEVX_LOG="$OUT/devx_$V.jsonl" SYSFS_PATH=$SYS \
    LD_LIBRARY_PATH=$B LD_PRELOAD=$B/libmlx5cryptooracle_shim.so $B/mlx5cryptooracle "$OUT" "$V"
done
python3 "$HERE/src/check.py" "$OUT"
