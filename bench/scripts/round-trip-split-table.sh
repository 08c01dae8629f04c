#!/bin/bash
# Markdown table from a round-trip-split run (bench/scripts/round-trip-split-guest.sh): for each
# latency client run, every iteration split into
#   in write()   time inside the doorbell write(2) (the kernel's raw_syscalls sys_enter → sys_exit)
#   between      time from that write's return to the next doorbell write (the rest of the loop)
# and their median and 10th percentile per run; then per tool and implementation the median over
# runs (and the range of the runs), and the ratio ours/C (lower is better).
#
#   bench/scripts/round-trip-split-table.sh RESULT_DIR > table.md
#
# Reading it: with rxe, the doorbell write() runs the requester in the caller's context. For
# ib_atomic_lat the whole round trip (request, responder, response, completion) happens inside
# that write(), so "between" is user-space work only: stamp, build the request, poll the
# completion that is already there, plus the syscall's entry and exit. For ib_read_lat the
# responder runs deferred, so "between" also holds the wait for the completion; its 10th
# percentile is the iterations where the completion was ready on return.
# Only the doorbells are counted: 32-byte write()s of the process that made the most of them,
# not counting the server (its pid in server.TOOL.IMPL.RUN, when the guest wrote one): in a
# ping-pong both sides ring as many doorbells, and the client is the side that measures.
set -euo pipefail
RT_LIB_DIR=$(dirname "${BASH_SOURCE[0]}")
. "$RT_LIB_DIR/round-trip-lib.sh"
rt_open "${1:?usage: round-trip-split-table.sh RESULT_DIR}"

# q FILE P: the P-quantile (0..1) of the numbers in FILE (nearest rank on the sorted values)
q() { sort -n "$1" | awk -v p="$2" '{ v[NR] = $1 } END { if (NR) { i = int(p * (NR - 1)) + 1; print v[i] } }'; }

: >"$W/runs"
for f in "$D"/trace.*.txt; do
    [ -e "$f" ] || continue
    rt_trace "$f"
    # per iteration: "k u" in ns (u is empty for the first doorbell)
    awk -v mhz="$MHZ" -v kf="$W/k" -v uf="$W/u" -v srv="$srv" '
'"$LOOP_OF"'
        {
            cpu = 0; ev = 0
            for (i = 1; i <= NF; i++) {
                if (!cpu && $i ~ /^\[[0-9]+\]$/) cpu = i
                if ($i == "sys_enter:" || $i == "sys_exit:") { ev = i; break }
            }
            if (!cpu || !ev || $(ev + 1) != "NR" || $(ev + 2) != "1") next
            pid = $(cpu - 1); sub(/.*-/, "", pid)
            ts = $(ev - 1); sub(/:$/, "", ts)
            if ($ev == "sys_enter:") {
                cnt = $(ev + 5); sub(/,$/, "", cnt)
                # 0x20 bytes: a POST_SEND doorbell, or a set-up command of that size; any
                # other write() marks a break, and the longest unbroken run is the loop
                if (cnt != "20") { BRK[pid, N[pid] + 0] = 1; next }
                N[pid]++; E[pid, N[pid]] = ts; OPEN[pid] = 1
            } else if (OPEN[pid]) {
                X[pid, N[pid]] = ts; OPEN[pid] = 0
            }
        }
        END {
            best = ""; for (p in N) if (p != srv && (best == "" || N[p] > N[best])) best = p
            if (best == "") exit
            printf "" > kf; printf "" > uf
            loop_of(best)
            for (i = LO; i <= HI; i++) {
                if (!((best, i) in X)) continue
                printf "%.0f\n", (X[best, i] - E[best, i]) * 1000 / mhz > kf
                if (i > LO && ((best, i - 1) in X)) printf "%.0f\n", (E[best, i] - X[best, i - 1]) * 1000 / mhz > uf
            }
        }' "$f"
    [ -s "$W/k" ] || continue
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$tool" "$impl" "$run" "$(wc -l <"$W/k")" \
        "$(q "$W/k" 0.5)" "$(q "$W/k" 0.1)" "$(q "$W/u" 0.5)" "$(q "$W/u" 0.1)" >>"$W/runs"
done
[ -s "$W/runs" ] || { echo "no doorbell events in $D/trace.*.txt" >&2; exit 1; }
cp "$W/runs" "$D/runs.tsv"

echo "## Round trip split at the doorbell (ns; median over runs, range of the runs in brackets)"
echo
echo "TSC ${MHZ} MHz (guest). Columns per run: median and 10th percentile over the iterations;"
echo "then the median of those over the runs. ours/C: lower is better."
echo
echo "| test | impl | runs | in write() median | p10 | between median | p10 | t_typical [µs] |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
# col TOOL IMPL COL: column COL of the runs of TOOL/IMPL into $W/col; false when there are none
col() {
    awk -F'\t' -v t="$1" -v m="$2" -v c="$3" '$1 == t && $2 == m { print $c }' "$W/runs" >"$W/col"
    [ -s "$W/col" ]
}
# stat TOOL IMPL COL: "median [min–max]" of column COL over the runs
stat() {
    col "$@" || { echo "–"; return; }
    echo "$(q "$W/col" 0.5) [$(q "$W/col" 0)–$(q "$W/col" 1)]"
}
# med TOOL IMPL COL: the median of column COL over the runs (empty when there are none)
med() {
    if col "$@"; then q "$W/col" 0.5; fi
}
ttyp() {
    # results.tsv: tool impl run rc, then perftest's columns (bytes iters t_min t_max t_typical ...)
    awk -F'\t' -v t="$1" -v m="$2" '$1 == t && $2 == m && $4 == 0 && $9 ~ /^[0-9.]+$/ { print $9 }' "$D/results.tsv" >"$W/col" 2>/dev/null || true
    [ -s "$W/col" ] && q "$W/col" 0.5 || echo "–"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "–"; else printf "%.2f", a / b }'; }
rt_groups
for t in $tools; do
    for m in $impls; do
        n=$(rt_runs "$t" "$m")
        [ "$n" -gt 0 ] || continue
        echo "| $t | $m | $n | $(stat "$t" "$m" 5) | $(stat "$t" "$m" 6) | $(stat "$t" "$m" 7) | $(stat "$t" "$m" 8) | $(ttyp "$t" "$m") |"
    done
    for m in $impls; do
        [ "$m" = c ] && continue
        a=$(med "$t" "$m" 5); b=$(med "$t" c 5)
        [ -n "$a" ] && [ -n "$b" ] || continue
        echo "| $t | **$m/C** | | **$(ratio "$a" "$b")** | **$(ratio "$(med "$t" "$m" 6)" "$(med "$t" c 6)")** | **$(ratio "$(med "$t" "$m" 7)" "$(med "$t" c 7)")** | **$(ratio "$(med "$t" "$m" 8)" "$(med "$t" c 8)")** | **$(ratio "$(ttyp "$t" "$m")" "$(ttyp "$t" c)")** |"
    done
done
