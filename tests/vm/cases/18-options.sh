#!/bin/bash
# Options end to end (ours<->ours and against C perftest): -a sweep, -D, -b, -q 4, -c UD,
# --use-srq -q 2, send_lat -a, -A CMP_AND_SWAP / FETCH_AND_ADD, -e, --out_json (validated as JSON), --report_gbits, -H/-U.
# mode: full
# (Full only: its ours<->ours half runs there too; a second run in the bare image, which
# differs only by the absence of rdma-core, would add CI time and no coverage. The bare
# suite covers the tools without rdma-core in 19-bare-all-tools, 71 and 72.)
# timeout: 420
. "$VMTEST_LIB"
X=(-d "$RXE_DEV" -x "$RXE_GID_IDX")
full() { [ "$RXE_VM_MODE" = full ]; }
ours() { rperftest "$@"; }

log "== -a sweep (write_bw, ours<->ours): 23 sizes"
pair ib_write_bw rperftest ib_write_bw "${X[@]}" -a -n 5 -- rperftest ib_write_bw "${X[@]}" -a -n 5 "$RXE_IP"
n=$(grep -cE '^ [0-9]+ +5 ' "$VMTEST_TMP/client.out"); [ "$n" = 23 ] || fail "-a printed $n lines, want 23"
if full; then
    log "== -a sweep (send_bw, ours -> C server)"
    pair ib_send_bw ib_send_bw "${X[@]}" -a -n 5 -- rperftest ib_send_bw "${X[@]}" -a -n 5 "$RXE_IP"
    n=$(grep -cE '^ [0-9]+ +5 ' "$VMTEST_TMP/client.out"); [ "$n" = 23 ] || fail "send -a printed $n lines, want 23"
fi

log "== -D 4 (write_bw)"
pair ib_write_bw rperftest ib_write_bw "${X[@]}" -D 4 -s 4096 -- rperftest ib_write_bw "${X[@]}" -D 4 -s 4096 "$RXE_IP"
if full; then
    pair ib_write_bw ib_write_bw "${X[@]}" -D 4 -s 4096 -- rperftest ib_write_bw "${X[@]}" -D 4 -s 4096 "$RXE_IP"
    log "== -D 4 (send_bw, C client -> ours)"
    pair ib_send_bw rperftest ib_send_bw "${X[@]}" -D 4 -s 4096 -- ib_send_bw "${X[@]}" -D 4 -s 4096 "$RXE_IP"
fi

log "== -b (write_bw, read_bw)"
pair ib_write_bw rperftest ib_write_bw "${X[@]}" -b -n 200 -s 4096 -- rperftest ib_write_bw "${X[@]}" -b -n 200 -s 4096 "$RXE_IP"
grep -q "Bidirectional" "$VMTEST_TMP/client.out" || fail "no Bidirectional title"
log "== -b (send_bw)"
pair ib_send_bw rperftest ib_send_bw "${X[@]}" -b -n 200 -s 4096 -- rperftest ib_send_bw "${X[@]}" -b -n 200 -s 4096 "$RXE_IP"
if full; then
    pair ib_send_bw ib_send_bw "${X[@]}" -b -n 200 -s 4096 -- rperftest ib_send_bw "${X[@]}" -b -n 200 -s 4096 "$RXE_IP"
    pair ib_send_bw rperftest ib_send_bw "${X[@]}" -b -n 200 -s 4096 -- ib_send_bw "${X[@]}" -b -n 200 -s 4096 "$RXE_IP"
fi
if full; then
    pair ib_read_bw ib_read_bw "${X[@]}" -b -n 200 -s 4096 -- rperftest ib_read_bw "${X[@]}" -b -n 200 -s 4096 "$RXE_IP"
fi

log "== -q 4"
pair ib_write_bw rperftest ib_write_bw "${X[@]}" -q 4 -n 100 -s 4096 -- rperftest ib_write_bw "${X[@]}" -q 4 -n 100 -s 4096 "$RXE_IP"
n=$(grep -c ' local address' "$VMTEST_TMP/client.out"); [ "$n" = 4 ] || fail "-q 4 printed $n local addresses"
if full; then
    pair ib_send_bw ib_send_bw "${X[@]}" -q 4 -n 100 -s 4096 -- rperftest ib_send_bw "${X[@]}" -q 4 -n 100 -s 4096 "$RXE_IP"
fi

log "== --use-srq -q 2 (send_bw): the QPs share the SRQ's -r receives (perftest's size_per_qp)"
pair ib_send_bw rperftest ib_send_bw "${X[@]}" --use-srq -q 2 -n 200 -s 4096 -- rperftest ib_send_bw "${X[@]}" --use-srq -q 2 -n 200 -s 4096 "$RXE_IP"
grep -q "Using SRQ      : ON" "$VMTEST_TMP/client.out" || fail "header does not say SRQ ON"
if full; then
    pair ib_send_bw ib_send_bw "${X[@]}" --use-srq -q 2 -n 200 -s 4096 -- rperftest ib_send_bw "${X[@]}" --use-srq -q 2 -n 200 -s 4096 "$RXE_IP"
    pair ib_send_bw rperftest ib_send_bw "${X[@]}" --use-srq -q 4 -n 200 -s 4096 -- ib_send_bw "${X[@]}" --use-srq -q 4 -n 200 -s 4096 "$RXE_IP"
