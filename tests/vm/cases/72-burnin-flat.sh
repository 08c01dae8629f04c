#!/bin/bash
# A --run_infinitely ib_write_bw burn-in stays flat: for 30 s, sampled every
# 10 s, the RDMA object counts do not change and neither side's RSS grows by
# more than 512 KiB; both stop on SIGINT.  (The 10-minute form, sampled
# every 30 s: tests/vm/burnin-flat.sh 600 30.)
# mode: bare
# timeout: 180
. "$VMTEST_LIB"
bash "$(dirname "$VMTEST_LIB")/burnin-flat.bash" 30 10 ib_write_bw || fail "burn-in not flat"
