#!/bin/bash
# The slow iterations of a round-trip-split run (bench/scripts/round-trip-split.sh), and the two
# halves of a ping-pong. Reads the same traces as round-trip-split-table.sh; with RTS_EVENTS
# "sched/sched_switch irq_vectors/local_timer_entry irq/irq_handler_entry" recorded it also says
# what else ran while a slow iteration was in flight.
#
#   bench/scripts/round-trip-tail.sh RESULT_DIR > tail.md
#
# Also writes RESULT_DIR/tail-runs.tsv (one line per run) and RESULT_DIR/tail-iters.tsv (one line
# per iteration: tool impl run k, round trip, c_in, c→s, s→c in ns, then how many context
# switches, local timer interrupts and other interrupts overlapped it).
# tail-runs.tsv columns: tool impl run, ping-pong (1/0), iterations, p50, p99, median c_in, c→s,
# s→c, slow iterations, their shares with a switch / timer / irq / none, their mean excess in
# c_in, c→s, s→c, shares of all iterations with a switch / timer, switch and timer events in the
# trace, iterations over 2×p50, timer-hit iterations, timer-hit iterations over 2×p50.
#
# One iteration is the client's doorbell to its next doorbell (the client stamps just before it
# posts, so this is the round trip it reports). It is cut at the doorbells of both processes:
#   c_in   inside the client's write()   (rxe runs the requester, and for writes and sends the
#                                          responder and the completion, in the caller's context)
#   c→s    the client's doorbell entry → the server's next doorbell entry: the client's kernel
#          path up to the data landing, plus the server noticing it and posting its answer
#   s→c    the server's doorbell entry → the client's next doorbell entry: the same, mirrored
# (ping-pongs only: write_lat, send_lat), or for a client-only loop (read/atomic_lat)
#   between  the client's write() return → its next doorbell
# The kernel part of each half is the same code for both implementations; what differs between
# them is the noticing and the posting. The slow iterations are those at or above the run's own
# 99th percentile (20 of 2000); for them the table gives the share that overlapped a context
# switch, a local timer interrupt or another interrupt (on any CPU), and which segment carried
# the excess over the run's median iteration.
set -euo pipefail
RT_LIB_DIR=$(dirname "${BASH_SOURCE[0]}")
. "$RT_LIB_DIR/round-trip-lib.sh"
rt_open "${1:?usage: round-trip-tail.sh RESULT_DIR}"

: >"$W/runs"
: >"$W/iters"
for f in "$D"/trace.*.txt; do
    [ -e "$f" ] || continue
    rt_trace "$f"
    # One line per run: tool impl run, then the run's figures (see the header of the table).
    awk -v mhz="$MHZ" -v srv="$srv" -v id="$tool	$impl	$run" -v itf="$W/iters" '
        function sift(a, i, n,   c, t) {   # heap order below i (iterative: mawk limits recursion)
            while ((c = 2 * i) <= n) {
                if (c < n && a[c + 1] > a[c]) c++
                if (a[i] >= a[c]) return
                t = a[i]; a[i] = a[c]; a[c] = t; i = c
            }
        }
        function hsort(a, n,   i, t) {   # heapsort a[1..n] ascending
            for (i = int(n / 2); i >= 1; i--) sift(a, i, n)
            for (i = n; i > 1; i--) { t = a[1]; a[1] = a[i]; a[i] = t; sift(a, 1, i - 1) }
        }
        function q(a, n, p) {   # the p-quantile (nearest rank) of a[1..n]; sorts a
            hsort(a, n)
            return n ? a[int(p * (n - 1)) + 1] : 0
        }
        function ns(t) { return t * 1000 / mhz }
