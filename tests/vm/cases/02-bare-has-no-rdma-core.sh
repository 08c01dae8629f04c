#!/bin/bash
# The bare image must not contain any rdma-core library, provider, tool or
# perftest, so that anything that works in it works without rdma-core.  The
# kernel side (rxe0, /dev/infiniband) is still there.
# mode: bare
# timeout: 60
. "$VMTEST_LIB"

[ "$RXE_VM_MODE" = bare ] || fail "RXE_VM_MODE=$RXE_VM_MODE, expected bare"
found=$(find / -xdev \( -name 'libibverbs*' -o -name 'librdmacm*' -o -name 'librxe*' \
        -o -name '*-rdmav*' -o -name 'libmlx[45]*' -o -name 'libefa*' -o -name 'libibumad*' \
        -o -name 'ib_*_bw' -o -name 'ib_*_lat' -o -name 'ibv_*' -o -name 'rping' \
        -o -name 'libibverbs.d' -o -name 'perftest*' \) -print 2>/dev/null | grep -v '^/mnt/host/')
[ -z "$found" ] || fail "rdma-core/perftest files in the bare image: $found"
for t in ibv_devinfo ibv_devices ib_write_bw ib_send_lat rping; do
    ! command -v "$t" >/dev/null 2>&1 || fail "$t is on PATH in the bare image"
done
if grep -qaE 'libibverbs|librdmacm|librxe' /etc/ld.so.cache; then fail "ld.so.cache names rdma-core libraries"; fi
log "no rdma-core userspace present"

# the kernel half is intact
[ -c /dev/infiniband/uverbs0 ] || fail "/dev/infiniband/uverbs0 missing"
read -r st </sys/class/infiniband/"$RXE_DEV"/ports/1/state || fail "no $RXE_DEV in sysfs"
echo "sysfs $RXE_DEV port 1 state: $st"
case "$st" in *ACTIVE*) ;; *) fail "port not ACTIVE: $st" ;; esac
