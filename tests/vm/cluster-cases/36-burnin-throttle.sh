#!/bin/bash
# Burn-in and compare across a link throttled with tc (issue 24), node1
# client -> node3 server, 64 KiB write_bw: a --run_infinitely -D 1 run with
# node3's link limited to 8 Mbit/s (tbf, both ways) for 4 s in its middle:
# the run's final line counts at least one interval more than 10% below the
# running median, and its --plot SVG marks them; `rperftest compare` of two
# unthrottled -D 2 runs exits 0, of one with the link throttled exits 1
# naming size 65536.  -t 8 -u 20: at most 512 KiB in flight, which the
# limiter drains in 0.5 s, well inside the 4 s ack timeout, so rxe does not
# retransmit into the queue.  ~45 s on the bed.
# timeout: 240
. "$CLUSTER_LIB"
X="-d rxe0 -x $GIDX -s 65536 -t 8 -u 20"
# shellcheck disable=SC2086
bg node3 srv timeout 120 rperftest ib_write_bw $X -D 1 --run_infinitely
wait_listen node3 18515 60
# shellcheck disable=SC2086
bg node1 cli timeout 120 bash -c 'echo $$ >/tmp/b36.pid; exec "$@"' _ rperftest ib_write_bw $X -D 1 --run_infinitely \
    --series /tmp/b36.jsonl --plot /tmp/b36.svg node3
for _ in $(seq 1 150); do grep -q ' 65536 ' cli.out 2>/dev/null && break; sleep 0.2; done
grep -q ' 65536 ' cli.out || { cat cli.out; fail "no interval line within 30 s"; }
sleep 4
"$CL" fault node3 rate 8mbit || fail "fault rate"
sleep 4
"$CL" fault node3 clear || fail "fault clear"
sleep 4
on node1 bash -c 'kill -INT "$(cat /tmp/b36.pid)"' || fail "no client to stop"
rc=$(wait_bg cli 30)
cat cli.out
[ "$rc" = 0 ] || fail "burn-in client exit $rc, want 0 after SIGINT"
n=$(sed -n 's/^ *Intervals more than 10% below the running median: \([0-9]*\) of.*/\1/p' cli.out)
[ -n "$n" ] && [ "$n" -ge 1 ] || fail "the throttled seconds were not counted (got '${n:-no line}')"
on node1 cat /tmp/b36.svg >b36.svg || fail "no SVG"
grep -q 'more than 10% below running median ([1-9]' b36.svg || fail "the SVG marks no interval"
python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' b36.svg || fail "b36.svg is not XML"
rc=$(wait_bg srv 30)
echo "burn-in: $n interval(s) below the running median while throttled; server exit $rc"

# compare: base and new unthrottled, then new with the link throttled
one() {  # one NAME: a -D 2 run, node1 -> node3, its JSON copied here
    # shellcheck disable=SC2086
    pair "$1" node3 "rperftest ib_write_bw $X -D 2" node1 "rperftest ib_write_bw $X -D 2 --out_json --out_json_file /tmp/$1.json" \
        || fail "run $1"
    on node1 cat "/tmp/$1.json" >"$1.json" || fail "no $1.json"
}
one base; one new
"$CL" fault node3 rate 8mbit || fail "fault rate"
one slow
"$CL" fault node3 clear
# -D runs under TCG move by 10-20% from one to the next; the limit is far below both
on node1 bash -c 'cd /tmp && rperftest compare base.json new.json --tolerance 40%' >same.out 2>&1; rc=$?
cat same.out
[ "$rc" = 0 ] || fail "compare of two unthrottled runs: exit $rc, want 0"
on node1 bash -c 'cd /tmp && rperftest compare base.json slow.json --tolerance 40%' >slow.out 2>&1; rc=$?
cat slow.out
[ "$rc" = 1 ] || fail "compare against the throttled run: exit $rc, want 1"
grep -q "at sizes 65536" slow.out || fail "compare does not name size 65536"
echo "compare: unthrottled runs agree (exit 0); the throttled one is named at 65536 (exit 1)"
