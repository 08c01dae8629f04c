#!/bin/bash
# The netns bed at scale (tests/vm/netns-cluster.sh, issue 35), on Debian 13's kernel, whose rxe
# serves network namespaces: NETNS_NODES (default 32) namespace nodes in this one VM, each with
# its own rxe, address, /etc/hosts name and sshd. ssh by name reaches each node's own eth0;
# link-down cuts a node off and clear restores it. Then ONE matrix over ssh across all nodes
# (496 pairs at 32), real RDMA between every pair, with n3's veth rate-limited and the last
# node's sshd stopped, stopped by SIGINT part-way and finished with --resume: every pair exactly
# once, the last node's pairs UNREACHABLE (found by the preflight within its bound, the rest
# completes), n3's pairs LOW (or FAIL: a slow path can end in a completion error; each re-run
# once, not OK again) and n3 named, every other pair OK, no tool or node agent left running
# after the stop; the rounds as the scheduler makes them (no node twice in a round); `down`
# leaves no namespace, link, rdma device, sshd or hosts line. About 6.5 minutes of the VM: a
# pair costs about 1 s of its two TCG vCPUs through the node agents (the agents run the sides in
# threads; twice that and more with an ssh session per side), and n3's re-runs are one after
# another. Then a 7-node matrix on the same boot: an odd count, a bye in every round, every
# pair once and OK. 64 nodes is tests/vm/netns-bench.sh's (docs/benchmarks-data).
# kernel: trixie-backports
# overlay: cluster
# mode: any
# timeout: 1200
. "$VMTEST_LIB"
NC=$(dirname "$VMTEST_LIB")/netns-cluster.bash
[ -x /usr/sbin/sshd ] || skip "no sshd in this image (run-suite.sh boots the cluster overlay for '# overlay: cluster')"
trap 'bash "$NC" down >/dev/null 2>&1; _vmtest_cleanup' EXIT
RPT=$(command -v rperftest) || fail "rperftest not on PATH"
N=${NETNS_NODES:-32}
LAST=n$N

t0=$(date +%s)
expect_rc 0 bash "$NC" up "$N" --rdma yes
log "up $N nodes with rxe: $(( $(date +%s) - t0 )) s"
S=$(bash "$NC" ssh) || fail "no ssh wrapper"
expect_rc 0 "$S" n2 rdma link show
expect_contains "link rxe-n2/1 state ACTIVE"
[ "$(grep -c "^link " "$LAST_OUT")" = 1 ] || fail "n2 sees other nodes' devices: $(cat "$LAST_OUT")"
expect_rc 0 bash "$NC" fault n3 link-down
run bash "$NC" exec n2 -- ping -c 1 -W 2 n3
[ "$LAST_RC" != 0 ] || fail "n3 still answers with its link down"
expect_rc 0 bash "$NC" fault n3 clear
expect_rc 0 bash "$NC" exec n2 -- ping -c 1 -W 10 n3

# 1 Mbit/s: n3's pairs measure about 0.16 MB/s (the tbf's 64 kB burst included). At 2 Mbit/s
# they measured 0.32, and a CI run's median of 2.97 MB/s put them just above --rel 0.1.
expect_rc 0 bash "$NC" fault n3 rate 1mbit
expect_rc 0 bash "$NC" fault "$LAST" stop-sshd
M=$VMTEST_TMP/m
J=$M/results.jsonl
# At most 3 pairs at once: every node shares the VM's two vCPUs, so more at once only makes
# each pair slower (and the median it is judged against lower), not the run shorter.
ARGS=(--hosts "n[1-$N]" --launcher ssh --ssh "$S" --remote-bin "$RPT" --preflight-timeout 240
      --rel 0.1 --max-pairs 3 --out "$M")
TEST=(-- -s 4096 -n 50)
total=$(( N * (N - 1) / 2 ))
# first run: SIGINT once the last node's pairs (UNREACHABLE, recorded at once) and a third of the
# others are recorded
stop_at=$(( N - 1 + (total - N + 1) / 3 ))
"$RPT" matrix "${ARGS[@]}" "${TEST[@]}" >"$VMTEST_TMP/run1.out" 2>&1 &
mp=$!
for _ in $(seq 1 1200); do
    [ "$(cat "$J" 2>/dev/null | grep -c .)" -ge "$stop_at" ] && break
    kill -0 "$mp" 2>/dev/null || break
    sleep 0.5
