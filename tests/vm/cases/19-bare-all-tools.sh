#!/bin/bash
# All eight tools ours<->ours on the bare image (no rdma-core, no perftest anywhere).
# mode: bare
# timeout: 240
. "$VMTEST_LIB"
X=(-d "$RXE_DEV" -x "$RXE_GID_IDX")
for t in ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw; do
    log "== $t"
    pair $t rperftest $t "${X[@]}" -n 200 -- rperftest $t "${X[@]}" -n 200 "$RXE_IP"
done
for t in ib_write_lat ib_read_lat ib_send_lat ib_atomic_lat; do
    log "== $t"
    pair $t rperftest $t "${X[@]}" -n 100 -- rperftest $t "${X[@]}" -n 100 "$RXE_IP"
done
log "== without -x (automatic GID)"
pair ib_write_bw rperftest ib_write_bw -d "$RXE_DEV" -n 200 -- rperftest ib_write_bw -d "$RXE_DEV" -n 200 "$RXE_IP"