fi

log "== send_lat -a -n 10: every size starts with its own receives (none left over)"
pair ib_send_lat rperftest ib_send_lat "${X[@]}" -a -n 10 -- rperftest ib_send_lat "${X[@]}" -a -n 10 "$RXE_IP"
n=$(grep -cE '^ [0-9]+ +10 ' "$VMTEST_TMP/client.out"); [ "$n" = 23 ] || fail "send_lat -a printed $n lines, want 23"
if full; then
    pair ib_send_lat ib_send_lat "${X[@]}" -a -n 10 -- rperftest ib_send_lat "${X[@]}" -a -n 10 "$RXE_IP"
    n=$(grep -cE '^ [0-9]+ +10 ' "$VMTEST_TMP/client.out"); [ "$n" = 23 ] || fail "send_lat -a (C server) printed $n lines, want 23"
    pair ib_send_lat rperftest ib_send_lat "${X[@]}" -a -n 10 -- ib_send_lat "${X[@]}" -a -n 10 "$RXE_IP"
fi

log "== -c UD (send_bw, send_lat)"
pair ib_send_bw rperftest ib_send_bw "${X[@]}" -c UD -n 200 -- rperftest ib_send_bw "${X[@]}" -c UD -n 200 "$RXE_IP"
grep -q "Connection type : UD" "$VMTEST_TMP/client.out" || fail "not UD"
if full; then
    pair ib_send_bw ib_send_bw "${X[@]}" -c UD -n 200 -- rperftest ib_send_bw "${X[@]}" -c UD -n 200 "$RXE_IP"
    pair ib_send_lat rperftest ib_send_lat "${X[@]}" -c UD -n 100 -- ib_send_lat "${X[@]}" -c UD -n 100 "$RXE_IP"
fi

for A in CMP_AND_SWAP FETCH_AND_ADD; do
    log "== -A $A"
    pair ib_atomic_bw rperftest ib_atomic_bw "${X[@]}" -A $A -n 200 -- rperftest ib_atomic_bw "${X[@]}" -A $A -n 200 "$RXE_IP"
    grep -q "Atomic $A BW Test" "$VMTEST_TMP/client.out" || fail "title lacks $A"
    if full; then
        pair ib_atomic_lat ib_atomic_lat "${X[@]}" -A $A -n 100 -- rperftest ib_atomic_lat "${X[@]}" -A $A -n 100 "$RXE_IP"
    fi
done

log "== -e (events)"
pair ib_send_bw rperftest ib_send_bw "${X[@]}" -e -n 200 -s 4096 -- rperftest ib_send_bw "${X[@]}" -e -n 200 -s 4096 "$RXE_IP"
grep -q "Test with events" "$VMTEST_TMP/client.out" || fail "no events line"
pair ib_read_lat rperftest ib_read_lat "${X[@]}" -e -n 100 -- rperftest ib_read_lat "${X[@]}" -e -n 100 "$RXE_IP"
if full; then
    pair ib_send_lat ib_send_lat "${X[@]}" -e -n 100 -- rperftest ib_send_lat "${X[@]}" -e -n 100 "$RXE_IP"
fi

log "== --out_json (valid JSON on both sides), --report_gbits"
pair ib_write_bw rperftest ib_write_bw "${X[@]}" -n 200 -s 4096 --report_gbits --out_json --out_json_file srv.json -- \
    rperftest ib_write_bw "${X[@]}" -n 200 -s 4096 --report_gbits --out_json --out_json_file cli.json "$RXE_IP"
grep -q "BW average\[Gb/sec\]" "$VMTEST_TMP/client.out" || fail "no Gb/sec column"
expect_rc 0 rperftest check-json cli.json srv.json
expect_contains '"BW_average"' cli.json
pair ib_send_lat rperftest ib_send_lat "${X[@]}" -n 100 --out_json -- rperftest ib_send_lat "${X[@]}" -n 100 "$RXE_IP"
expect_rc 0 rperftest check-json perftest_out.json
expect_contains '"t_avg"' perftest_out.json
printf '{"a": [1, 2,]}' > bad.json
expect_rc 1 rperftest check-json bad.json

log "== -U / -H (write_lat)"
pair ib_write_lat rperftest ib_write_lat "${X[@]}" -n 50 -U -- rperftest ib_write_lat "${X[@]}" -n 50 -H "$RXE_IP"
grep -q '^#, usec' "$VMTEST_TMP/client.out" || fail "no sample dump"

log "== --loopback (one process)"
expect_rc 0 with_timeout 120 rperftest ib_write_bw "${X[@]}" -n 200 -s 4096 --loopback
bw_sane "$LAST_OUT"
expect_rc 0 with_timeout 120 rperftest ib_send_lat "${X[@]}" -n 100 --loopback
lat_sane "$LAST_OUT"
