#!/bin/bash
# Plots and compare (issue 24), ours<->ours: ib_write_bw -a and ib_send_lat -a with --plot and
# --series draw SVGs of the right shape (python3 is not in the guest: the structure is checked
# here with grep, well-formedness by the host unit tests of the same renderer); rperftest plot
# redraws the series as SVG and HTML; rperftest compare of two runs of the same test exits 0
# and of a run with the sender throttled (SW rate limiter at a fifth of the base's message rate:
# tc on the dummy netdev does not slow rxe loopback, whose packets never reach the qdisc) exits
# 1 naming the size; a
# --run_infinitely run whose client is stopped for 3 s in the middle has that interval marked.
# mode: full
# (Full only: the bare image would rerun the same ours<->ours runs; 19-bare-all-tools
# covers the tools without rdma-core.)
# timeout: 240
. "$VMTEST_LIB"
X=(-d "$RXE_DEV" -x "$RXE_GID_IDX")

# svg_shape FILE WHAT...: one <svg> root that is closed, every <text> closed, and each WHAT
# as a text label.
svg_shape() {
    local f=$1 o c w; shift
    [ -s "$f" ] || fail "$f missing or empty"
    head -c 4 "$f" | grep -q '<svg' || fail "$f does not start with <svg"
    tail -n 1 "$f" | grep -q '^</svg>$' || fail "$f does not end with </svg>"
    [ "$(grep -c '<svg' "$f")" = 1 ] || fail "$f has more than one <svg>"
    o=$(grep -c '<text' "$f"); c=$(grep -c '</text>' "$f")
    [ "$o" = "$c" ] && [ "$o" -gt 10 ] || fail "$f: $o <text> but $c </text>"
    for w in "$@"; do grep -qxF -- "$w" "$f" || fail "$f lacks the label '$w'"; done
    log "$f: $(wc -c <"$f") bytes, $o labels"
}

log "== write_bw -a --plot --series"
pair ib_write_bw rperftest ib_write_bw "${X[@]}" -a -n 5 -- \
    rperftest ib_write_bw "${X[@]}" -a -n 5 --plot bw.svg --series bw.jsonl "$RXE_IP"
svg_shape bw.svg "Message size [bytes]" "Bandwidth [MB/sec]" "Message rate [Mpps]" "BW average" "8M" "2"
[ "$(grep -c '"results"' bw.jsonl)" = 23 ] || fail "bw.jsonl holds $(grep -c '"results"' bw.jsonl) lines, want 23"

log "== send_lat -a --plot --series"
pair ib_send_lat rperftest ib_send_lat "${X[@]}" -a -n 5 -- \
    rperftest ib_send_lat "${X[@]}" -a -n 5 --plot lat.svg --series lat.jsonl "$RXE_IP"
svg_shape lat.svg "Latency [usec]" t_min t_typical t_avg p99 p99.9 "Message size [bytes]"

log "== send_lat -s 2 -H --plot: histogram and CDF"
pair ib_send_lat rperftest ib_send_lat "${X[@]}" -s 2 -n 200 -- \
    rperftest ib_send_lat "${X[@]}" -s 2 -n 200 -H --plot hist.svg "$RXE_IP"
svg_shape hist.svg "Latency CDF" "Samples at or below [%]" CDF

log "== rperftest plot: overlay as SVG and HTML"
expect_rc 0 rperftest plot bw.jsonl bw.jsonl --label one --label two -o overlay.svg
svg_shape overlay.svg "one: BW average" "two: BW average"
expect_rc 0 rperftest plot lat.jsonl -o lat.html --json
expect_contains '"kind": "sweep"'
grep -q '^<!DOCTYPE html>' lat.html && grep -q '<svg' lat.html && ! grep -q '<script' lat.html || fail "lat.html is not a self-contained page"

log "== compare: two plain runs, then one with the sender throttled"
one() { # one NAME CLIENT-OPTS...: a 64 KiB write_bw -D 2 run with --out_json NAME
    local name=$1; shift
    pair ib_write_bw rperftest ib_write_bw "${X[@]}" -s 65536 -D 2 -- \
        rperftest ib_write_bw "${X[@]}" -s 65536 -D 2 --out_json --out_json_file "$name" "$@" "$RXE_IP"
}
one base.json
one new.json
# -D runs under TCG on a shared host move by 10-20% between runs; 40% separates that noise from
# a sender throttled to a fifth of the base run's message rate (the SW limiter, messages/s:
# a fixed MB/s limit can sit above what a loaded host reaches at all).
expect_rc 0 rperftest compare base.json new.json --tolerance 40%
expect_contains "No regression beyond 40%"
pps=$(awk -F': *' '/"MsgRate"/ { r = $2 + 0; p = int(r * 1e6 / 5); print (p < 2 ? 2 : p) }' base.json)
log "base run: $(grep '"MsgRate"' base.json); throttled to $pps messages/s"
one slow.json --rate_limit "$pps" --rate_units p --rate_limit_type SW --burst_size 1
expect_rc 1 rperftest compare base.json slow.json --tolerance 40%
expect_contains "REGRESSION"
expect_contains "at sizes 65536"
expect_rc 1 rperftest compare base.json slow.json --tolerance 40% --json
expect_contains '"regressed_sizes": ['

log "== burn-in: --run_infinitely, client stopped for 3 s in the middle"
start_server -t 60 rperftest ib_write_bw "${X[@]}" -s 65536 -D 1 --run_infinitely
rperftest ib_write_bw "${X[@]}" -s 65536 -D 1 --run_infinitely --series soak.jsonl --plot soak.svg "$RXE_IP" >soak.out 2>&1 &
cli=$!
_VMTEST_BG+=("$cli")
wait_for_text soak.out " 65536 " 30
sleep 4
kill -STOP "$cli"; sleep 3; kill -CONT "$cli"
sleep 4
kill -INT "$cli"
wait_pid "$cli" 20
cat soak.out
expect_contains "Intervals more than 10% below the running median:" soak.out
grep -qE 'running median: [1-9][0-9]* of' soak.out || fail "the stopped interval was not counted"
svg_shape soak.svg "Time since start [s]" "Bandwidth [MB/sec]"
grep -q 'more than 10% below running median ([1-9]' soak.svg || fail "soak.svg has no marked interval"
expect_rc 0 rperftest plot soak.jsonl -o soak2.html --drop 10%
expect_contains "below the running median: "
wait_server 20
# With run-suite -v, the artefacts into the log for a host-side XML parse and render
# (tests/plot-render.sh --from-log): one "ARTEFACT name" line, then the file, "| " before
# each line.
if [ "${VMTEST_VERBOSE:-0}" = 1 ]; then
    for f in bw.svg lat.svg hist.svg soak.svg overlay.svg lat.html bw.jsonl lat.jsonl soak.jsonl; do
        echo "ARTEFACT $f"; sed 's/^/| /' "$f"
    done
fi
log "ok"
