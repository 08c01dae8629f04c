#!/bin/bash
# `rperftest devinfo` (no rdma-core: runs in both modes) finds rxe0 and
# reports its port as PORT_ACTIVE.
# xfail: rperftest devinfo not implemented yet (remove this header when it lands)
# mode: any
# timeout: 60
. "$VMTEST_LIB"

expect_rc 0 rperftest devinfo
expect_contains "$RXE_DEV"
expect_contains "PORT_ACTIVE"
