#!/bin/bash
# Latency tools (issue #5): -D ends cleanly on both sides of write_lat and send_lat (ours<->ours,
# ours -> C server, C client -> ours), -f/--margin sets the sample window (checked through the
# result line: iterations / tps average = the window in seconds), DURATION > 2*MARGIN is refused,
# --latency_gap spaces every post (t_min >= the gap, which no run without it reaches here), and a
# write_lat -D peer killed mid-run is still an error.
# mode: full
# (Full only: its ours<->ours half runs there too; a second run in the bare image, which
# differs only by the absence of rdma-core, would add CI time and no coverage. The bare
# suite covers the tools without rdma-core in 19-bare-all-tools, 71 and 72.)
# timeout: 900
. "$VMTEST_LIB"
X=(-d "$RXE_DEV" -x "$RXE_GID_IDX")
full() { [ "$RXE_VM_MODE" = full ]; }

# window_is FILE SECS TOL: FILE has a -D result line (#bytes #iterations t_avg tps, all > 0) whose
# sample window, iterations / tps average, is SECS within TOL (a fraction). Ours computes the
# window from its planned edges (exact); C measures it with its own clock (noisier under TCG).
window_is() {
    local w
    w=$(awk '/^ [0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+ *$/ { if (NF == 4 && $2 > 0 && $3 > 0 && $4 > 0) { printf "%.3f", $2 / $4; ok=1 } } END{exit !ok}' "$1") \
        || { cat "$1"; fail "no -D result line (iterations, t_avg, tps all > 0) in $1"; }
    log "$1: sample window $w s (want $2 s +- $3)"
    awk -v w="$w" -v s="$2" -v t="$3" 'BEGIN{exit !(w >= s * (1 - t) && w <= s * (1 + t))}' || { cat "$1"; fail "$1: window $w s, want $2 s"; }
}

# dpair WHO_SRV WHO_CLI TOOL SECS OPTS...: a -D run of TOOL with OPTS on both sides; WHO is ours or
# C. Both sides must exit 0 (the server within 30 s of the client) and print a sane -D line
# (C's line is not checked when its CPU-clock calibration failed, see lib.sh; retried twice).
# Leaves the outputs in srv.out / cli.out and checks both windows are SECS.
dpair() {
    local ws=$1 wc=$2 tool=$3 secs=$4; shift 4
    local srv=("$tool") cli=("$tool") try
    [ "$ws" = ours ] && srv=(rperftest "$tool")
    [ "$wc" = ours ] && cli=(rperftest "$tool")
    for try in 1 2 3; do
        log "== $tool $* : $ws server <- $wc client (try $try)"
        start_server -t 60 "${srv[@]}" "${X[@]}" "$@"
        run with_timeout 120 "${cli[@]}" "${X[@]}" "$@" "$RXE_IP"
        cp "$LAST_OUT" cli.out
        mark
        wait_server 60
        cp "$SERVER_LOG" srv.out
        if [ $try -lt 3 ] && c_clock_flaked cli.out srv.out; then
            log "C perftest could not calibrate its clock; retrying the pair"
            continue
        fi
        # C perftest's -D server has been seen not to end at all on a heavily loaded host (CI
        # with every core busy; killed by wait_server, rc 143). It is the oracle here, not
        # what is tested: retry it. Our own server that does not end still fails at once.
        if [ $try -lt 3 ] && [ "$ws" = C ] && [ "$LAST_RC" = 0 ] && [ "$SERVER_RC" -ge 128 ]; then
            log "C perftest's server did not end (rc=$SERVER_RC); retrying the pair"
            continue
        fi
        break
    done
    [ "$LAST_RC" = 0 ] || fail "$tool client ($wc) rc=$LAST_RC"
    [ "$SERVER_RC" = 0 ] || fail "$tool server ($ws) rc=$SERVER_RC"
    bound 30 "$tool server end after the client's"
    local f who
    for f in srv.out cli.out; do
        who=$ws; [ $f = cli.out ] && who=$wc
        if [ "$who" = C ]; then
            if c_clock_flaked "$f"; then
                log "$f: C's clock calibration failed; its line is not checked"
            else
                window_is "$f" "$secs" 0.25
            fi
        elif [ $f = cli.out ] || [ "$tool" = ib_write_lat ] || [ "$tool" = ib_send_lat ]; then
            window_is "$f" "$secs" 0.01   # (read/atomic_lat servers print no result line)
        fi
    done
    expect_not_contains "peer closed" srv.out
    expect_not_contains "no progress" srv.out
}

log "==== -D: both sides end at their own end, exit 0, sane line (default margin D/4)"
for tool in ib_write_lat ib_send_lat; do
    dpair ours ours "$tool" 2 -D 4       # margin 1: window 2 s
    if full; then
        dpair C ours "$tool" 2 -D 4
        dpair ours C "$tool" 2 -D 4
    fi
done
log "== -D 2 (margin 0: the whole run is sampled), write_lat ours<->ours"
dpair ours ours ib_write_lat 2 -D 2

