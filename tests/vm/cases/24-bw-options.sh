#!/bin/bash
# BW options of issue #5: the SW rate limiter (--rate_limit, --rate_units M|p, --rate_limit_type
# SW and the implicit HW type, which falls back to SW as C 6.06 does on rxe; --burst_size), the
# --report-both blocks with -b, and ib_send_bw -b -D (duplex send in duration mode).
# Ours<->ours, ours -> C server and C client -> ours (limiter on our side).
# mode: full
# (Full only: its ours<->ours half runs there too; a second run in the bare image, which
# differs only by the absence of rdma-core, would add CI time and no coverage. The bare
# suite covers the tools without rdma-core in 19-bare-all-tools, 71 and 72.)
# timeout: 600
. "$VMTEST_LIB"
X=(-d "$RXE_DEV" -x "$RXE_GID_IDX")
full() { [ "$RXE_VM_MODE" = full ]; }

# avg FILE [N]: BW average (column 4) of the N-th result line (default 1) in FILE
avg() { awk -v n="${2:-1}" '/^ [0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+/ { if (++k == n) { print $4; exit } }' "$1"; }
# rate FILE [N]: MsgRate (column 5) of the N-th result line
rate() { awk -v n="${2:-1}" '/^ [0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+/ { if (++k == n) { print $5; exit } }' "$1"; }
# within V LO HI WHAT: fail unless LO <= V <= HI
within() {
    log "$4: $1 (want $2 .. $3)"
    awk -v v="$1" -v a="$2" -v b="$3" 'BEGIN{exit !(v != "" && v + 0 >= a && v + 0 <= b)}' || fail "$4: $1 not in $2 .. $3"
}
# limited LO HI WHAT FIELD PAIR-ARGS...: run `pair PAIR-ARGS...`; FIELD (avg|rate) of the
# client's line must be in LO..HI. Above HI fails at once (the limiter must never let more
# through). Below LO is retried twice: under TCG on a loaded host the guest is starved and each
# burst starts late (C perftest's limiter measures as low there, same arithmetic).
limited() {
    local lo=$1 hi=$2 what=$3 field=$4 try v; shift 4
    for try in 1 2 3; do
        pair "$@"
        v=$($field "$VMTEST_TMP/client.out")
        awk -v v="$v" -v b="$hi" 'BEGIN{exit !(v != "" && v + 0 <= b)}' || fail "$what: $v above $hi"
        awk -v v="$v" -v a="$lo" 'BEGIN{exit !(v + 0 >= a)}' && break
        log "$what: $v below $lo (try $try; host load)"
    done
    within "$v" "$lo" "$hi" "$what"
}
# block_line FILE TITLE: the result line of the "Local results"/"Remote results" block
block_line() { awk -v t="$2" 'index($0, t) { f = 1 } f && /^ [0-9]+ +[0-9]+ / { print; exit }' "$1"; }
# skeleton FILE: the report-both part with result lines masked (layout only)
skeleton() { sed -n '/Local results/,$p' "$1" | sed -E 's/^ [0-9]+ +[0-9]+ .*/<result line>/'; }

# Limits: TCG reaches ~30 MB/s unlimited with 64 KiB messages (write_bw -D 4), so 8 MiB/s is
# well below it: 128 msg/s in bursts of 16, a burst every 125 ms.
LIM=(--rate_limit 8 --rate_units M --rate_limit_type SW --burst_size 16)

log "== write_bw -D 4 unlimited (for comparison), then limited to 8 MB/s, ours <-> ours"
pair ib_write_bw rperftest ib_write_bw "${X[@]}" -D 4 -- rperftest ib_write_bw "${X[@]}" -D 4 "$RXE_IP"
unlimited=$(avg "$VMTEST_TMP/client.out")
limited 4 8.4 "write_bw SW limit 8 MB/s, client average" avg \
    ib_write_bw rperftest ib_write_bw "${X[@]}" -D 4 -- rperftest ib_write_bw "${X[@]}" -D 4 "${LIM[@]}" "$RXE_IP"
limited=$(avg "$VMTEST_TMP/client.out")
within "$(avg "$SERVER_LOG")" 4 8.4 "write_bw SW limit 8 MB/s, server's copy"
awk -v l="$limited" -v u="$unlimited" 'BEGIN{exit !(l < u)}' || fail "limited $limited MB/s is not below unlimited $unlimited MB/s"
log "unlimited $unlimited MB/s, limited $limited MB/s"

log "== --rate_limit alone (perftest's default HW type): C 6.06's fallback message, then the SW limiter"
# Bursts of tx depth 128 x 64 KiB (8 MiB) at 10 MB/s: one every 0.84 s, so a 4 s window holds 4
# or 5 of them and the average lands anywhere from ~8 to 10 MB/s (seen: 8.00, 8.73). What must
# hold is the limit asked for.
limited 4 10.5 "write_bw implicit HW -> SW 10 MB/s (bursts of tx depth 128)" avg \
    ib_write_bw rperftest ib_write_bw "${X[@]}" -D 4 -- rperftest ib_write_bw "${X[@]}" -D 4 --rate_limit 10 --rate_units M "$RXE_IP"
grep -qF "The QP failed to accept HW rate limit, providing SW rate limit" "$VMTEST_TMP/client.out" || fail "no HW fallback message"

log "== send_bw --rate_units p: 100 msg/s of 64 KiB = 6.25 MB/s, ours <-> ours"
limited 0.00005 0.000105 "send_bw 100 pps, client MsgRate [Mpps]" rate ib_send_bw rperftest ib_send_bw "${X[@]}" -D 4 -- \
    rperftest ib_send_bw "${X[@]}" -D 4 --rate_limit 100 --rate_units p --rate_limit_type SW --burst_size 10 "$RXE_IP"
