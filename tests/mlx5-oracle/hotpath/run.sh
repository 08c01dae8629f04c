#!/bin/sh
# mlx5 hot-path microbenchmark: rdma-core 44's libmlx5 (through the oracle's fake-kernel shim in
# plain-UAR mode) against our provider (providers/examples/mlx5_hotpath.rs), the same two loops
# (bw: perftest's BW loop, 1 in 100 signaled; lat: every WR signaled and polled right after).
# Rows bw_wr / lat_wr: the same loops with libmlx5 posting through the extended QP API (ibv_qp_ex:
# ibv_wr_start / ibv_wr_rdma_write / ibv_wr_set_sge / ibv_wr_complete, C perftest 6.x's default on
# mlx5) against ours' only post path (its bw / lat loop: the same work, checked the same way).
# Prints one markdown table: instructions per operation (valgrind callgrind, the loop function
# only) and ns per operation (best of RUNS plain runs). A benchmark: nothing asserts a speed.
# Usage: run.sh [N_PLAIN [N_CALLGRIND [RUNS]]]   (defaults 2000000 200000 5)
# Needs no RDMA hardware or kernel support. Dev tool only: not run by CI.
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
N=${1:-2000000}; NCG=${2:-200000}; RUNS=${3:-5}
if ! [ -f /usr/include/infiniband/mlx5dv.h ] || ! [ -e /usr/lib/x86_64-linux-gnu/libmlx5.so ] || ! command -v gcc >/dev/null \
   || ! command -v valgrind >/dev/null; then
  apt-get install -y libibverbs-dev ibverbs-providers gcc valgrind
fi
B=/tmp/mlx5-hotpath-build; mkdir -p $B
SRC=$HERE/../crypto/src
gcc -O2 -g -Wall -fPIC -shared -o $B/libmlx5hotpath_shim.so "$SRC/shim.c" "$SRC/devx.c" -ldl
gcc -O2 -g -Wall -o $B/mlx5hotpath "$HERE/src/hotpath.c" -I"$SRC" -L$B -lmlx5hotpath_shim -libverbs -lmlx5
SYS=$("$SRC/mkfakesys.sh" /tmp/mlx5-hotpath-sys)
(cd "$ROOT" && cargo build --release -p providers --example mlx5_hotpath)
OURS=${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/mlx5_hotpath

c_run() { SHIM_PLAIN_UAR=1 SHIM_LOG=$B/shim.log SYSFS_PATH=$SYS LD_LIBRARY_PATH=$B LD_PRELOAD=$B/libmlx5hotpath_shim.so "$@"; }
CBIN=$B/mlx5hotpath
. "$ROOT/tests/support/oracle/hotpath_lib.sh" # field, best, ir

ROWS=""
for CASE in bw lat bw_wr lat_wr; do
  RCASE=${CASE%_wr} # ours has one post API: its bw / lat loop for the *_wr rows
  echo "== $CASE: plain runs (N=$N, best of $RUNS; ours: $RCASE)" >&2
  cns=$(best c_ $CASE); rns=$(best r_ $RCASE)
  # the two loops must have done the same work
  for f in iters completions sq_pi last_wr_id; do
    a=$(field $f < $B/last_c__$CASE); r=$(field $f < $B/last_r__$RCASE)
    if [ "$a" != "$r" ]; then echo "MISMATCH $CASE $f: libmlx5 $a, ours $r" >&2; exit 1; fi
  done
  echo "== $CASE: callgrind (N=$NCG)" >&2
  cir=$(ir c_ $CASE); rir=$(ir r_ $RCASE)
  ROWS="$ROWS| $CASE | $cir | $rir | $(awk -v a="$rir" -v b="$cir" 'BEGIN { printf "%.2f", a / b }') | $cns | $rns | $(awk -v a="$rns" -v b="$cns" 'BEGIN { printf "%.2f", a / b }') |
"
done
echo "same work checked: iters, completions polled, final SQ producer counter (dbrec), last wr_id match" >&2
echo "callgrind outputs: $B/cg_*.out (callgrind_annotate them; for ours' line numbers build with --profile profiling)" >&2
echo
echo "| case | libmlx5 Ir/op | ours Ir/op | ratio | libmlx5 ns/op | ours ns/op | ratio |"
echo "|---|---|---|---|---|---|---|"
printf "%s" "$ROWS"
