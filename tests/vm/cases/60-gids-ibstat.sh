#!/bin/bash
# The small diagnostic tools on rxe: `rperftest ibstat` (and the `ibstat` link name) prints
# byte for byte what Debian's ibstat (infiniband-diags) prints, for the whole CA, -l, -s, -p
# and `CA PORT` (full mode); `rperftest gids` matches the GID table in sysfs row by row and
# names the RoCE v2 IPv4 GID at $RXE_GID_IDX; `ibdev2netdev` maps rxe0 to $RXE_NETDEV (Up).
# In bare mode (no rdma-core) the same commands work and are checked against sysfs.
# mode: any
# timeout: 60
. "$VMTEST_LIB"

R=$(command -v rperftest) || fail "rperftest not on PATH"
# The link names live outside $VMTEST_TMP: the runner greps that directory (links followed)
# for Rust panic messages, and the binary holds their text.
OURS=$(mktemp -d /tmp/rperftest-links.XXXXXX)
trap '_vmtest_cleanup; rm -rf "$OURS"' EXIT
for n in ibstat show_gids ibdev2netdev; do ln -sf "$R" "$OURS/$n"; done

check_same() {  # <name> <ours> <theirs>
    if ! diff -u "$3" "$2" >"$VMTEST_TMP/$1.diff"; then
        cat "$VMTEST_TMP/$1.diff"
        fail "$1: rperftest differs from Debian's ibstat (diff above: - ibstat, + rperftest)"
    fi
    log "$1: identical ($(wc -l <"$2") lines)"
}

# --- ibstat
n=0
for args in "" "-l" "-s" "-p" "$RXE_DEV" "$RXE_DEV 1" "-s $RXE_DEV"; do
    n=$((n + 1))
    # shellcheck disable=SC2086
    "$OURS/ibstat" $args >"$VMTEST_TMP/r$n.txt" || fail "ibstat (ours) $args failed"
    # shellcheck disable=SC2086
    rperftest ibstat $args | cmp -s - "$VMTEST_TMP/r$n.txt" || fail "rperftest ibstat $args differs from the ibstat link"
    if [ "$RXE_VM_MODE" = full ]; then
        # shellcheck disable=SC2086
        /usr/sbin/ibstat $args >"$VMTEST_TMP/c$n.txt" || fail "Debian ibstat $args failed"
        check_same "ibstat $args" "$VMTEST_TMP/r$n.txt" "$VMTEST_TMP/c$n.txt"
    fi
done
cat "$VMTEST_TMP/r1.txt"
P=/sys/class/infiniband/$RXE_DEV/ports/1
grep -qx "	CA '$RXE_DEV'" "$VMTEST_TMP/r1.txt" && fail "CA line must not be indented"
grep -qx "CA '$RXE_DEV'" "$VMTEST_TMP/r1.txt" || fail "no CA '$RXE_DEV' line"
grep -qx "		State: Active" "$VMTEST_TMP/r1.txt" || fail "port not Active in ibstat"
grep -qx "		Link layer: Ethernet" "$VMTEST_TMP/r1.txt" || fail "link layer not Ethernet"
g0=$(cut -d: -f5- "$P/gids/0" | tr -d :)
grep -qx "0x$g0" "$VMTEST_TMP/r4.txt" || fail "ibstat -p: port GUID is not GID 0's interface id ($g0)"
# -l lists every device of the host, in byte order (an earlier case may have left others).
[ "$(cat "$VMTEST_TMP/r2.txt")" = "$(ls /sys/class/infiniband | LC_ALL=C sort)" ] || fail "ibstat -l is not the devices in sysfs"
grep -qx "$RXE_DEV" "$VMTEST_TMP/r2.txt" || fail "ibstat -l does not list '$RXE_DEV'"
expect_rc 255 rperftest ibstat "$RXE_DEV" 7
expect_contains "has no port number 7"
expect_rc 255 rperftest ibstat nosuchdev
expect_contains "can't be found"

