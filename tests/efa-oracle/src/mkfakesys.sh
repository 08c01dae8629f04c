#!/bin/sh
# A fake sysfs tree for one EFA device (PCI 1d0f:efa0, what libefa 44 matches); use with
# SYSFS_PATH=$1. EFA's port is neither IB nor Ethernet on real hardware ("Unspecified").
set -e
R=${1:-/tmp/efa-oracle-sys}
rm -rf "$R"; mkdir -p "$R/class/infiniband_verbs/uverbs0" "$R/class/infiniband/efa_0/device" "$R/class/infiniband/efa_0/ports/1/gids" \
  "$R/class/infiniband/efa_0/ports/1/gid_attrs/types" "$R/class/infiniband/efa_0/ports/1/gid_attrs/ndevs" "$R/class/infiniband/efa_0/ports/1/pkeys"
echo 6 > "$R/class/infiniband_verbs/abi_version"
V="$R/class/infiniband_verbs/uverbs0"; echo efa_0 > $V/ibdev; echo 1 > $V/abi_version; echo 1:3 > $V/dev   # 1:3 = /dev/null (the shim opens it)
D="$R/class/infiniband/efa_0"
echo "1: CA" > $D/node_type; echo 0000:0000:0000:0000 > $D/node_guid; echo 0000:0000:0000:0000 > $D/sys_image_guid
echo 0.0.0.0 > $D/fw_ver; echo "oracle efa_0" > $D/node_desc; echo 0 > $D/hw_rev
echo "pci:v00001D0Fd0000EFA0sv00000000sd00000000bc02sc00i00" > $D/device/modalias
echo 0x1d0f > $D/device/vendor; echo 0xefa0 > $D/device/device; echo ffff > $D/device/local_cpus; echo 0 > $D/device/numa_node
P=$D/ports/1
echo "4: ACTIVE" > $P/state; echo "5: LinkUp" > $P/phys_state; echo Unknown > $P/link_layer; echo 0x0 > $P/lid; echo 0x0 > $P/sm_lid
echo "100 Gb/sec (4X EDR)" > $P/rate; echo 0x0 > $P/cap_mask; echo 0xffff > $P/pkeys/0
echo fe80:0000:0000:0000:0000:00ff:fe00:0001 > $P/gids/0
echo "$R"
