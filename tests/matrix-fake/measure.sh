#!/bin/bash
# The coordinator at N nodes against fake-ssh (no nodes, no network): the
# wall time against the ideal (Σ over rounds of the slowest pair), the
# preflight time, the coordinator's peak threads, open fds and RSS, the size
# of results.jsonl, and the time of a --resume over the finished file.
#
#   tests/matrix-fake/measure.sh N [RPERFTEST]     (default target/debug/rperftest)
#
# Env: FAKE_PAIR_S (0.2), FAKE_SLOW (one slow node, default n3), FAKE_SLOW_X
# (3), FAKE_LOW, FAKE_DOWN (see fake-ssh).  Prints one line of figures.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
N=${1:?usage: measure.sh N [RPERFTEST]}
BIN=${2:-$HERE/../../target/debug/rperftest}
W=$(mktemp -d "${TMPDIR:-/tmp}/matrix-fake.XXXXXX")
trap 'rm -rf "$W"' EXIT
export FAKE_DIR=$W FAKE_PAIR_S=${FAKE_PAIR_S:-0.2} FAKE_SLOW=${FAKE_SLOW-n3}
M=("$BIN" matrix --hosts "n[1-$N]" --launcher ssh --ssh "$HERE/fake-ssh" --no-retry --out "$W/out")
t0=$(date +%s.%N)
"${M[@]}" -- -s 4096 -n 5 >"$W/stdout" 2>"$W/stderr" &
P=$!
maxt=0 maxfd=0 rss=0
while kill -0 $P 2>/dev/null; do
    t=$(awk '/^Threads/{print $2}' /proc/$P/status 2>/dev/null); r=$(awk '/^VmHWM/{print $2}' /proc/$P/status 2>/dev/null)
    f=$(ls /proc/$P/fd 2>/dev/null | wc -l)
    [ "${t:-0}" -gt "$maxt" ] && maxt=$t
    [ "${f:-0}" -gt "$maxfd" ] && maxfd=$f
    [ -n "${r:-}" ] && rss=$r
    sleep 0.1
done
wait $P; rc=$?
wall=$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}")
pre=$(sed -n 's/^preflight: .* in \([0-9.]*\) s$/\1/p' "$W/stderr")
size=$(stat -c %s "$W/out/results.jsonl")
ideal=$(python3 - "$W/out/results.jsonl" <<'PY'
import json, sys, collections
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
pairs = collections.Counter(tuple(sorted((r["server"]["node"], r["client"]["node"]))) for r in recs)
assert all(c == 1 for c in pairs.values()), "a pair twice"
slow = collections.defaultdict(float)
for r in recs:
    slow[r["round"]] = max(slow[r["round"]], r["wall_s"])
print(f"{sum(slow.values()):.1f} {len(recs)} {sum(r['status'] == 'OK' for r in recs)}")
PY
)
read -r ideal_s recs ok <<<"$ideal"
t1=$(date +%s.%N)
"${M[@]}" --resume -- -s 4096 -n 5 >"$W/stdout2" 2>"$W/stderr2"; rc2=$?
resume=$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t1}")
echo "nodes=$N pairs=$recs ok=$ok rc=$rc wall=${wall}s ideal=${ideal_s}s ratio=$(awk "BEGIN{printf \"%.2f\", $wall / $ideal_s}") preflight=${pre}s threads<=$maxt fds<=$maxfd VmHWM=${rss}kB jsonl=${size}B resume=${resume}s(rc=$rc2)"
