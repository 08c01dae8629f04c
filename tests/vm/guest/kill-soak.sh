#!/bin/bash
# Kill-anything soak (guest side): back-to-back runs of the eight tools,
# ours against ours on rxe0, over TCP or rdma_cm (-R), each with SIGKILL or
# SIGINT sent to the client or the server at a random moment (from before
# the client connects to after the report).
#
#   kill-soak.sh RUNS [SEED]
#
# Every run must end thus: the surviving side within its bound, with exit 0
# (the run was over before the signal landed) or with a non-zero exit and an
# error line; the signalled side by its signal (SIGKILL: 137; SIGINT: 130 or
# 0 if it had finished); no Rust panic anywhere; the RDMA object counts back
# to what they were; and every 10th run is a run with no kill that must pass
# (the same port, 18515, every time: nothing of a killed run may be in the
# way).  The seed is printed first, so a failing schedule can be replayed.
# Last line: "SOAK runs=... kills=... hangs=0 panics=0 followon=0 leaks=0 ..."
# Exit 0 only if no run failed.
set -u
RUNS=${1:?usage: kill-soak.sh RUNS [SEED]}
SEED=${2:-$(( $(date +%s) % 32768 ))}
RANDOM=$SEED
DEV=${RXE_DEV:-rxe0}
GIDX=${RXE_GID_IDX:-1}
IP=${RXE_IP:?RXE_IP}
# The tools' own bounds for a silent peer, shortened for the soak through
# their test settings (the runs themselves last ~1 s under TCG, so 10 s of no
# progress is a dead peer, not a slow one); the survivor must end within them.
export RPERFTEST_STALL_TIMEOUT=10 RPERFTEST_OOB_TIMEOUT=10
BOUND=45
TOOLS=(write_bw read_bw send_bw atomic_bw write_lat read_lat send_lat atomic_lat)
W=$(mktemp -d /tmp/soak.XXXXXX)
echo "SOAK-SEED $SEED (replay: kill-soak.sh $RUNS $SEED)"

counts() { rdma resource show 2>/dev/null | tr -s ' '; }
BASE=$(counts)
runs=0 kills=0 ints=0 clean=0 early=0 never=0 hangs=0 panics=0 followon=0 leaks=0 bad=0

# wait_pid PID SECS: sets RC to its exit status, or "hang" (then it is
# killed).  Not in a $(...) subshell: only this shell can wait for its children.
wait_pid() {
    local p=$1 s=$2 i=0
    while kill -0 "$p" 2>/dev/null; do
        i=$((i + 1))
        if [ $i -gt $((s * 10)) ]; then kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; RC=hang; return; fi
        sleep 0.1
    done
    wait "$p"; RC=$?
}
# the last line that says something (not a blank or a table rule)
last_line() { grep -Ev '^[[:space:]]*$|^ *-{10,}$' "$1" | tail -1; }