'"$LOOP_OF"'
        {
            cpu = 0; ev = 0
            for (i = 1; i <= NF; i++) {
                if (!cpu && $i ~ /^\[[0-9]+\]$/) cpu = i
                if (cpu && $i ~ /^[0-9.]+:$/ && i + 1 <= NF) { ev = i + 1; break }
            }
            if (!cpu || !ev) next
            pid = $(cpu - 1); sub(/.*-/, "", pid)
            ts = $(ev - 1); sub(/:$/, "", ts); ts += 0
            name = $ev
            if (name == "sys_enter:" && $(ev + 1) == "NR" && $(ev + 2) == "1") {
                cnt = $(ev + 5); sub(/,$/, "", cnt)
                # 0x20 bytes: a POST_SEND doorbell, or a set-up command of that size; any
                # other write() marks a break, and the longest unbroken run is the loop
                if (cnt != "20") { BRK[pid, N[pid] + 0] = 1; next }
                N[pid]++; E[pid, N[pid]] = ts; OPEN[pid] = 1
            } else if (name == "sys_exit:" && $(ev + 1) == "NR" && $(ev + 2) == "1") {
                if (OPEN[pid]) { X[pid, N[pid]] = ts; OPEN[pid] = 0 }
            } else if (name == "sched_switch:") {
                nsw++; SW[nsw] = ts
            } else if (name == "local_timer_entry:") {
                ntm++; TM[ntm] = ts
            } else if (name == "irq_handler_entry:") {
                nir++; IR[nir] = ts
            }
        }
        # how many of the sorted times T[1..n] fall in [a, b); *P is the cursor (times only grow)
        function count(T, n, a, b, which,   c) {
            while (P[which] <= n && T[P[which]] < a) P[which]++
            c = 0
            while (P[which] + c <= n && T[P[which] + c] < b) c++
            return c
        }
        END {
            cli = ""; for (p in N) if (p != srv && (cli == "" || N[p] > N[cli])) cli = p
            if (cli == "") exit
            pp = (srv != "" && N[srv] >= N[cli] / 2)   # a ping-pong: the server rings too
            P["sw"] = P["tm"] = P["ir"] = 1; j = 1; n = 0
            loop_of(cli)
            for (k = LO; k < HI; k++) {
                if (!((cli, k) in X)) continue
                a = E[cli, k]; z = E[cli, k + 1]
                n++; RT[n] = ns(z - a); CIN[n] = ns(X[cli, k] - a)
                if (pp) {
                    while (j <= N[srv] && E[srv, j] < a) j++
                    if (j <= N[srv] && E[srv, j] < z) { CS[n] = ns(E[srv, j] - a); SC[n] = ns(z - E[srv, j]) }
                    else { CS[n] = ns(z - a); SC[n] = 0 }
                } else {
                    CS[n] = ns(z - X[cli, k]); SC[n] = 0
                }
                HSW[n] = count(SW, nsw, a, z, "sw"); HTM[n] = count(TM, ntm, a, z, "tm"); HIR[n] = count(IR, nir, a, z, "ir")
                printf "%s\t%d\t%.0f\t%.0f\t%.0f\t%.0f\t%d\t%d\t%d\n", id, k, RT[n], CIN[n], CS[n], SC[n], HSW[n], HTM[n], HIR[n] >> itf
            }
            if (n < 10) exit
            for (i = 1; i <= n; i++) { t1[i] = RT[i]; t2[i] = CIN[i]; t3[i] = CS[i]; t4[i] = SC[i] }
            p50 = q(t1, n, 0.5); p99 = q(t1, n, 0.99)
            m_cin = q(t2, n, 0.5); m_cs = q(t3, n, 0.5); m_sc = q(t4, n, 0.5)
            slow = 0; sw = tm = ir = none = 0; x_cin = x_cs = x_sc = 0
            for (i = 1; i <= n; i++) {
                if (RT[i] < p99) continue
                slow++
                if (HSW[i]) sw++
                if (HTM[i]) tm++
                if (HIR[i]) ir++
                if (!HSW[i] && !HTM[i] && !HIR[i]) none++
                x_cin += CIN[i] - m_cin; x_cs += CS[i] - m_cs; x_sc += SC[i] - m_sc
            }
            # all iterations: how many overlapped each kind of event; how many took over twice
            # the median, and how many of those hit by a timer interrupt did
            asw = atm = s2 = th2 = 0
            for (i = 1; i <= n; i++) {
                if (HSW[i]) asw++
                if (HTM[i]) atm++
                if (RT[i] > 2 * p50) { s2++; if (HTM[i]) th2++ }
            }
            printf "%s\t%d\t%d\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.0f\t%.0f\t%.0f\t%.4f\t%.4f\t%d\t%d\t%d\t%d\t%d\n", \
                id, pp, n, p50, p99, m_cin, m_cs, m_sc, slow, sw / slow, tm / slow, ir / slow, none / slow, \
                x_cin / slow, x_cs / slow, x_sc / slow, asw / n, atm / n, nsw + 0, ntm + 0, s2, atm, th2
        }' "$f" >>"$W/runs"
done
[ -s "$W/runs" ] || { echo "no doorbell events in $D/trace.*.txt" >&2; exit 1; }
cp "$W/runs" "$D/tail-runs.tsv"
cp "$W/iters" "$D/tail-iters.tsv"

# med TOOL IMPL COL: the median over the runs of column COL (1-based in tail-runs.tsv)
med() {
    awk -F'\t' -v t="$1" -v m="$2" -v c="$3" '$1 == t && $2 == m { print $c }' "$W/runs" | sort -g |
        awk '{ v[NR] = $1 } END { if (NR) print v[int(0.5 * (NR - 1)) + 1]; else print "–" }'
}
echo "## Round-trip halves and slow iterations (ns; medians over runs)"
echo
echo "TSC ${MHZ} MHz (guest). An iteration is the client's doorbell to its next one. Halves: c→s from the"
echo "client's doorbell entry to the server's, s→c back (ping-pongs); for client-only loops c→s is the"
echo "time between the client's write() return and its next doorbell. Slow: iterations at or above the"
echo "run's p99. \"with switch/timer/irq\": the share of slow iterations during which that event happened"
echo "on any CPU; \"quiet\": none of them. Excess: the mean of (segment − its run median) over the slow ones."
echo "Last three columns, counts per run: iterations over twice the run's p50; iterations a local timer"
echo "interrupt hit; how many of those took over twice the p50."
echo
echo "| test | impl | runs | p50 | p99 | c_in | c→s | s→c | slow: with switch | timer | irq | quiet | excess c_in | c→s | s→c | all iters with switch | timer | > 2×p50 | timer-hit | timer-hit > 2×p50 |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
rt_groups
for t in $tools; do
    for m in $impls; do
        n=$(rt_runs "$t" "$m")
        [ "$n" -gt 0 ] || continue
        row="| $t | $m | $n"
        for c in 6 7 8 9 10 12 13 14 15 16 17 18 19 20 23 24 25; do
            row="$row | $(med "$t" "$m" "$c")"
        done
        echo "$row |"
    done
done
