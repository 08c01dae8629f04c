#!/bin/bash
# Issue 18: the 6.29 persona (the default; also --perftest-version 6.29 /
# RPERFTEST_PERFTEST_VERSION=6.29, which lib.sh otherwise sets to 6.06) on a real run. With neither,
# -V says 6.29 and a pair exchanges NEGOTIATE and prints 6.29's text; against C 6.06 both ways. Ours<->ours both 6.29: the two sides send "6.29" and exchange the NEGOTIATE block
# (resources wait for it), both exit 0, and the output is 6.29's (MiB/sec, CQE Poll Batch,
# Lock-free, the dynamic-polling note first). -c UD: the block carries the size after the MTU
# clamp on both sides. Mixed personas and C 6.06 on either side: no NEGOTIATE (6.06 is below
# 6.28), both exit 0. An option only NEGOTIATE carries (--report_gbits) differing: both sides
# print 6.29's two lines before any header and exit 1. Ctrl-C on a --run_infinitely client ends
# it as 6.29 does (' User stopped traffic', exit 0). Every pair also passes lib.sh's checks.
# mode: full
# (not in bare: the bare image differs only by lacking rdma-core, which 19-bare-all-tools covers)
# timeout: 240
. "$VMTEST_LIB"
X=(-d "$RXE_DEV" -x "$RXE_GID_IDX")
P629=(env RPERFTEST_PERFTEST_VERSION=6.29)

log "== the default persona is 6.29 (variable unset, no option)"
DEF=(env -u RPERFTEST_PERFTEST_VERSION)
run "${DEF[@]}" rperftest ib_write_bw -V
[ "$LAST_RC" = 1 ] && [ "$(cat "$LAST_OUT")" = "Version: 6.29" ] || fail "default -V: rc=$LAST_RC, want 'Version: 6.29' and 1"
log "== send_bw ours<->ours, both the default persona: NEGOTIATE, 6.29 text"
pair ib_send_bw "${DEF[@]}" rperftest ib_send_bw "${X[@]}" -n 200 -s 4096 -- \
    "${DEF[@]}" rperftest ib_send_bw "${X[@]}" -n 200 -s 4096 "$RXE_IP"
for f in "$VMTEST_TMP/client.out" "$SERVER_LOG"; do
    grep -qF "BW average[MiB/sec]" "$f" || fail "$f: default persona: no MiB/sec titles"
done

log "== write_bw ours<->ours, both 6.29"
pair ib_write_bw "${P629[@]}" rperftest ib_write_bw "${X[@]}" -n 200 -s 4096 -- \
    rperftest ib_write_bw "${X[@]}" --perftest-version 6.29 -n 200 -s 4096 "$RXE_IP"
for f in "$VMTEST_TMP/client.out" "$SERVER_LOG"; do
    grep -qF "BW peak[MiB/sec]    BW average[MiB/sec]" "$f" || fail "$f: no MiB/sec titles"
    grep -qF " CQE Poll Batch  : 16" "$f" || fail "$f: no CQE Poll Batch line"
    grep -qxF -- $' PCIe relax order: ON\t\tLock-free      : OFF' "$f" || fail "$f: no Lock-free item"
    [ "$(head -c 25 "$f")" = "Disabling dynamic polling" ] || fail "$f: 6.29's note is not the first line"
done

log "== read_lat ours<->ours, both 6.29"
pair ib_read_lat "${P629[@]}" rperftest ib_read_lat "${X[@]}" -n 100 -- \
    "${P629[@]}" rperftest ib_read_lat "${X[@]}" -n 100 "$RXE_IP"
expect_contains "Disabling dynamic polling" "$VMTEST_TMP/client.out"

log "== send_bw -c UD ours<->ours, both 6.29 (size clamped to the MTU before NEGOTIATE)"
pair ib_send_bw "${P629[@]}" rperftest ib_send_bw "${X[@]}" -c UD -n 200 -- \
    "${P629[@]}" rperftest ib_send_bw "${X[@]}" -c UD -n 200 "$RXE_IP"

