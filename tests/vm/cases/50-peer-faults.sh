#!/bin/bash
# Misbehaving peers (issue #8 item 2): fake clients (bash /dev/tcp) and fake servers (busybox nc)
# that close mid-exchange, send garbage, a short block then nothing, an oversized block, an old
# version, or stay silent; and a pair started with different -q (named on both sides before
# any traffic). Each: the exit code,
# the one-line message and the time from the fault to the exit.
# mode: full
# (Full only: its ours<->ours half runs there too; a second run in the bare image, which
# differs only by the absence of rdma-core, would add CI time and no coverage. The bare
# suite covers the tools without rdma-core in 19-bare-all-tools, 71 and 72.)
# timeout: 300
. "$VMTEST_LIB"
X=(-d "$RXE_DEV" -x "$RXE_GID_IDX")
# server_rc WANT MSG: the last server's status and a fixed string in its log
server_rc() {
    [ "$SERVER_RC" = "$1" ] || fail "server rc=$SERVER_RC, want $1"
    grep -qF -- "$2" "$SERVER_LOG" || fail "server log lacks: $2"
    ! grep -q "panicked at" "$SERVER_LOG" || fail "server panicked"
}
NUL8='\0\0\0\0\0\0\0\0'
NUL12='\0\0\0\0\0\0\0\0\0\0\0\0'

log "== client closes in the middle of the version block"
start_server rperftest ib_write_bw "${X[@]}" -n 5
mark
( exec 3<>/dev/tcp/127.0.0.1/18515 && printf "6.06$NUL8" >&3 )   # 12 of 16 bytes, then close
wait_server 20
server_rc 1 "peer closed the connection during the version exchange (received 12 of 16 bytes)"
bound 5 "closed mid-exchange"

log "== client sends 16 bytes of binary garbage"
start_server rperftest ib_write_bw "${X[@]}" -n 5
mark
( exec 3<>/dev/tcp/127.0.0.1/18515 && printf '\x01\x02\x03\x04\xfe\xff\x80\x81\x01\x02\x03\x04\xfe\xff\x80\x81' >&3 && sleep 15 ) &
wait_server 20
server_rc 1 "bad message from peer during the version exchange: version block is not text"
bound 5 "garbage"

log "== client sends a short block and then nothing (RPERFTEST_OOB_TIMEOUT=3)"
start_server env RPERFTEST_OOB_TIMEOUT=3 rperftest ib_write_bw "${X[@]}" -n 5
mark
( exec 3<>/dev/tcp/127.0.0.1/18515 && printf '6.06\0\0' >&3 && sleep 20 ) &
wait_server 20
server_rc 1 "no answer from peer for 3 s during the version exchange (received 6 of 16 bytes)"
bound 6 "short message"

log "== client sends an oversized version block (40 bytes)"
start_server rperftest ib_write_bw "${X[@]}" -n 5
mark
( exec 3<>/dev/tcp/127.0.0.1/18515 && printf '6.06AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' >&3 && sleep 15 ) &
wait_server 20
server_rc 1 "bad message from peer during the page size exchange"
bound 5 "oversized message"

log "== client announces perftest 5.60 (older than 5.70)"
start_server rperftest ib_write_bw "${X[@]}" -n 5
mark
( exec 3<>/dev/tcp/127.0.0.1/18515 && printf "5.60$NUL12" >&3 && sleep 15 ) &
wait_server 20
server_rc 1 "Current implementation is not compatible with versions older than 5.70"
grep -qF 'peer reports perftest version "5.60", older than 5.70' "$SERVER_LOG" || fail "no version line"
bound 5 "wrong version"

log "== client connects and stays silent (RPERFTEST_OOB_TIMEOUT=3)"
start_server env RPERFTEST_OOB_TIMEOUT=3 rperftest ib_write_bw "${X[@]}" -n 5
mark
( exec 3<>/dev/tcp/127.0.0.1/18515 && sleep 20 ) &
wait_server 20
server_rc 1 "no answer from peer for 3 s during the version exchange (received 0 of 16 bytes)"
bound 6 "silent client"

log "== client connects and stays silent, default bound (30 s)"
start_server rperftest ib_write_bw "${X[@]}" -n 5
mark
( exec 3<>/dev/tcp/127.0.0.1/18515 && sleep 45 ) &
wait_server 45
server_rc 1 "no answer from peer for 30 s during the version exchange"
bound 34 "silent client, default timeout"

# ---- fake servers (busybox nc -l -e SCRIPT: the script's stdin/stdout is the connection) ----
cat >closer.sh <<'EOS'
#!/bin/bash
exit 0
EOS
cat >oldver.sh <<'EOS'
#!/bin/bash
printf '5.60\0\0\0\0\0\0\0\0\0\0\0\0'
sleep 15
EOS
cat >garbage.sh <<'EOS'
#!/bin/bash
head -c 16 >/dev/null
printf '6.06\0\0\0\0\0\0\0\0\0\0\0\0'     # a good version block ...
printf '\x7f\xff\xff\xff'                  # ... then a page size of 2 GiB - 1
sleep 15
EOS
chmod +x closer.sh oldver.sh garbage.sh

log "== server accepts and closes at once"
start_server nc -l -p 18515 -e "$PWD/closer.sh"
mark
run with_timeout 30 rperftest ib_write_bw "${X[@]}" -n 5 "$RXE_IP"
[ "$LAST_RC" = 1 ] || fail "client rc=$LAST_RC, want 1"
expect_contains "peer closed the connection during the version exchange (received 0 of 16 bytes)"
bound 5 "fake server closed"
kill "$SERVER_PID" 2>/dev/null

log "== server announces perftest 5.60"
start_server nc -l -p 18515 -e "$PWD/oldver.sh"
mark
run with_timeout 30 rperftest ib_write_bw "${X[@]}" -n 5 "$RXE_IP"
[ "$LAST_RC" = 1 ] || fail "client rc=$LAST_RC, want 1"
expect_contains "older than 5.70"
bound 5 "fake server old version"
kill "$SERVER_PID" 2>/dev/null

log "== server sends a page size of 2 GiB"
start_server nc -l -p 18515 -e "$PWD/garbage.sh"
mark
run with_timeout 30 rperftest ib_write_bw "${X[@]}" -n 5 "$RXE_IP"
[ "$LAST_RC" = 1 ] || fail "client rc=$LAST_RC, want 1"
expect_contains "bad message from peer during the page size exchange"
bound 5 "fake server garbage"
kill "$SERVER_PID" 2>/dev/null

log "== mismatched -q (server 2 QPs, client 1): both rperftest, named by the option exchange"
start_server env RPERFTEST_OOB_TIMEOUT=5 rperftest ib_write_bw "${X[@]}" -n 5 -q 2
mark
run with_timeout 60 env RPERFTEST_OOB_TIMEOUT=5 rperftest ib_write_bw "${X[@]}" -n 5 "$RXE_IP"
[ "$LAST_RC" = 1 ] || fail "client rc=$LAST_RC, want 1"
expect_contains "-q: this side 1, peer 2"
wait_server 30
[ "$SERVER_RC" = 1 ] || fail "server rc=$SERVER_RC, want 1"
grep -qF -- "-q: this side 2, peer 1" "$SERVER_LOG" || fail "server message does not name -q"
bound 20 "-q mismatch"