within "$(avg "$VMTEST_TMP/client.out")" 3.1 6.6 "send_bw 100 pps, client average [MB/s]"
within "$(avg "$SERVER_LOG")" 3.1 6.6 "send_bw 100 pps, server (receiver) average [MB/s]"

log "== bad limiter values: one line, exit 1, no hang"
expect_rc 1 with_timeout 10 rperftest ib_write_bw "${X[@]}" --rate_limit 100 --rate_units p --rate_limit_type SW --burst_size 200
expect_contains "less than one burst of 200"
expect_rc 1 with_timeout 10 rperftest ib_write_bw "${X[@]}" --rate_limit 7
expect_contains "Unknown rate limit value '7'"
# (explicit --rate_limit_type HW fails at connect time, as C 6.06 on rxe: case 32-hw-options)
expect_rc 1 with_timeout 10 rperftest ib_write_bw "${X[@]}" --rate_limit 10 --rate_limit_type HW -R
expect_contains "HW rate limit isn't supported yet with rdma_cm scenarios"
expect_rc 1 with_timeout 10 rperftest ib_send_bw "${X[@]}" -b --rate_limit 10 --rate_limit_type SW
expect_contains "bidirectional SEND"

log "== --report-both with -b (write_bw), ours <-> ours"
pair ib_write_bw rperftest ib_write_bw "${X[@]}" -b -n 500 --report-both -- \
    rperftest ib_write_bw "${X[@]}" -b -n 500 --report-both "$RXE_IP"
for f in "$VMTEST_TMP/client.out" "$SERVER_LOG"; do
    grep -qxF " Local results: " "$f" || fail "no Local results block in $f"
    grep -qxF " Remote results: " "$f" || fail "no Remote results block in $f"
    n=$(grep -cE '^ 65536 +500 ' "$f"); [ "$n" = 3 ] || fail "$n result lines in $f, want 3 (summed, local, remote)"
    # summed average = local + remote (each printed with 2 decimals)
    awk '/^ 65536 +500 / { v[++k] = $4 } END { d = v[1] - v[2] - v[3]; exit !(d < 0.03 && d > -0.03) }' "$f" \
        || fail "summed line is not local + remote in $f"
done
[ "$(block_line "$VMTEST_TMP/client.out" "Local results")" = "$(block_line "$SERVER_LOG" "Remote results")" ] \
    || fail "client's local line differs from the server's remote line"
[ "$(block_line "$SERVER_LOG" "Local results")" = "$(block_line "$VMTEST_TMP/client.out" "Remote results")" ] \
    || fail "server's local line differs from the client's remote line"

log "== send_bw -b -D 4, ours <-> ours (each side prints its own line; no report exchange)"
pair ib_send_bw rperftest ib_send_bw "${X[@]}" -b -D 4 -- rperftest ib_send_bw "${X[@]}" -b -D 4 "$RXE_IP"
grep -q "Send Bidirectional BW Test" "$VMTEST_TMP/client.out" || fail "no bidirectional title"
n=$(grep -cE '^ 65536 +[0-9]+ ' "$VMTEST_TMP/client.out"); [ "$n" = 1 ] || fail "client printed $n result lines, want 1"

if full; then
    log "== write_bw limited 8 MB/s: ours -> C server"
    limited 4 8.4 "ours -> C, our client's average" avg \
        ib_write_bw ib_write_bw "${X[@]}" -D 4 -- rperftest ib_write_bw "${X[@]}" -D 4 "${LIM[@]}" "$RXE_IP"
    within "$(avg "$SERVER_LOG")" 4 8.4 "ours -> C, the C server's copy"

    log "== write_bw -b -D 4: C client -> ours (our server limited to 8 MB/s), --report-both on both"
    pair ib_write_bw rperftest ib_write_bw "${X[@]}" -b -D 4 --report-both "${LIM[@]}" -- \
        ib_write_bw "${X[@]}" -b -D 4 --report-both "$RXE_IP"
    ours_local=$(block_line "$SERVER_LOG" "Local results")
    c_remote=$(block_line "$VMTEST_TMP/client.out" "Remote results")
    log "ours local: $ours_local / C's remote: $c_remote"
    [ "$ours_local" = "$c_remote" ] || fail "C's remote block differs from our local block"
    within "$(echo "$ours_local" | awk '{print $4}')" 4 8.4 "our limited side of the duplex run"
    [ "$(block_line "$SERVER_LOG" "Remote results")" = "$(block_line "$VMTEST_TMP/client.out" "Local results")" ] \
        || fail "our remote block differs from C's local block"
    skeleton "$SERVER_LOG" >ours.skel; skeleton "$VMTEST_TMP/client.out" >c.skel
    diff -u c.skel ours.skel || fail "--report-both layout differs from C perftest 6.06's"

    log "== --report-both: ours client -> C server (read_bw -b)"
    pair ib_read_bw ib_read_bw "${X[@]}" -b -n 300 --report-both -- rperftest ib_read_bw "${X[@]}" -b -n 300 --report-both "$RXE_IP"
    [ "$(block_line "$VMTEST_TMP/client.out" "Local results")" = "$(block_line "$SERVER_LOG" "Remote results")" ] \
        || fail "our local line differs from the C server's remote line"

    log "== send_bw -b -D 4: ours -> C server, C client -> ours"
    pair ib_send_bw ib_send_bw "${X[@]}" -b -D 4 -- rperftest ib_send_bw "${X[@]}" -b -D 4 "$RXE_IP"
    pair ib_send_bw rperftest ib_send_bw "${X[@]}" -b -D 4 -- ib_send_bw "${X[@]}" -b -D 4 "$RXE_IP"
fi
log "all BW options checked"
