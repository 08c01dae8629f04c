#!/bin/sh
# rxe hot-path microbenchmark: rdma-core 44's librxe (libibverbs + librxe against the fake rxe
# kernel of src/shim.c, LD_PRELOAD) against our provider (providers/examples/rxe_hotpath_cmp.rs),
# the same two loops (bw: perftest's BW loop, 1 in 100 signaled; lat: every WR signaled and
# polled right after), the harness playing the kernel on both sides.
# Prints one markdown table: instructions per operation (valgrind callgrind, the loop function
# only) and ns per operation (best of RUNS plain runs). A benchmark: nothing asserts a speed.
# Usage: run.sh [N_PLAIN [N_CALLGRIND [RUNS]]]   (defaults 2000000 200000 5)
# Needs no RDMA hardware or kernel support. Dev tool only: not run by CI.
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
N=${1:-2000000}; NCG=${2:-200000}; RUNS=${3:-5}
if ! [ -f /usr/include/infiniband/verbs.h ] || ! [ -f /usr/include/rdma/rdma_user_rxe.h ] \
   || ! [ -e /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so ] || ! command -v gcc >/dev/null \
   || ! command -v valgrind >/dev/null; then
  apt-get install -y libibverbs-dev ibverbs-providers gcc valgrind
fi
B=/tmp/rxe-hotpath-build; mkdir -p $B
SRC=$HERE/src
gcc -O2 -g -Wall -fPIC -shared -o $B/librxehotpath_shim.so "$SRC/shim.c" -ldl
gcc -O2 -g -Wall -o $B/rxehotpath "$SRC/hotpath.c" -I"$SRC" -L$B -lrxehotpath_shim -libverbs
SYS=$("$SRC/mkfakesys.sh" /tmp/rxe-hotpath-sys)
(cd "$ROOT" && cargo build --release -p providers --example rxe_hotpath_cmp)
OURS=${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/rxe_hotpath_cmp

c_run() { SHIM_LOG=$B/shim.log SYSFS_PATH=$SYS LD_LIBRARY_PATH=$B LD_PRELOAD=$B/librxehotpath_shim.so "$@"; }
CBIN=$B/rxehotpath
. "$ROOT/tests/support/oracle/hotpath_lib.sh" # field, best, ir

ROWS=""
for CASE in bw lat; do
  echo "== $CASE: plain runs (N=$N, best of $RUNS)" >&2
  cns=$(best c_ $CASE); rns=$(best r_ $CASE)
  # the two loops must have done the same work, over rings of the same geometry
  for f in iters completions sq_pi last_wr_id wqe_hash sq_slots sq_elem cq_slots cq_elem qpn; do
    a=$(field $f < $B/last_c__$CASE); r=$(field $f < $B/last_r__$CASE)
    if [ "$a" != "$r" ]; then echo "MISMATCH $CASE $f: librxe $a, ours $r" >&2; exit 1; fi
  done
  echo "== $CASE: callgrind (N=$NCG)" >&2
  cir=$(ir c_ $CASE); rir=$(ir r_ $CASE)
  for f in iters completions sq_pi last_wr_id wqe_hash; do
    a=$(field $f < $B/cg_c__$CASE.txt); r=$(field $f < $B/cg_r__$CASE.txt)
    if [ "$a" != "$r" ]; then echo "MISMATCH $CASE (callgrind run) $f: librxe $a, ours $r" >&2; exit 1; fi
  done
  ROWS="$ROWS| $CASE | $cir | $rir | $(awk -v a="$rir" -v b="$cir" 'BEGIN { printf "%.2f", a / b }') | $cns | $rns | $(awk -v a="$rns" -v b="$cns" 'BEGIN { printf "%.2f", a / b }') |
"
done
echo "same work checked: iters, completions polled, final SQ producer index, last wr_id, last WQE bytes (but ssn and the SGE address), ring geometry, qpn" >&2
echo "callgrind outputs: $B/cg_*.out (callgrind_annotate them; for ours' line numbers build with --profile profiling)" >&2
echo
echo "| case | librxe Ir/op | ours Ir/op | ratio | librxe ns/op | ours ns/op | ratio |"
echo "|---|---|---|---|---|---|---|"
printf "%s" "$ROWS"
