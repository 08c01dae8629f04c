#!/bin/bash
# fault kill (numbered 99 to run last: node4 stays dead): node4's VM is killed outright while
# it serves a plain ib_write_bw pair (node3 its client) and is in a pair of a running
# `rperftest matrix` over node1, node2 and node4.  The plain client ends with a clear error
# within its bound; the matrix's running pair ends FAIL or TIMEOUT within its deadline, node4's
# later pair fails at once (unreachable), node1 - node2 is OK, the matrix completes (exit 1),
# no rperftest process is left on the surviving nodes, and cluster status says node4 stopped.
# timeout: 420
. "$CLUSTER_LIB"
X="-d rxe0 -x $GIDX"
O=/tmp/m99
# 3 hosts: the circle method's first round is node2 - node4 (node1 has the bye).
bg node1 mx rperftest matrix --launcher ssh --preflight-timeout 120 --hosts node1,node2,node4 --test write_bw \
    --devices rxe0 --no-retry --out $O -- -s 4096 -n 20000
bg node4 srv timeout 300 rperftest ib_write_bw $X -s 4096 -n 2000000
wait_listen node4 18515 60
bg node3 cli timeout 300 rperftest ib_write_bw $X -s 4096 -n 2000000 node4
# Kill once node4's matrix pair runs: in round 1 node4 serves node2 on port 18600 (the
# circle method for 3 hosts), so it listens there once the preflight is done.
wait_listen node4 18600 240
sleep 6
"$CL" fault node4 kill || fail "fault kill"
t0=$(date +%s)
rc=$(wait_bg cli 150)
ends_with_error "client (server's node killed)" cli.out "$rc" $(( $(date +%s) - t0 )) 120
"$CL" status | grep -q '^node4 .* stopped' || fail "status does not show node4 stopped"
mrc=$(wait_bg mx 300)
cat mx.out
[ "$mrc" = 1 ] || fail "matrix exit $mrc, want 1 (it must complete, with node4's pairs not OK)"
on node1 cat $O/results.jsonl >results.jsonl || fail "no results.jsonl"
python3 - <<'PY' || fail "results.jsonl"
import json
recs = {tuple(sorted((r["server"]["node"], r["client"]["node"]))): r for r in map(json.loads, filter(str.strip, open("results.jsonl")))}
assert sorted(recs) == [("node1", "node2"), ("node1", "node4"), ("node2", "node4")], sorted(recs)
ok = recs[("node1", "node2")]
assert ok["status"] == "OK", ("node1 - node2", ok["status"], ok["reason"])
killed = recs[("node2", "node4")]
assert killed["status"] in ("FAIL", "TIMEOUT"), ("running pair", killed["status"])
assert killed["wall_s"] <= killed["deadline_s"] + 15, ("past its deadline", killed["wall_s"], killed["deadline_s"])
assert killed["reason"], "no reason for the killed pair"
later = recs[("node1", "node4")]
assert later["status"] in ("FAIL", "TIMEOUT", "UNREACHABLE"), ("node4's later pair", later["status"])
for k in [("node2", "node4"), ("node1", "node4")]:
    print(f"{k[0]} - {k[1]}: {recs[k]['status']} in {recs[k]['wall_s']:.1f} s: {recs[k]['reason']}")
PY
for k in node1 node2 node3; do
    left=$(on "$k" bash -c 'for p in /proc/[0-9]*; do tr "\0" " " <$p/cmdline 2>/dev/null; echo; done' | grep -c '[r]perftest ib_\|[m]atrix-exec')
    [ "$left" = 0 ] || fail "$k: $left rperftest process(es) left"
done
echo "node4 killed: plain client and matrix pair ended cleanly, the matrix completed, nothing left"
