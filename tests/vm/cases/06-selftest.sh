#!/bin/bash
# `rperftest selftest`: every verb between two QPs on rxe0 (RC/UC/UD, 1 B..1 MiB, inline at
# the QP maximum, gather/scatter, ring wraparound, SRQ, completion events, error statuses),
# every payload byte checked, over both verbs transports. Needs no rdma-core (any mode).
# mode: any
# timeout: 240
. "$VMTEST_LIB"

for t in write ioctl; do
    export RPERFTEST_VERBS_TRANSPORT=$t
    expect_rc 0 with_timeout 120 rperftest selftest -d "$RXE_DEV"
    expect_contains "selftest: "
    expect_contains " 0 failed"
    expect_not_contains "FAIL"
    for c in "RC RDMA_WRITE 1 MiB" "RC SEND 1 MiB" "RC RDMA_READ 1 MiB" "RC ATOMIC_CMP_AND_SWP" \
             "RC ATOMIC_FETCH_AND_ADD" "RC SEND inline at the QP maximum" \
             "RC RDMA_WRITE inline at the QP maximum" "(3x the queue depth)" \
             "RC receives from an SRQ" "RC event-driven completion" "UD SEND through an address handle" \
             "RC bad rkey gives REM_ACCESS_ERR, then WR_FLUSH_ERR" \
             "QP moved to ERR flushes posted receives with WR_FLUSH_ERR" "UC SEND_WITH_IMM" \
             "RC RDMA_WRITE_WITH_IMM" "SENDs through a 16-deep receive queue"; do
        grep -F -- "$c" "$LAST_OUT" | grep -q "^  ok " || fail "check '$c' missing or not ok"
    done
done
unset RPERFTEST_VERBS_TRANSPORT
# Auto-selected GID index is explained and matches the bed's RoCEv2/IPv4 index.
expect_contains "GID index $RXE_GID_IDX: RoCE v2, IPv4 $RXE_IP"
# No such device: one line naming the devices there are, non-zero exit, no hang.
expect_rc 2 with_timeout 20 rperftest selftest -d mlx5_9
expect_contains "rxe0"
