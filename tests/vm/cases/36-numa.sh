#!/bin/bash
# --numa_node, --pin_cores, --disable_numa (perftest after 6.29): the VM has one NUMA node, so
# binding to node 0 (explicitly or by default, the device's node) and to CPU 0 must run, a node
# that does not exist is perftest's one line with exit 1 before anything else, and the two
# bindings together are refused. ours<->ours ib_write_bw.
# mode: any
# timeout: 90
. "$VMTEST_LIB"
[ -d /sys/devices/system/node/node0 ] || skip "no NUMA node directory in sysfs"
X=(-d "$RXE_DEV" -x "$RXE_GID_IDX")
O=(-n 100 -s 4096)
log "== --numa_node=0 server, --pin_cores=0 client"
pair ib_write_bw rperftest ib_write_bw "${X[@]}" "${O[@]}" --numa_node=0 -- rperftest ib_write_bw "${X[@]}" "${O[@]}" --pin_cores=0 "$RXE_IP"
log "== default binding (the device's node; 6.29 persona) server, --disable_numa client"
pair ib_write_bw env RPERFTEST_PERFTEST_VERSION=6.29 rperftest ib_write_bw "${X[@]}" "${O[@]}" -- env RPERFTEST_PERFTEST_VERSION=6.29 rperftest ib_write_bw "${X[@]}" "${O[@]}" --disable_numa "$RXE_IP"
MAX=$(ls -d /sys/devices/system/node/node* | sed 's/.*node//' | sort -n | tail -1)
log "== a node that does not exist"
expect_rc 1 rperftest ib_write_bw "${X[@]}" --numa_node=$((MAX + 1))
expect_contains " NUMA node $((MAX + 1)) does not exist (available: 0-$MAX)"
log "== both bindings"
expect_rc 1 rperftest ib_write_bw "${X[@]}" --numa_node=0 --pin_cores=0
expect_contains "--numa_node and --pin_cores cannot be used together"
