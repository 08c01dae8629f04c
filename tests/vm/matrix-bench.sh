#!/bin/bash
# Wall time of `rperftest matrix` on the cluster bed against the sum of its pairs' own times,
# the ideal for rounds (the sum over rounds of each round's slowest pair), and the
# one-pair-at-a-time ssh loop a user writes by hand (the same pairs, a server started over ssh,
# `sleep 2`, the client). A benchmark that prints figures, not a test (issue 21).
#
#   tests/vm/matrix-bench.sh [BIN]      (root; boots a 5-node bed, node2 and node4 bare)
#
# Prints one line per run: nodes, pairs, rounds, wall, pairs' sum, rounds' ideal, ssh loop.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BIN=${1:-$(tests/vm/build-static.sh)}
[ "$(id -u)" = 0 ] || { echo "matrix-bench: needs root (the bed's namespace, bridge and taps)" >&2; exit 1; }
W=$(mktemp -d /tmp/matrix-bench.XXXXXX)
export RPT_CLUSTER_DIR=$W/cluster
CL=tests/vm/cluster.sh
trap '"$CL" down >/dev/null 2>&1 || true; rm -rf "$W"' EXIT
"$CL" up 5 --bare 2,4 --bin "$BIN" >"$W/up.log" 2>&1 || { cat "$W/up.log"; exit 1; }
OPTS=(-s 4096 -n 200)
X="-d rxe0 -x 1"
for n in 4 5; do
    O=/tmp/mb$n
    t0=$(date +%s.%N)
    "$CL" exec node1 -- rperftest matrix --launcher ssh --preflight-timeout 120 --hosts "node[1-$n]" --test write_bw \
        --devices rxe0 --rel 0.25 --out $O -- "${OPTS[@]}" >"$W/m$n.out" 2>&1 || true
    wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
    "$CL" exec node1 -- cat $O/results.jsonl >"$W/m$n.jsonl"
    read -r pairs rounds psum ideal < <(python3 - "$W/m$n.jsonl" <<'PY'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rounds = sorted({x["round"] for x in r})
print(len(r), len(rounds), f'{sum(x["wall_s"] for x in r):.1f}',
      f'{sum(max(x["wall_s"] for x in r if x["round"] == k) for k in rounds):.1f}')
PY
)
    # The loop by hand: every pair in turn, from node1 over ssh.
    t0=$(date +%s.%N)
    for a in $(seq 1 $n); do
        for b in $(seq $((a + 1)) $n); do
            "$CL" exec node1 -- bash -c "ssh node$a 'rperftest ib_write_bw $X ${OPTS[*]}' >/dev/null 2>&1 & sleep 2; ssh node$b 'rperftest ib_write_bw $X ${OPTS[*]} node$a' >/dev/null 2>&1; wait" || true
        done
    done
    loop=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
    echo "nodes $n: $pairs pairs in $rounds rounds: matrix wall ${wall} s (with its preflight); pairs' own times sum ${psum} s; rounds' slowest pairs sum ${ideal} s; ssh loop (sleep 2 per pair) ${loop} s"
done