# --- gids
rperftest gids "$RXE_DEV" >"$VMTEST_TMP/gids.txt" || fail "rperftest gids failed"
cat "$VMTEST_TMP/gids.txt"
"$OURS/show_gids" "$RXE_DEV" | cmp -s - "$VMTEST_TMP/gids.txt" || fail "show_gids link differs from rperftest gids"
rperftest gids >"$VMTEST_TMP/gids-all.txt" || fail "rperftest gids (all devices) failed"
grep -q "^$RXE_DEV	1	" "$VMTEST_TMP/gids-all.txt" || fail "rperftest gids without a device has no $RXE_DEV rows"
[ "$(sed -n 1p "$VMTEST_TMP/gids.txt")" = "$(printf 'DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV')" ] \
    || fail "header 1 is not show_gids'"
[ "$(sed -n 2p "$VMTEST_TMP/gids.txt")" = "$(printf -- '---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---')" ] \
    || fail "header 2 is not show_gids'"
# Every non-empty sysfs GID is a row (device, port, index, GID, version, netdev), and no more.
rows=0
# One grep for the 1024 GID files (a process per file is slow under TCG); errors (EINVAL on
# unset entries in some kernels) are dropped as show_gids drops them.
grep -H . "$P"/gids/* 2>/dev/null | sed "s|^$P/gids/||" | sort -t: -k1,1 >"$VMTEST_TMP/sysfs-gids.txt"
while IFS=: read -r i gid; do
    case "$gid" in 0000:0000:0000:0000:0000:0000:0000:0000|fe80:0000:0000:0000:0000:0000:0000:0000) continue ;; esac
    rows=$((rows + 1))
    t=$(cat "$P/gid_attrs/types/$i"); ver=v${t##*v}
    nd=$(cat "$P/gid_attrs/ndevs/$i")
    awk -F'\t' -v d="$RXE_DEV" -v i="$i" -v g="$gid" -v v="$ver" -v n="$nd" \
        '$1==d && $2==1 && $3==i && $4==g && $(NF-1)==v && $NF==n {ok=1} END {exit !ok}' "$VMTEST_TMP/gids.txt" \
        || fail "no row for GID $i ($gid $ver $nd)"
done <"$VMTEST_TMP/sysfs-gids.txt"
grep -qx "n_gids_found=$rows" "$VMTEST_TMP/gids.txt" || fail "n_gids_found is not $rows"
[ "$rows" -ge 2 ] || fail "only $rows GIDs compared"
ip4=$(awk -F'\t' -v i="$RXE_GID_IDX" '$3==i && $(NF-1)=="v2" {sub(/ +$/, "", $5); print $5}' "$VMTEST_TMP/gids.txt")
[ "$ip4" = "$RXE_IP" ] || fail "GID $RXE_GID_IDX is not the RoCE v2 GID of $RXE_IP (gids says '$ip4')"
log "RoCE v2 IPv4 GID: index $RXE_GID_IDX = $ip4"
rperftest gids --json "$RXE_DEV" >"$VMTEST_TMP/gids.json" || fail "gids --json failed"
grep -q "\"n_gids_found\": $rows" "$VMTEST_TMP/gids.json" || { cat "$VMTEST_TMP/gids.json"; fail "JSON count is not $rows"; }
grep -q "\"ipv4\": \"$RXE_IP\"" "$VMTEST_TMP/gids.json" || fail "JSON has no ipv4 $RXE_IP"
expect_rc 1 rperftest gids nosuchdev

# --- ibdev2netdev
expect_rc 0 "$OURS/ibdev2netdev"
expect_contains "$RXE_DEV port 1 ==> $RXE_NETDEV (Up)"
expect_rc 0 rperftest ibdev2netdev -v
expect_contains "$RXE_DEV ("
expect_contains "port 1 (ACTIVE) ==> $RXE_NETDEV (Up)"
log "ok"