for r in $(seq 1 "$RUNS"); do
    tool=${TOOLS[$((RANDOM % 8))]}
    cm=$((RANDOM % 2))
    victim=$((RANDOM % 2))      # 0 client, 1 server
    sig=$((RANDOM % 2))         # 0 KILL, 1 INT
    delay=$((RANDOM % 16))      # tenths of a second after the client starts
    kill_it=1
    [ $((r % 10)) = 0 ] && kill_it=0
    case "$tool" in *_bw) n="-n 1000 -s 4096" ;; *) n="-n 500" ;; esac
    case "$tool" in atomic_*) n="-n 500" ;; esac
    if [ $cm = 1 ]; then opts="-d $DEV -R $n"; else opts="-d $DEV -x $GIDX $n"; fi
    t_run=$(date +%s)
    # shellcheck disable=SC2086
    rperftest "ib_$tool" $opts >"$W/s.out" 2>&1 &
    sp=$!
    sleep 0.3
    # shellcheck disable=SC2086
    rperftest "ib_$tool" $opts "$IP" >"$W/c.out" 2>&1 &
    cp=$!
    what="run $r: ib_$tool $([ $cm = 1 ] && echo -R || echo TCP)"
    if [ $kill_it = 1 ]; then
        vp=$cp; sp_or_cp=client; [ $victim = 1 ] && { vp=$sp; sp_or_cp=server; }
        s=KILL; [ $sig = 1 ] && s=INT
        sleep "$(awk "BEGIN{print $delay/10}")"
        kill -"$s" "$vp" 2>/dev/null || early=$((early + 1))   # already ended: nothing to kill
        kills=$((kills + 1)); [ $sig = 1 ] && ints=$((ints + 1))
        what+=", SIG$s to the $sp_or_cp at +$(awk "BEGIN{print $delay/10}")s"
    else
        clean=$((clean + 1)); what+=", no kill"
    fi
    if [ $kill_it = 1 ] && [ $victim = 0 ]; then
        # a client killed before it reached the server leaves a server that
        # is still, correctly, waiting for a client: once the client is gone,
        # a server that never printed its peer's address is stopped by
        # SIGINT and must end as a stopped server does (130)
        wait_pid "$cp" "$BOUND"; crc=$RC
        for i in $(seq 1 30); do kill -0 "$sp" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$sp" 2>/dev/null && ! grep -q 'remote address' "$W/s.out"; then
            kill -INT "$sp"; wait_pid "$sp" 10; src=$RC; never=$((never + 1))
            [ "$src" = 130 ] || src="$src(stopped while waiting for a client)"
            [ "$src" = 130 ] && src=0
        else
            wait_pid "$sp" "$BOUND"; src=$RC
        fi
    else
        wait_pid "$cp" "$BOUND"; crc=$RC; wait_pid "$sp" "$BOUND"; src=$RC
    fi
    runs=$((runs + 1))
    what+=" ($(( $(date +%s) - t_run )) s)"
    fail=""
    if [ "$crc" = hang ] || [ "$src" = hang ]; then hangs=$((hangs + 1)); fail+=" hang(client=$crc server=$src)"; fi
    if grep -qs "panicked at" "$W/c.out" "$W/s.out"; then panics=$((panics + 1)); fail+=" panic"; fi
    if [ $kill_it = 0 ]; then
        if [ "$crc" != 0 ] || [ "$src" != 0 ]; then followon=$((followon + 1)); fail+=" clean-run-failed(client=$crc server=$src)"; fi
    else
        if [ $victim = 1 ]; then vrc=$src; orc=$crc; of=$W/c.out; else vrc=$crc; orc=$src; of=$W/s.out; fi
        case "$s:$vrc" in
            KILL:137|KILL:0|INT:130|INT:0) ;;
            *) fail+=" victim-exit=$vrc" ;;
        esac
        if [ "$orc" != 0 ] && [ "$orc" != hang ] && [ -z "$(last_line "$of")" ]; then
            fail+=" survivor-exit=$orc-without-a-line"
        fi
    fi
    # nothing of this run may stay in the kernel
    ok=0
    for i in $(seq 1 50); do [ "$(counts)" = "$BASE" ] && { ok=1; break; }; sleep 0.2; done
    if [ $ok = 0 ]; then leaks=$((leaks + 1)); fail+=" leak($(counts))"; fi
    if [ -n "$fail" ]; then
        bad=$((bad + 1))
        echo "SOAK-FAIL $what:$fail"
        echo "  client (exit $crc): $(last_line "$W/c.out")"; echo "  server (exit $src): $(last_line "$W/s.out")"
    else
        sv=""
        [ $kill_it = 1 ] && [ "$orc" != 0 ] && sv="; survivor: $(last_line "$of")"
        echo "SOAK-OK $what: client $crc, server $src$sv"
    fi
done
rm -rf "$W"
echo "SOAK runs=$runs kills=$kills (SIGINT $ints, landed after the end $early, client gone before connecting $never) clean=$clean hangs=$hangs panics=$panics followon=$followon leaks=$leaks failed=$bad seed=$SEED"
[ $bad = 0 ]
