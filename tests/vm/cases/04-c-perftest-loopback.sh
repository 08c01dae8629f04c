#!/bin/bash
# C perftest on rxe0 in loopback (server in the background, client to
# 127.0.0.1): proves the bed runs perftest, so rperftest can be compared with
# it side by side in the same VM.
# mode: full
# timeout: 120
. "$VMTEST_LIB"

args=(-d "$RXE_DEV" -x "$RXE_GID_IDX" -F -n 200)
start_server ib_write_bw "${args[@]}"
expect_rc 0 with_timeout 60 ib_write_bw "${args[@]}" 127.0.0.1
expect_contains "#bytes"
expect_contains "BW average[MB/sec]"
wait_server 30
[ "$SERVER_RC" = 0 ] || fail "server exited $SERVER_RC"
expect_contains "BW average[MB/sec]" "$SERVER_LOG"
