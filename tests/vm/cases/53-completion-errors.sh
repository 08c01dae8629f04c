#!/bin/bash
# Completion errors by name with the likely cause, never a bare number (issue #8 item 4).
# A fake server (busybox nc) speaks the 6.06 exchange and hands out the bed's real GID with a QP
# number that does not exist, then keeps the TCP connection open: the client's RDMA writes are
# never acknowledged. Real behaviour on rxe (6.1, loopback): no RETRY_EXC_ERR comes within 60 s
# (rxe drops the packets and keeps retrying), so the data-path stall bound
# (RPERFTEST_STALL_TIMEOUT, here 10 s) ends the run and names the GID/MTU/peer causes; on
# hardware the same run ends with RETRY_EXC_ERR named with its cause. Either is accepted, and the
# case logs which one came. REM_ACCESS (bad rkey) and WR_FLUSH come from `rperftest
# selftest`, which provokes them between two real QPs. (RNR cannot be provoked with the real
# tools: they always post receives and retry RNR forever; its name and cause are unit-tested.)
# mode: full
# (Full only: its ours<->ours half runs there too; a second run in the bare image, which
# differs only by the absence of rdma-core, would add CI time and no coverage. The bare
# suite covers the tools without rdma-core in 19-bare-all-tools, 71 and 72.)
# timeout: 180
. "$VMTEST_LIB"
X=(-d "$RXE_DEV" -x "$RXE_GID_IDX")

# The bed's GID as perftest's key text: 16 bytes as "xx:" each.
G=$(cat "/sys/class/infiniband/$RXE_DEV/ports/1/gids/$RXE_GID_IDX")
G=${G//:/}
GTXT=""
for ((i = 0; i < 32; i += 2)); do GTXT+="${G:i:2}:"; done
# LID:out_reads:QPN:PSN:RKey:VAddr:GID(16×"xx:"):SRQN: + NUL = 108 bytes (perftest's GID format)
KEY="0000:0001:0fffff:000001:00001234:0000000000001000:${GTXT}00000000:"
[ ${#KEY} = 107 ] || fail "key text is ${#KEY} chars, want 107: $KEY"
cat >fake-server.sh <<EOS
#!/bin/bash
# version 6.06, page size 4096, cache line 64, MTU 1024, then key records (write_bw reads 3, write_lat 4)
printf '6.06\0\0\0\0\0\0\0\0\0\0\0\0'
printf '\0\0\x10\0'
printf '\0\0\0\x40'
printf '3\0'
printf '%s\0' '$KEY' '$KEY' '$KEY' '$KEY'   # write_lat needs four
cat >/dev/null &
sleep 90
EOS
chmod +x fake-server.sh

RETRY="Completion with error at client: RETRY_EXC_ERR (status 12"
RETRY_CAUSE="likely cause: no ACK from the peer: check the GID index (-x), the MTU, the route and that the peer is alive"
STALL="no progress for 10 s while waiting for"
STALL_CAUSE="the peer may be dead or the fabric path broken (check GID index -x, MTU and that the peer is still running)"
# unacked TOOL: run TOOL against the fake server; RETRY_EXC by name or the stall, within 20 s
unacked() {
    log "== $1: RDMA to a QP that does not exist"
    start_server nc -l -p 18515 -e "$PWD/fake-server.sh"
    mark
    run with_timeout 90 env RPERFTEST_STALL_TIMEOUT=10 rperftest "$1" "${X[@]}" -n 5 "$RXE_IP"
    [ "$LAST_RC" = 1 ] || fail "client rc=$LAST_RC, want 1"
    expect_not_contains "panicked at"
    if grep -qF "$RETRY" "$LAST_OUT"; then
        log "the kernel reported RETRY_EXC_ERR"
        expect_contains "$RETRY_CAUSE"
    else
        log "no completion came: the stall bound ended the run"
        expect_contains "$STALL"
        expect_contains "$STALL_CAUSE"
    fi
    # either way the line sends the user to the doctor, with the peer's address
    expect_contains "; run: rperftest doctor $RXE_IP"
    # never a bare status number
    ! grep -E "status [0-9]+" "$LAST_OUT" | grep -vq "_ERR (status" || fail "a bare status number"
    bound 20 "$1 against a QP that does not exist"
    kill "$SERVER_PID" 2>/dev/null
}
unacked ib_write_bw
unacked ib_write_lat

log "== ib_write_bw: the peer's GID is not reachable (::ffff:10.99.0.77, no such host)"
UNREACH="0000:0001:0fffff:000001:00001234:0000000000001000:00:00:00:00:00:00:00:00:00:00:ff:ff:0a:63:00:4d:00000000:"
sed "s/$KEY/$UNREACH/g" fake-server.sh >fake-unreach.sh
chmod +x fake-unreach.sh
grep -q "$UNREACH" fake-unreach.sh || fail "fake-unreach.sh"
start_server nc -l -p 18515 -e "$PWD/fake-unreach.sh"
mark
run with_timeout 90 env RPERFTEST_STALL_TIMEOUT=10 rperftest ib_write_bw "${X[@]}" -n 5 "$RXE_IP"
[ "$LAST_RC" = 1 ] || fail "client rc=$LAST_RC, want 1"
expect_not_contains "panicked at"
if grep -qF "to RTR" "$LAST_OUT"; then
    log "the kernel refused the path at MODIFY_QP(RTR)"
    expect_contains "GID index (-x)"
elif grep -qF "$RETRY" "$LAST_OUT"; then
    log "the kernel reported RETRY_EXC_ERR"
    expect_contains "$RETRY_CAUSE"
else
    log "no completion came: the stall bound ended the run"
    expect_contains "$STALL"
fi
bound 20 "unreachable peer GID"
kill "$SERVER_PID" 2>/dev/null

log "== REM_ACCESS_ERR and WR_FLUSH_ERR by name (selftest, bad rkey between two real QPs)"
expect_rc 0 with_timeout 120 rperftest selftest -d "$RXE_DEV"
grep -qF "  ok    RC bad rkey gives REM_ACCESS_ERR, then WR_FLUSH_ERR" "$LAST_OUT" || fail "REM_ACCESS_ERR check"
