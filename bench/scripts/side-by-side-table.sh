#!/bin/bash
# Markdown tables from a side-by-side run's raw rows (bench/scripts/side-by-side-guest.sh):
# medians per point and implementation, and the ratio of medians ours/C.
#
#   bench/scripts/side-by-side-table.sh RESULT_DIR > table.md
#
# Columns: BW average and MsgRate (higher is better: ratio ≥ 1.00 means ours is faster),
# t_typical and p99 (lower is better: ratio ≤ 1.00 means ours is faster), client CPU per
# operation = user + sys of the whole client process (setup and teardown included; the
# Startup table shows what a 5-iteration run costs) / iterations, and the client's peak RSS.
#
# "Which differences the run resolves": for every point and metric, a 95 % percentile-bootstrap
# interval of the ratio of medians ours/C (each side's runs resampled independently, 2000
# resamples, fixed seed: the same raw rows always give the same table), and a paired sign test
# over the rounds (each round runs C and ours back to back, so drift of the bed hits both alike).
# A point is "ours faster" or "C faster" only when the whole interval lies on that side of 1.00;
# otherwise the run cannot tell the two apart at that point.
set -euo pipefail
D=${1:?usage: side-by-side-table.sh RESULT_DIR}
RAW=$D/raw.tsv
[ -s "$RAW" ] || { echo "no $RAW" >&2; exit 1; }

