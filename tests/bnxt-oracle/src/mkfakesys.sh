#!/bin/sh
# Build a fake sysfs tree for one bnxt_re RoCE device (Broadcom BCM57508); use with SYSFS_PATH=$1
set -e
R=${1:-/tmp/bnxt-oracle-sys}
D="$R/class/infiniband/bnxt_re0"; P=$D/ports/1
rm -rf "$R"; mkdir -p "$R/class/infiniband_verbs/uverbs0" "$D/device" "$P/gids" "$P/gid_attrs/types" "$P/gid_attrs/ndevs" "$P/pkeys"
echo 6 > "$R/class/infiniband_verbs/abi_version"
V="$R/class/infiniband_verbs/uverbs0"; echo bnxt_re0 > $V/ibdev; echo 1 > $V/abi_version; echo 1:3 > $V/dev   # 1:3 = /dev/null (the shim opens it)
echo "1: CA" > $D/node_type; echo 0a0b:0cff:fe0d:0e0f > $D/node_guid; echo 0a0b:0cff:fe0d:0e0f > $D/sys_image_guid
echo 224.0.11.2 > $D/fw_ver; echo "oracle bnxt_re0" > $D/node_desc; echo 0x1750 > $D/hca_type; echo 0x0 > $D/hw_rev
echo "pci:v000014E4d00001750sv000014E4sd00005208bc02sc00i00" > $D/device/modalias
echo 0x14e4 > $D/device/vendor; echo 0x1750 > $D/device/device; echo ffff > $D/device/local_cpus; echo 0 > $D/device/numa_node
echo "4: ACTIVE" > $P/state; echo "5: LinkUp" > $P/phys_state; echo Ethernet > $P/link_layer; echo 0x0 > $P/lid; echo 0x0 > $P/sm_lid
echo "100 Gb/sec (4X EDR)" > $P/rate; echo 0x04010000 > $P/cap_mask; echo 0xffff > $P/pkeys/0
echo fe80:0000:0000:0000:080b:0cff:fe0d:0e0f > $P/gids/0; echo "IB/RoCE v1" > $P/gid_attrs/types/0; echo lo > $P/gid_attrs/ndevs/0
echo fe80:0000:0000:0000:080b:0cff:fe0d:0e0f > $P/gids/1; echo "RoCE v2" > $P/gid_attrs/types/1; echo lo > $P/gid_attrs/ndevs/1
for i in $(seq 2 15); do echo 0000:0000:0000:0000:0000:0000:0000:0000 > $P/gids/$i; done
echo "$R"