done
kill -INT "$mp" 2>/dev/null
wait "$mp"; rc=$?
cat "$VMTEST_TMP/run1.out"
[ "$rc" = 1 ] || fail "first run: exit $rc, want 1 (stopped by a signal)"
grep -q 'stopped by a signal' "$VMTEST_TMP/run1.out" || fail "first run: no 'stopped by a signal' line"
first=$(grep -c . "$J")
[ "$first" -lt "$total" ] || fail "the first run finished all $total pairs before SIGINT"
# the stop ends the running pair on both of its nodes: no tool is left in any namespace
for _ in $(seq 1 20); do
    left=$(for c in /proc/[0-9]*/cmdline; do tr '\0' ' ' <"$c" 2>/dev/null; echo; done | grep -c '[r]perftest ib_write_bw')
    [ "$left" = 0 ] && break
    sleep 0.5
done
[ "$left" = 0 ] || fail "$left ib_write_bw process(es) left running after SIGINT"
agents=$(for c in /proc/[0-9]*/cmdline; do tr '\0' ' ' <"$c" 2>/dev/null; echo; done | grep -c '[r]perftest matrix-agent')
[ "$agents" = 0 ] || fail "$agents matrix-agent process(es) left after the stopped run"
grep -q "preflight: $((N - 1)) of $N node(s) up" "$VMTEST_TMP/run1.out" || fail "preflight did not find $((N - 1)) of $N up"
grep -q "$LAST unreachable: .*Connection refused" "$VMTEST_TMP/run1.out" || fail "$LAST not named unreachable"