awk -F'\t' -v startup="$D/startup.tsv" '
function median(key,   a, n) { n = load(key, a); return n ? med(a, n) : "" }
# only finite numbers count ("-", "inf", "-nan" are skipped)
function finite(v) { return v ~ /^[0-9]+(\.[0-9]*)?$/ }
function add(key, v) { if (finite(v)) { V[key] = V[key] " " v; C[key]++ } }
# the runs of point pt / implementation k whose t_typical is within 30 % of the best of the point
# (both implementations), the "fast mode" of the bed; adds their t_typical and p99 under k
function fast(k, pt,   n, i, a, tp) {
    n = split(substr(PAIRS[k], 2), a, " ")
    for (i = 1; i <= n; i++) {
        split(a[i], tp, ":")
        if (tp[1] + 0 <= 1.3 * MINT[pt]) { add(k SUBSEP "ftyp", tp[1]); add(k SUBSEP "fp99", tp[2]); NF_[k]++ }
    }
}
function ratio(a, b) { return (a == "" || b == "" || b + 0 == 0) ? "–" : sprintf("%.2f", a / b) }
function f(v, fmt) { return (v == "") ? "–" : sprintf(fmt, v) }
# columns: 1 kind 2 tool 3 size 4 impl 5 run 6 rc 7 iters 8..13 metrics 14 cpu_u 15 cpu_s 16 rss 17 wall
{
    k = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4
    if ($6 != 0) { FAIL[k]++; next }
    OK[k]++
    if (!($1 SUBSEP $2 SUBSEP $3 in SEEN)) { SEEN[$1 SUBSEP $2 SUBSEP $3] = 1; ORDER[++np] = $1 SUBSEP $2 SUBSEP $3 }
    IMPL[$4] = 1
    N[k] = $7
    if ($1 == "bw") { add(k SUBSEP "avg", $9); add(k SUBSEP "rate", $10) }
    if ($1 == "lat") {
        add(k SUBSEP "typ", $10); add(k SUBSEP "p99", $13)
        if (finite($10) && finite($13)) {
            PAIRS[k] = PAIRS[k] " " $10 ":" $13
            pt = $1 SUBSEP $2 SUBSEP $3
            if (!(pt in MINT) || $10 + 0 < MINT[pt]) MINT[pt] = $10 + 0
        } else NOFIN[k]++
    }
    if ($1 == "bw" && !finite($9)) NOFIN[k]++
    if ($14 != "-" && $15 != "-") { add(k SUBSEP "cpu", $14 + $15); RUN[k SUBSEP "cpu" SUBSEP $5] = $14 + $15 }
    if ($1 == "bw") { keep(k, "avg", $5, $9); keep(k, "rate", $5, $10) }
    if ($1 == "lat") { keep(k, "typ", $5, $10); keep(k, "p99", $5, $13) }
    if ($5 + 0 > MAXRUN) MAXRUN = $5 + 0
    add(k SUBSEP "rss", $16)
}
function cpuop(k, impl,   c) {
    c = median(k SUBSEP "cpu")
    if (c == "" || N[k] + 0 == 0) return ""
    return c * 1e6 / N[k]
}
END {
    print "### Bandwidth (client side; medians of " runs() " runs each)"
    print ""
    print "| test | size | -n | BW avg C [MiB/s] | ours | ours/C | MsgRate C [Mpps] | ours | ours/C | CPU/op C [µs] | ours | ours/C | RSS C [KiB] | ours |"
    print "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for (i = 1; i <= np; i++) {
        split(ORDER[i], p, SUBSEP); if (p[1] != "bw") continue
        c = ORDER[i] SUBSEP "c"; o = ORDER[i] SUBSEP "ours"
        ca = median(c SUBSEP "avg"); oa = median(o SUBSEP "avg"); cr = median(c SUBSEP "rate"); orr = median(o SUBSEP "rate")
        cc = cpuop(c, "c"); oc = cpuop(o, "ours")
        printf "| %s | %s | %s | %s | %s | **%s** | %s | %s | **%s** | %s | %s | %s | %s | %s |%s\n", p[2], p[3], N[c], f(ca, "%.2f"), f(oa, "%.2f"), ratio(oa, ca), f(cr, "%.6f"), f(orr, "%.6f"), ratio(orr, cr), f(cc, "%.1f"), f(oc, "%.1f"), ratio(oc, cc), f(median(c SUBSEP "rss"), "%d"), f(median(o SUBSEP "rss"), "%d"), fails(c, o)
    }
    print ""
    print "### Latency (client side; medians of " runs() " runs each)"
    print ""
    print "| test | size | -n | t_typical C [µs] | ours | ours/C | p99 C [µs] | ours | ours/C | CPU/op C [µs] | ours | ours/C | RSS C [KiB] | ours |"
    print "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for (i = 1; i <= np; i++) {
        split(ORDER[i], p, SUBSEP); if (p[1] != "lat") continue
        c = ORDER[i] SUBSEP "c"; o = ORDER[i] SUBSEP "ours"
        ct = median(c SUBSEP "typ"); ot = median(o SUBSEP "typ"); cp = median(c SUBSEP "p99"); op = median(o SUBSEP "p99")
        cc = cpuop(c, "c"); oc = cpuop(o, "ours")
        printf "| %s | %s | %s | %s | %s | **%s** | %s | %s | **%s** | %s | %s | %s | %s | %s |%s\n", p[2], p[3], N[c], f(ct, "%.2f"), f(ot, "%.2f"), ratio(ot, ct), f(cp, "%.2f"), f(op, "%.2f"), ratio(op, cp), f(cc, "%.1f"), f(oc, "%.1f"), ratio(oc, cc), f(median(c SUBSEP "rss"), "%d"), f(median(o SUBSEP "rss"), "%d"), fails(c, o)
    }
    # The bed is bimodal from run to run (the same tool lands near the best t_typical or about
    # 1.5-2x above it, for C and ours alike), and C perftest prints inf/nan (its CPU-clock
    # calibration failed) in some runs, which the medians above cannot count: the same figures
    # over the fast-mode runs only, with how many runs each side had there.
    print ""
    print "### Latency, fast-mode runs only (t_typical within 1.3x of the best run of the point, either tool)"
    print ""
    print "| test | size | runs C | ours | t_typical C [µs] | ours | ours/C | p99 C [µs] | ours | ours/C | C runs without a finite result |"
    print "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for (i = 1; i <= np; i++) {
        split(ORDER[i], p, SUBSEP); if (p[1] != "lat") continue
        c = ORDER[i] SUBSEP "c"; o = ORDER[i] SUBSEP "ours"
        fast(c, ORDER[i]); fast(o, ORDER[i])
        ct = median(c SUBSEP "ftyp"); ot = median(o SUBSEP "ftyp"); cp = median(c SUBSEP "fp99"); op = median(o SUBSEP "fp99")
        printf "| %s | %s | %d | %d | %s | %s | **%s** | %s | %s | **%s** | %d |\n", p[2], p[3], NF_[c], NF_[o], f(ct, "%.2f"), f(ot, "%.2f"), ratio(ot, ct), f(cp, "%.2f"), f(op, "%.2f"), ratio(op, cp), NOFIN[c]
    }
    # which differences this run resolves (see the header): bootstrap interval and sign test
    print ""
    print "### Which differences the run resolves (95 % bootstrap interval of ours/C; paired sign test over the rounds)"
    print ""
    print "| test | size | metric | runs C | ours | ours/C | 95 % interval | rounds ours better | sign test p | verdict |"
    print "|---|---:|---|---:|---:|---:|---|---:|---:|---|"
    srand(20261130)
    for (i = 1; i <= np; i++) {
        split(ORDER[i], p, SUBSEP); if (p[1] != "bw" && p[1] != "lat") continue
        c = ORDER[i] SUBSEP "c"; o = ORDER[i] SUBSEP "ours"
        if (p[1] == "bw") { resolve(p, c, o, "avg", "BW average", 1); resolve(p, c, o, "rate", "MsgRate", 1) }
        else { resolve(p, c, o, "typ", "t_typical", 0); resolve(p, c, o, "p99", "p99", 0) }
        resolve(p, c, o, "cpu", "CPU/op", 0)
    }
    # io_uring doorbell experiment: the points that also ran ours-uring / ours-sqpoll
    hdr = 0
    for (i = 1; i <= np; i++) {
        split(ORDER[i], p, SUBSEP)
        w = ORDER[i] SUBSEP "ours"; u = ORDER[i] SUBSEP "ours-uring"; s = ORDER[i] SUBSEP "ours-sqpoll"
        if (!(u in OK) && !(s in OK) && !(u in FAIL) && !(s in FAIL)) continue
        if (!hdr++) {
            print ""
            print "### io_uring doorbell (ours only; RPERFTEST_RXE_DOORBELL=write | uring | uring-sqpoll)"
            print ""
            print "| test | size | metric | write | uring | uring/write | uring-sqpoll | sqpoll/write | CPU/op write [µs] | uring | sqpoll |"
            print "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
        }
        m = (p[1] == "bw") ? "rate" : "typ"; mn = (p[1] == "bw") ? "MsgRate [Mpps]" : "t_typical [µs]"
        wv = median(w SUBSEP m); uv = median(u SUBSEP m); sv = median(s SUBSEP m)
        printf "| %s | %s | %s | %s | %s | **%s** | %s | **%s** | %s | %s | %s |%s\n", p[2], p[3], mn, f(wv, "%.6g"), f(uv, "%.6g"), ratio(uv, wv), f(sv, "%.6g"), ratio(sv, wv), f(cpuop(w, "ours"), "%.1f"), f(cpuop(u, "ours"), "%.1f"), f(cpuop(s, "ours"), "%.1f"), fails(u, s)
    }
    # setup-only runs and the startup trace
    c = "setup" SUBSEP "ib_write_bw" SUBSEP "64" SUBSEP "c"; o = "setup" SUBSEP "ib_write_bw" SUBSEP "64" SUBSEP "ours"
    if ((c in OK) || (o in OK)) {
        print ""
        print "### Startup (ib_write_bw client, -s 64 -n 5)"
        print ""
        print "| | C perftest | rperftest | ours/C |"
        print "|---|---:|---:|---:|"
        while ((getline line < startup) > 0) { split(line, sf, "\t"); if (sf[3] + 0 > 0) add("st" SUBSEP sf[1], sf[3]) }
        a = median("st" SUBSEP "c"); b = median("st" SUBSEP "ours")
        printf "| exec → first doorbell (strace, median of %d) [ms] | %s | %s | %s |\n", C["st" SUBSEP "c"], f(a, "%.1f"), f(b, "%.1f"), ratio(b, a)
        a = median(c SUBSEP "cpu") * 1000; b = median(o SUBSEP "cpu") * 1000
        printf "| whole 5-iteration run, user+sys CPU [ms] | %s | %s | %s |\n", f(a, "%.0f"), f(b, "%.0f"), ratio(b, a)
        a = median(c SUBSEP "rss"); b = median(o SUBSEP "rss")
        printf "| peak RSS (ru_maxrss) [KiB] | %s | %s | %s |\n", f(a, "%d"), f(b, "%d"), ratio(b, a)
    }
}
function keep(k, m, run, v) { if (finite(v)) RUN[k SUBSEP m SUBSEP run] = v }
# the values of key into a[1..n]; returns n
function load(key, a,   s) { s = V[key]; if (s == "") return 0; return split(substr(s, 2), a, " ") }
# median of a[1..n], sorting a in place (insertion sort: n is a handful of runs)
function med(a, n,   i, j, t) {
    for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return (n % 2) ? a[(n + 1) / 2] + 0 : (a[n / 2] + a[n / 2 + 1]) / 2
}
function sift(a, i, n,   c, t) {
    while ((c = 2 * i) <= n) {
        if (c < n && a[c + 1] > a[c]) c++
        if (a[i] >= a[c]) return
        t = a[i]; a[i] = a[c]; a[c] = t; i = c
    }
}
function hsort(a, n,   i, t) {
    for (i = int(n / 2); i >= 1; i--) sift(a, i, n)
    for (i = n; i > 1; i--) { t = a[1]; a[1] = a[i]; a[i] = t; sift(a, 1, i - 1) }
}
# two-sided sign test: w wins of n untied pairs under Binomial(n, 1/2)
function signp(w, n,   k, lo, c, p) {
    if (n == 0) return ""
    lo = (w < n - w) ? w : n - w
    c = 1; p = 0
    for (k = 0; k <= lo; k++) { p += c; c = c * (n - k) / (k + 1) }
    p = 2 * p / 2 ^ n
    return (p > 1) ? 1 : p
}
# one row: metric m of point p, C key c, ours key o; hb: higher is better
function resolve(p, c, o, m, name, hb,   a, b, na, nb, r, i, s, t, q, B, lo, hi, mc, mo, w, n, x, y, v) {
    na = load(c SUBSEP m, a); nb = load(o SUBSEP m, b)
    if (na == 0 || nb == 0) return
    mc = med(a, na); mo = med(b, nb)
    lo = hi = ""
    if (na >= 3 && nb >= 3 && mc > 0) {
        B = 2000
        for (r = 1; r <= B; r++) {
            for (i = 1; i <= na; i++) s[i] = a[int(rand() * na) + 1]
            for (i = 1; i <= nb; i++) t[i] = b[int(rand() * nb) + 1]
            x = med(s, na); q[r] = (x > 0) ? med(t, nb) / x : 0
        }
        hsort(q, B)
        lo = q[int(0.025 * B)]; hi = q[int(0.975 * B) + 1]
    }
    w = n = 0
    for (r = 1; r <= MAXRUN; r++) {
        x = c SUBSEP m SUBSEP r; y = o SUBSEP m SUBSEP r
        if (!(x in RUN) || !(y in RUN) || RUN[x] + 0 == RUN[y] + 0) continue
        n++
        if (hb ? RUN[y] + 0 > RUN[x] + 0 : RUN[y] + 0 < RUN[x] + 0) w++
    }
    if (lo == "") v = "too few runs"
    else if (hb ? lo > 1 : hi < 1) v = "**ours faster**"
    else if (hb ? hi < 1 : lo > 1) v = (m == "cpu") ? "**C lower**" : "**C faster**"
    else v = "not resolved"
    if (m == "cpu" && v == "**ours faster**") v = "**ours lower**"
    printf "| %s | %s | %s | %d | %d | %s | %s | %s | %s | %s |\n", p[2], p[3], name, na, nb, ratio(mo, mc), (lo == "") ? "–" : sprintf("%.2f–%.2f", lo, hi), (n ? w " of " n : "–"), (n ? sprintf("%.3f", signp(w, n)) : "–"), v
}
function runs(   k, m) { m = 0; for (k in C) if (C[k] > m) m = C[k]; return m }
function fails(a, b) { return ((a in FAIL) || (b in FAIL)) ? " failed runs: " (FAIL[a] + 0) "/" (FAIL[b] + 0) : "" }
' "$RAW"
