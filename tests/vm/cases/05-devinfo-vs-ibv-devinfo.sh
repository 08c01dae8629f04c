#!/bin/bash
# Field by field: `rperftest devices` / `devinfo [-v]` print exactly what rdma-core's
# `ibv_devices` / `ibv_devinfo [-v]` print on the same device (ids, GUIDs, fw/hw versions,
# device limits, atomic_cap, port state, MTUs, LIDs, link layer, gid_tbl_len, every GID line),
# over both verbs transports.
# mode: full
# timeout: 90
. "$VMTEST_LIB"

check_same() {  # <name> <ours> <theirs>
    if ! diff -u "$3" "$2" >"$VMTEST_TMP/$1.diff"; then
        cat "$VMTEST_TMP/$1.diff"
        fail "$1: rperftest differs from rdma-core (diff above: - rdma-core, + rperftest)"
    fi
    log "$1: identical ($(wc -l <"$2") lines)"
}

ibv_devices >"$VMTEST_TMP/c-devices.txt" || fail "ibv_devices failed"
rperftest devices >"$VMTEST_TMP/r-devices.txt" || fail "rperftest devices failed"
check_same devices "$VMTEST_TMP/r-devices.txt" "$VMTEST_TMP/c-devices.txt"

for t in write ioctl; do
    for v in "" "-v"; do
        ibv_devinfo $v >"$VMTEST_TMP/c.txt" || fail "ibv_devinfo $v failed"
        RPERFTEST_VERBS_TRANSPORT=$t rperftest devinfo $v >"$VMTEST_TMP/r.txt" \
            || fail "rperftest devinfo $v ($t) failed"
        check_same "devinfo${v:+ $v} ($t)" "$VMTEST_TMP/r.txt" "$VMTEST_TMP/c.txt"
    done
done
grep -q "GID\[" "$VMTEST_TMP/c.txt" || fail "no GID lines compared"