run "$RPT" matrix "${ARGS[@]}" --resume "${TEST[@]}"
[ "$LAST_RC" = 1 ] || fail "resumed run: exit $LAST_RC, want 1 (LOW and UNREACHABLE pairs)"
expect_contains "resume: $first pair(s) already in"
# One line per record: "nA nB STATUS RETRIED" (the pair in name order; a re-run's record takes
# the pair's place and keeps the first result in "retried"). The last record of a pair counts. (The
# record's keys come sorted: a side's "node" follows its "json", hence the match.)
recs() { awk 'function node(side,  t) { t = $0; sub(".*\"" side "\":[{]", "", t)
                  return match(t, /"node":"[^"]*"/) ? substr(t, RSTART + 8, RLENGTH - 9) : "?" }
              { s = node("server"); c = node("client")
                st = $0; sub(/.*"status":"/, "", st); sub(/".*/, "", st)
                r = ($0 ~ /"retried":"/) ? "retried" : "-"
                rd = $0; sub(/.*"round":/, "", rd); rd += 0
                if (s < c) print s, c, st, r, rd; else print c, s, st, r, rd }' "$J"; }
recs | awk '{ last[$1 " " $2] = $0 } END { for (k in last) print last[k] }' >"$VMTEST_TMP/final"
[ "$(grep -c . "$VMTEST_TMP/final")" = "$total" ] || fail "$(grep -c . "$VMTEST_TMP/final") pairs recorded, want $total"
[ "$(grep -c . "$J")" = "$total" ] || fail "$(grep -c . "$J") records for $total pairs: a pair recorded twice"
n3bad=$(awk '($1 == "n3" || $2 == "n3") && ($3 == "LOW" || $3 == "FAIL")' "$VMTEST_TMP/final" | grep -c .)
unr=$(grep -c " UNREACHABLE " "$VMTEST_TMP/final")
ok=$(grep -c " OK " "$VMTEST_TMP/final")
[ "$unr" = $((N - 1)) ] && [ "$(awk -v l="$LAST" '($1 == l || $2 == l) && $3 == "UNREACHABLE"' "$VMTEST_TMP/final" | grep -c .)" = $((N - 1)) ] \
    || fail "$unr UNREACHABLE, want $LAST's $((N - 1)): $(grep UNREACHABLE "$VMTEST_TMP/final" | tr '\n' ';')"
[ "$n3bad" = $((N - 2)) ] || fail "$n3bad of n3's pairs LOW or FAIL, want all $((N - 2)): $(grep -w n3 "$VMTEST_TMP/final" | tr '\n' ';')"
[ "$ok" = $(( total - (N - 1) - (N - 2) )) ] || fail "$ok OK, want every other pair: $(grep -v -w -e OK -e UNREACHABLE -e n3 "$VMTEST_TMP/final" | tr '\n' ';')"
expect_contains "include n3"
# the schedule, from the records not re-run (a re-run's record carries its re-run pass as its
# round): N-1 rounds, or N with a bye each when N is odd (the circle method; UNREACHABLE pairs
# keep their round), at most N/2 pairs a round, no node twice in a round
grep -v ' retried ' "$VMTEST_TMP/final" >"$VMTEST_TMP/first"
rounds=$(awk '{print $5}' "$VMTEST_TMP/first" | sort -u | grep -c .)
[ "$rounds" = $(( N % 2 ? N : N - 1 )) ] || fail "$rounds rounds for $N nodes"
awk -v half=$((N / 2)) '{ n[$5]++; seen[$5 " " $1]++; seen[$5 " " $2]++ }
     END { for (k in seen) if (seen[k] > 1) { print "node twice in round: " k; bad = 1 }
           for (r in n) if (n[r] > half) { print "round " r ": " n[r] " pairs"; bad = 1 }
           exit bad }' "$VMTEST_TMP/first" || fail "schedule"
# each of n3's pairs was run again once after the rounds and not OK again (its first result kept)
[ "$(awk '($1 == "n3" || $2 == "n3") && $4 == "retried"' "$VMTEST_TMP/final" | grep -c .)" = "$n3bad" ] || fail "a pair of n3 not re-run"
[ -s "$M/report.html" ] || fail "no report.html"
log "matrix on $N nodes: $total pairs in $rounds rounds ($ok OK, n3's $n3bad LOW or FAIL, $LAST's $unr UNREACHABLE), SIGINT after $first, resumed"

# An odd node count on the same boot: 7 nodes (n4..n10, no fault among them), so the circle
# method's rounds have a bye each: 21 pairs in 7 rounds of 3, every pair once and OK, each node
# sitting out exactly one round.
M7=$VMTEST_TMP/m7
J=$M7/results.jsonl
run "$RPT" matrix --hosts "n[4-10]" --launcher ssh --ssh "$S" --remote-bin "$RPT" --preflight-timeout 120 \
    --rel 0.1 --max-pairs 3 --out "$M7" "${TEST[@]}"
[ "$LAST_RC" = 0 ] || fail "7-node run: exit $LAST_RC, want 0 (every pair OK)"
recs >"$VMTEST_TMP/odd"
[ "$(grep -c . "$VMTEST_TMP/odd")" = 21 ] || fail "7 nodes: $(grep -c . "$VMTEST_TMP/odd") records, want 21"
[ "$(awk '{print $1, $2}' "$VMTEST_TMP/odd" | sort -u | grep -c .)" = 21 ] || fail "7 nodes: a pair twice"
[ "$(grep -c ' OK - ' "$VMTEST_TMP/odd")" = 21 ] || fail "7 nodes: not every pair OK, once: $(grep -v ' OK - ' "$VMTEST_TMP/odd" | tr '\n' ';')"
awk '{ n[$5]++; seen[$5 " " $1]++; seen[$5 " " $2]++; busy[$1]++; busy[$2]++ }
     END { for (k in seen) if (seen[k] > 1) { print "node twice in round: " k; bad = 1 }
           if (length(n) != 7) { print length(n) " rounds"; bad = 1 }
           for (r in n) if (n[r] != 3) { print "round " r ": " n[r] " pairs"; bad = 1 }
           for (x in busy) if (busy[x] != 6) { print x " in " busy[x] " rounds"; bad = 1 }
           exit bad }' "$VMTEST_TMP/odd" || fail "7-node schedule"
log "matrix on 7 nodes: 21 pairs OK in 7 rounds of 3, each node out of one"

expect_rc 0 bash "$NC" down
[ -z "$(ip netns list)" ] || fail "namespaces left: $(ip netns list)"
! ip -o link show | grep -q ' nc-v' || fail "links left"
! rdma link show | grep -q 'rxe-n' || fail "rdma devices left: $(rdma link show)"
! grep -q ' n[0-9]*$' /etc/hosts || fail "hosts lines left"
echo "netns bed: $N nodes with rxe, $total pairs each once across SIGINT + --resume, n3 LOW, $LAST UNREACHABLE, nothing left"
