#!/bin/bash
# The matrix report at 64 nodes (issue 35), without a network: fake-ssh plays 64 nodes, n17 slow
# (every pair with it LOW) and n40 refusing ssh. Checks the text report switched to "only what is
# not OK" (no 64-column matrix), the 2,016 records, and report.html: a sane size, one heatmap of
# 64 x 64 cells with every node labelled, the long notes folded, and a headless Chromium render
# that is not blank (tests/plot-render.sh --html).
#
#   tests/matrix-fake/report-render.sh [RPERFTEST]      (default target/debug/rperftest)
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=${1:-$HERE/../../target/debug/rperftest}
W=$(mktemp -d "${TMPDIR:-/tmp}/report-render.XXXXXX")
trap 'rm -rf "$W"' EXIT
fail() { echo "report-render: FAIL: $*"; exit 1; }
mkdir "$W/fake"
FAKE_DIR=$W/fake FAKE_PAIR_S=0.02 FAKE_SLOW='' FAKE_LOW=n17 FAKE_DOWN=n40 \
    "$BIN" matrix --hosts 'n[1-64]' --launcher ssh --ssh "$HERE/fake-ssh" --out "$W/out" -- -s 4096 -n 5 \
    >"$W/stdout" 2>"$W/stderr"
rc=$?
[ "$rc" = 1 ] || { tail -5 "$W/stderr"; fail "matrix exit $rc, want 1"; }
J=$W/out/results.jsonl H=$W/out/report.html
[ "$(grep -c . "$J")" = 2016 ] || fail "$(grep -c . "$J") records, want 2016"
grep -q '^2016 pair(s) in 63 round(s): 62 LOW, 1891 OK, 63 UNREACHABLE' "$W/stdout" || fail "summary line: $(tail -1 "$W/stdout")"
grep -q '62 of 62 bad pairs of ib_write_bw on rail fake0 include n17' "$W/stdout" || fail "n17 not named"
! grep -q '^  *n1  ' "$W/stdout" || fail "the text report still prints the 64-column matrix"
size=$(stat -c %s "$H")
[ "$size" -gt 100000 ] && [ "$size" -lt 5000000 ] || fail "report.html is $size bytes"
[ "$(grep -c '<svg' "$H")" = 1 ] || fail "want one heatmap"
labels=$(tr -d '\n' <"$H" | grep -o '>[[:space:]]*n[0-9]*[[:space:]]*</text>' | sed 's,[>[:space:]],,g; s,</text,,' | sort -u | wc -l)
[ "$labels" = 64 ] || fail "$labels node labels in the heatmap, want 64"
grep -q '<summary>55 more line(s): re-runs and notes</summary>' "$H" || fail "the re-run lines are not folded"
"$HERE/../plot-render.sh" --no-plots --html "$H" || fail "render"
echo "report-render: 64 nodes, 2016 records, report.html $((size / 1024)) KiB, rendered"
