#!/bin/bash
# Wall time of `rperftest matrix --concurrent-rails` on a 4-node x 2-rail bed: the pair-wise
# phase (rail after rail) against its ideal (the sum over rails and rounds of each round's
# slowest pair), and the all-rails phase (both rails of each pair at once) against the
# pair-wise one. A benchmark that prints figures, not a test (issue 34).
#
#   tests/vm/rails-bench.sh [BIN]      (root; boots the bed, node2 and node4 bare)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BIN=${1:-$(tests/vm/build-static.sh)}
[ "$(id -u)" = 0 ] || { echo "rails-bench: needs root (the bed's namespace, bridges and taps)" >&2; exit 1; }
W=$(mktemp -d /tmp/rails-bench.XXXXXX)
export RPT_CLUSTER_DIR=$W/cluster
CL=tests/vm/cluster.sh
trap '"$CL" down >/dev/null 2>&1 || true; rm -rf "$W"' EXIT
"$CL" up 4 --rails 2 --bare 2,4 --bin "$BIN" >"$W/up.log" 2>&1 || { cat "$W/up.log"; exit 1; }
t0=$(date +%s.%N)
"$CL" exec node1 -- rperftest matrix --launcher ssh --preflight-timeout 120 --hosts "node[1-4]" --test write_bw \
    --concurrent-rails --no-retry --rel 0.25 --out /tmp/rb -- -s 65536 -n 200 >"$W/m.out" 2>&1 || true
wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
"$CL" exec node1 -- cat /tmp/rb/results.jsonl >"$W/m.jsonl"
python3 - "$W/m.jsonl" "$wall" <<'PY'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def span(rs):
    return max(x["started_unix"] + x["wall_s"] for x in rs) - min(x["started_unix"] for x in rs)
def ideal(rs, key):
    ks = sorted({key(x) for x in rs})
    return sum(max(x["wall_s"] for x in rs if key(x) == k) for k in ks)
pairs = [x for x in r if x["pattern"] == "pairs"]
allr = [x for x in r if x["pattern"] == "all-rails"]
ok = sum(x["status"] == "OK" for x in r)
print(f"records {len(r)} ({ok} OK); whole run {sys.argv[2]} s")
print(f"pairs, rail after rail: {len(pairs)} pair-rails, wall {span(pairs):.1f} s, ideal {ideal(pairs, lambda x: (x['rail'], x['round'])):.1f} s")
print(f"all-rails, both at once: {len(allr)} flows, wall {span(allr):.1f} s, ideal {ideal(allr, lambda x: x['round']):.1f} s")
for p in ("pairs", "all-rails"):
    v = [x["value"] for x in r if x["pattern"] == p and x["value"]]
    print(f"{p}: sum of figures {sum(v):.2f} MB/sec over {len(v)} flows")
PY
grep -E "^(all-rails|node x rail)" "$W/m.out" | head -8
