#!/bin/bash
# A Markdown table from a qperf-vs-stock run's raw rows (bench/scripts/qperf-vs-stock-guest.sh):
# per test the median of each implementation with its spread (min–max over the rounds) and the
# ratio of medians ours/stock. Bandwidth: ratio ≥ 1.00 means ours is as fast or faster;
# latency: ratio ≤ 1.00 means ours is as fast or faster.
#
#   bench/scripts/qperf-vs-stock-table.sh RESULT_DIR > table.md
set -euo pipefail
D=${1:?usage: qperf-vs-stock-table.sh RESULT_DIR}
RAW=$D/raw.tsv
[ -s "$RAW" ] || { echo "no $RAW" >&2; exit 1; }
awk -F'\t' '
function med(a, n,   i, j, t) {
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
# show V FIG: bandwidth in MB/s, latency in µs
function show(v, fig) { return fig == "bw" ? sprintf("%.2f", v / 1e6) : sprintf("%.1f", v * 1e6) }
function stats(k, fig,   a, n, i, lo, hi, m) {
    n = split(V[k], a, " ")
    if (!n) return "– (no figure)"
    lo = hi = a[1] + 0
    for (i = 1; i <= n; i++) { a[i] += 0; if (a[i] < lo) lo = a[i]; if (a[i] > hi) hi = a[i] }
    M[k] = med(a, n)
    return show(M[k], fig) " (" show(lo, fig) "–" show(hi, fig) ", n=" n ")"
}
$5 != "-" { V[$1 SUBSEP $3] = V[$1 SUBSEP $3] " " $5 }
!($3 in F) { F[$3] = $4; order[++nt] = $3 }
END {
    print "| test | unit | ours: median (min–max) | stock: median (min–max) | ours/stock |"
    print "|---|---|---|---|---|"
    for (i = 1; i <= nt; i++) {
        t = order[i]; fig = F[t]
        o = stats("ours" SUBSEP t, fig); s = stats("stock" SUBSEP t, fig)
        r = (("ours" SUBSEP t) in M && ("stock" SUBSEP t) in M && M["stock" SUBSEP t] > 0) \
            ? sprintf("%.2f", M["ours" SUBSEP t] / M["stock" SUBSEP t]) : "–"
        printf "| %s | %s | %s | %s | %s |\n", t, fig == "bw" ? "MB/s" : "µs", o, s, r
    }
}' "$RAW"
