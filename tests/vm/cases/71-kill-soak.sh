#!/bin/bash
# Kill-anything soak, short form: 12 runs of the eight tools (TCP and -R),
# SIGKILL or SIGINT to the client or the server at a random moment, every
# 10th run clean (guest/kill-soak.sh: the survivor ends within its bound
# with an error line, no panic, no hang, object counts back, clean runs
# pass on the same port).  The seed is in the output for a replay; the long
# form is tests/vm/kill-soak.sh RUNS [SEED].
# mode: bare
# timeout: 480
. "$VMTEST_LIB"
bash "$(dirname "$VMTEST_LIB")/kill-soak.bash" "${VMTEST_SOAK_RUNS:-12}" ${VMTEST_SOAK_SEED:-} || fail "soak failed"
