#!/bin/bash
# `rperftest devinfo` (no rdma-core: runs in both modes) finds rxe0 and
# reports its port as PORT_ACTIVE, over both verbs transports (write and ioctl).
# mode: any
# timeout: 60
. "$VMTEST_LIB"

for t in write ioctl; do
    export RPERFTEST_VERBS_TRANSPORT=$t
    expect_rc 0 rperftest devinfo
    expect_contains "hca_id:	$RXE_DEV"
    expect_contains "PORT_ACTIVE (4)"
    expect_not_contains "sysfs only"
    expect_rc 0 rperftest devinfo -v -d "$RXE_DEV" -i 1
    expect_contains "max_qp:"
    expect_contains "GID[  $RXE_GID_IDX]:"
done
unset RPERFTEST_VERBS_TRANSPORT
expect_rc 0 rperftest devices
expect_contains "$RXE_DEV"
# A device that does not exist: a one-line error naming the devices there are.
expect_rc 255 rperftest devinfo -d nosuchdev0
expect_contains "rxe0"
