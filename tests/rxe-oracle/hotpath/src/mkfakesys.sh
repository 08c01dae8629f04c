#!/bin/sh
# Build a fake sysfs tree for one rxe (Soft-RoCE) device, rxe0 over "lo"; use with SYSFS_PATH=$1.
# libibverbs finds uverbs0 -> ibdev rxe0; librxe matches the device by its name (rxe*).
set -e
R=${1:-/tmp/rxe-hotpath-sys}
rm -rf "$R"; mkdir -p "$R/class/infiniband_verbs/uverbs0" "$R/class/infiniband/rxe0/ports/1/gids" \
  "$R/class/infiniband/rxe0/ports/1/gid_attrs/types" "$R/class/infiniband/rxe0/ports/1/gid_attrs/ndevs" "$R/class/infiniband/rxe0/ports/1/pkeys"
echo 6 > "$R/class/infiniband_verbs/abi_version"
V="$R/class/infiniband_verbs/uverbs0"; echo rxe0 > $V/ibdev; echo 2 > $V/abi_version; echo 1:3 > $V/dev   # 1:3 = /dev/null (the shim opens it)
D="$R/class/infiniband/rxe0"
echo "1: CA" > $D/node_type; echo 0200:00ff:fe00:0001 > $D/node_guid; echo 0200:00ff:fe00:0001 > $D/sys_image_guid
echo "rxe0" > $D/node_desc; echo 0 > $D/hw_rev
P=$D/ports/1
echo "4: ACTIVE" > $P/state; echo "5: LinkUp" > $P/phys_state; echo Ethernet > $P/link_layer; echo 0x0 > $P/lid; echo 0x0 > $P/sm_lid
echo "10 Gb/sec (1X QDR)" > $P/rate; echo 0x00890000 > $P/cap_mask; echo 0xffff > $P/pkeys/0
echo fe80:0000:0000:0000:0200:00ff:fe00:0001 > $P/gids/0; echo "RoCE v2" > $P/gid_attrs/types/0; echo lo > $P/gid_attrs/ndevs/0
echo 0000:0000:0000:0000:0000:ffff:c0a8:0101 > $P/gids/1; echo "RoCE v2" > $P/gid_attrs/types/1; echo lo > $P/gid_attrs/ndevs/1
for i in $(seq 2 15); do echo 0000:0000:0000:0000:0000:0000:0000:0000 > $P/gids/$i; done
echo "$R"
