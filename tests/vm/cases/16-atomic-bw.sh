#!/bin/bash
# ib_atomic_bw: ours<->ours, ours -> C server, C client -> ours (exit 0 on both sides, a sane result
# line), and once without -x (the automatic GID choice must agree with C's).
# mode: any
# timeout: 240
. "$VMTEST_LIB"
pair_all ib_atomic_bw "-n 200"
