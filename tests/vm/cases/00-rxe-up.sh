#!/bin/bash
# rdma-core's own tools see the rxe device the bed created: rxe0 is listed
# and its port is PORT_ACTIVE.  Proves the image (full mode) and /init.
# mode: full
# timeout: 60
. "$VMTEST_LIB"

expect_rc 0 ibv_devices
expect_contains "$RXE_DEV"
expect_rc 0 ibv_devinfo -d "$RXE_DEV"
expect_contains "PORT_ACTIVE"
expect_contains "link_layer:		Ethernet"
[ -c /dev/infiniband/uverbs0 ] || fail "/dev/infiniband/uverbs0 missing"
[ -c /dev/infiniband/rdma_cm ] || fail "/dev/infiniband/rdma_cm missing"
log "rxe0 up; RoCEv2 IPv4 GID index $RXE_GID_IDX, IP $RXE_IP"
