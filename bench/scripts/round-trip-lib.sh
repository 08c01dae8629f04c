# What round-trip-split-table.sh and round-trip-tail.sh share (sourced by both, not run).
# RT_LIB_DIR is this folder (set by the sourcing script).

# rt_open RESULT_DIR: D, MHZ (the TSC rate the traces are stamped in), a work folder W removed at
# exit, and LOOP_OF, the awk function that finds the doorbell loop (doorbell-loop.awk).
rt_open() {
    D=$1
    [ -s "$D/tsc.txt" ] || { echo "no $D/tsc.txt" >&2; exit 1; }
    MHZ=$(cat "$D/tsc.txt")
    W=$(mktemp -d)
    trap 'rm -rf "$W"' EXIT
    LOOP_OF=$(cat "$RT_LIB_DIR/doorbell-loop.awk")
}

# rt_trace FILE: b, tool, impl and run of trace.TOOL.IMPL.RUN.txt, and srv, the server's pid when
# the guest wrote server.TOOL.IMPL.RUN.
rt_trace() {
    b=$(basename "$1" .txt); b=${b#trace.}
    tool=${b%%.*}; rest=${b#*.}; impl=${rest%%.*}; run=${rest#*.}
    srv=$(cat "$D/server.$b" 2>/dev/null || true)
}

# rt_groups: tools and impls of $W/runs, in the order first seen.
rt_groups() {
    tools=$(cut -f1 "$W/runs" | awk '!s[$0]++')
    impls=$(cut -f2 "$W/runs" | awk '!s[$0]++')
}

# rt_runs TOOL IMPL: how many runs $W/runs has of them.
rt_runs() { awk -F'\t' -v t="$1" -v m="$2" '$1 == t && $2 == m' "$W/runs" | wc -l; }