log "==== -f/--margin: -D 6 -f 2 samples 2 s (the default margin would sample 4 s)"
dpair ours ours ib_write_lat 2 -D 6 -f 2
dpair ours ours ib_send_lat 2 -D 6 -f 2
dpair ours ours ib_read_lat 2 -D 6 -f 2
if full; then
    dpair C ours ib_send_lat 2 -D 6 -f 2
    dpair ours C ib_send_lat 2 -D 6 -f 2
fi
log "== -f 0 -D 3: window = the whole 3 s"
dpair ours ours ib_send_lat 3 -D 3 -f 0
log "== DURATION > 2*MARGIN is checked"
expect_rc 1 rperftest ib_send_lat "${X[@]}" -D 4 -f 2 "$RXE_IP"
expect_contains "DURATION > 2*MARGIN"

log "==== --latency_gap: every sample includes the gap"
G=50000   # 50 ms: far above what one round trip takes here, so only the gap can explain it
# gap_min FILE MIN: the latency line's t_min (column 3) is at least MIN usec
gap_min() {
    awk -v m="$2" '/^ [0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+/ { if (NF >= 9) { t = $3; ok = 1 } } END{ if (!ok) exit 2; print t; exit !(t >= m) }' "$1" >t_min.txt
    local rc=$? t; t=$(cat t_min.txt)
    [ $rc = 2 ] && { cat "$1"; fail "no latency result line in $1"; }
    log "$1: t_min $t usec (want >= $2)"
    [ $rc = 0 ] || { cat "$1"; fail "$1: t_min $t usec < $2 usec with --latency_gap"; }
}
# no_gap_min FILE: without the gap the fastest sample stays below it (shows the check can fail)
no_gap_min() {
    awk -v m="$G" '/^ [0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+/ { if (NF >= 9) { t = $3; ok = 1 } } END{ if (!ok) exit 2; exit !(t < m) }' "$1" \
        || { cat "$1"; fail "$1: t_min without a gap is not below $G usec"; }
}
lpair() {   # lpair WHO_SRV WHO_CLI TOOL SRV_OPTS -- CLI_OPTS (WHO: ours or C)
    local ws=$1 wc=$2 tool=$3; shift 3
    local so=() co=()
    while [ "$1" != -- ]; do so+=("$1"); shift; done; shift; co=("$@")
    local srv=("$tool") cli=("$tool")
    [ "$ws" = ours ] && srv=(rperftest "$tool")
    [ "$wc" = ours ] && cli=(rperftest "$tool")
    log "== $tool: $ws server (${so[*]}) <- $wc client (${co[*]})"
    start_server -t 60 "${srv[@]}" "${X[@]}" "${so[@]}"
    run with_timeout 120 "${cli[@]}" "${X[@]}" "${co[@]}" "$RXE_IP"
    cp "$LAST_OUT" cli.out
    wait_server 60
    cp "$SERVER_LOG" srv.out
    [ "$LAST_RC" = 0 ] || fail "$tool client rc=$LAST_RC"
    [ "$SERVER_RC" = 0 ] || fail "$tool server rc=$SERVER_RC"
}
lpair ours ours ib_send_lat -n 20 -- -n 20
no_gap_min cli.out
no_gap_min srv.out
# both sides wait G before each send: each round trip holds two gaps, the one-way value >= G
lpair ours ours ib_send_lat -n 20 --latency_gap $G -- -n 20 --latency_gap $G
gap_min cli.out $G
gap_min srv.out $G
lpair ours ours ib_write_lat -n 20 --latency_gap $G -- -n 20 --latency_gap $G
gap_min cli.out $G
gap_min srv.out $G
# read_lat: no ping-pong, each sample is one read after the gap
lpair ours ours ib_read_lat -n 20 -- -n 20 --latency_gap $G
gap_min cli.out $G
if full; then
    # Against C only our own gap is certain to be in every round trip (C scales its gap by the
    # CPU clock rate it calibrates, which fails now and then under TCG): the one-way value >= G/2.
    lpair C ours ib_send_lat -n 20 --latency_gap $G -- -n 20 --latency_gap $G
    gap_min cli.out $((G / 2))
    lpair C ours ib_read_lat -n 20 -- -n 20 --latency_gap $G
    gap_min cli.out $G
    lpair ours C ib_send_lat -n 20 --latency_gap $G -- -n 20 --latency_gap $G
    gap_min srv.out $((G / 2))
fi

log "==== write_lat -D: a peer killed mid-run is still an error (not a normal end)"
start_server -t 60 rperftest ib_write_lat "${X[@]}" -D 30
rperftest ib_write_lat "${X[@]}" -D 30 "$RXE_IP" >killed.log 2>&1 &
C=$!; _VMTEST_BG+=("$C")
wait_for_text killed.log "#bytes" 60
sleep 3
mark; kill -KILL "$C"
wait_server 20
bound 10 "server end after its client was killed"
[ "$SERVER_RC" != 0 ] || fail "server exited 0 after its client was killed mid-run"
expect_contains "peer closed the connection during the test" "$SERVER_LOG"
log "all latency options checked"