log "== --report_gbits on one side only: NEGOTIATE names it (the option block does not carry it)"
start_server -t 60 "${P629[@]}" rperftest ib_write_bw "${X[@]}" -n 200 -s 4096
mark
run with_timeout 30 "${P629[@]}" rperftest ib_write_bw "${X[@]}" -n 200 -s 4096 --report_gbits "$RXE_IP"
wait_server 30
bound 10 "the mismatch"
[ "$LAST_RC" = 1 ] && [ "$SERVER_RC" = 1 ] || fail "rc client=$LAST_RC server=$SERVER_RC, want 1 and 1"
expect_contains " report_fmt mismatch: local=GBS, remote=MBS"
expect_contains " Failed to negotiate parameters"
expect_contains " report_fmt mismatch: local=MBS, remote=GBS" "$SERVER_LOG"
expect_not_contains "Dual-port" "$SERVER_LOG"
expect_not_contains "Dual-port"
# exactly 6.29's two lines on the client's stdout+stderr
[ "$(grep -c mismatch "$LAST_OUT")" = 1 ] || fail "more than 6.29's mismatch line"

log "== --run_infinitely, Ctrl-C on the 6.29 client: 'User stopped traffic', both exit 0"
start_server -t 60 "${P629[@]}" rperftest ib_write_bw "${X[@]}" --run_infinitely -D 1 -s 4096
"${P629[@]}" rperftest ib_write_bw "${X[@]}" --run_infinitely -D 1 -s 4096 "$RXE_IP" >inf.log 2>&1 &
C=$!; _VMTEST_BG+=("$C")
wait_for_text inf.log "#bytes" 60
sleep 2
mark; kill -INT "$C"
wait_pid "$C" 10; cat inf.log
bound 2 "client after Ctrl-C"
[ "$PID_RC" = 0 ] || fail "client rc=$PID_RC, want 0 (6.29)"
[ "$(tail -n 3 inf.log | head -n 2)" = $'\n User stopped traffic' ] || fail "client: not 6.29's ending"
wait_server 10
[ "$SERVER_RC" = 0 ] || fail "server rc=$SERVER_RC, want 0"
grep -qF " Client closed connection" "$SERVER_LOG" || fail "server: no 'Client closed connection'"

log "== send_lat: 6.29 server, 6.06 client (no NEGOTIATE)"
pair ib_send_lat "${P629[@]}" rperftest ib_send_lat "${X[@]}" -n 100 -- \
    rperftest ib_send_lat "${X[@]}" -n 100 "$RXE_IP"
expect_not_contains "MiB/sec" "$VMTEST_TMP/client.out"

if [ "$RXE_VM_MODE" = full ]; then
    log "== write_bw: 6.29 client -> C 6.06 server"
    pair ib_write_bw ib_write_bw "${X[@]}" -n 200 -s 4096 -- \
        "${P629[@]}" rperftest ib_write_bw "${X[@]}" -n 200 -s 4096 "$RXE_IP"
    log "== write_bw: C 6.06 client -> 6.29 server"
    pair ib_write_bw "${P629[@]}" rperftest ib_write_bw "${X[@]}" -n 200 -s 4096 -- \
        ib_write_bw "${X[@]}" -n 200 -s 4096 "$RXE_IP"
    grep -qF "BW average[MiB/sec]" "$SERVER_LOG" || fail "6.29 server: no MiB/sec titles"
    log "== read_lat: default-persona client -> C 6.06 server, and C 6.06 client -> default server"
    pair ib_read_lat ib_read_lat "${X[@]}" -n 100 -- "${DEF[@]}" rperftest ib_read_lat "${X[@]}" -n 100 "$RXE_IP"
    expect_contains "Disabling dynamic polling" "$VMTEST_TMP/client.out"
    pair ib_read_lat "${DEF[@]}" rperftest ib_read_lat "${X[@]}" -n 100 -- ib_read_lat "${X[@]}" -n 100 "$RXE_IP"
fi
log "OK"
