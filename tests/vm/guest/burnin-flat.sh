#!/bin/bash
# A burn-in that must stay flat (guest side): rperftest ib_write_bw (or the
# tool given) with --run_infinitely, server and client on rxe0, for SECONDS;
# every INTERVAL seconds the RDMA object counts (`rdma resource show`) and
# both processes' VmRSS are sampled.  Then SIGINT to both.
#
#   burnin-flat.sh SECONDS INTERVAL [TOOL]
#
# Flat means: every sample's object counts equal the first one's, and each
# process's RSS grows by at most 512 KiB past its first sample (the first
# sample is taken after the warm-up: buffers registered, QPs connected).
# Both sides must end on the SIGINT with perftest's exit code for a stopped
# infinite run (0) or ours for a signal (130), and no panic.
# Prints one line per sample and a "BURNIN" summary; exit 0 iff flat.
set -u
SECS=${1:?usage: burnin-flat.sh SECONDS INTERVAL [TOOL]}
IVL=${2:?interval}
TOOL=${3:-ib_write_bw}
DEV=${RXE_DEV:-rxe0}; GIDX=${RXE_GID_IDX:-1}; IP=${RXE_IP:?RXE_IP}
W=$(mktemp -d /tmp/burnin.XXXXXX)
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null; }
counts() { rdma resource show "$DEV" 2>/dev/null | tr -s ' ' | sed 's/^[0-9]*: //'; }

rperftest "$TOOL" -d "$DEV" -x "$GIDX" --run_infinitely -s 4096 >"$W/s.out" 2>&1 &
sp=$!
sleep 0.5
rperftest "$TOOL" -d "$DEV" -x "$GIDX" --run_infinitely -s 4096 "$IP" >"$W/c.out" 2>&1 &
cp=$!
# warm-up: both connected and measuring (the first result line printed)
for i in $(seq 1 300); do grep -Eq '^ *4096 ' "$W/c.out" && break; sleep 0.1; done
grep -Eq '^ *4096 ' "$W/c.out" || { echo "BURNIN no result line within 30 s"; cat "$W/c.out" "$W/s.out"; kill -KILL $sp $cp; exit 1; }

c0=$(counts); s0=$(rss $sp); k0=$(rss $cp)
smax=$s0 kmax=$k0 bad=0 objbad=0 n=0 t0=$(date +%s)
echo "sample 0 t=0s objects: $c0; rss server ${s0} KiB, client ${k0} KiB"
while [ $(( $(date +%s) - t0 )) -lt "$SECS" ]; do
    sleep "$IVL"
    n=$((n + 1))
    kill -0 $sp 2>/dev/null && kill -0 $cp 2>/dev/null || { echo "BURNIN a side ended early"; bad=1; break; }
    c=$(counts); s=$(rss $sp); k=$(rss $cp)
    [ "$s" -gt "$smax" ] && smax=$s; [ "$k" -gt "$kmax" ] && kmax=$k
    flag=""
    [ "$c" = "$c0" ] || { flag+=" OBJECTS-CHANGED"; bad=1; objbad=1; }
    [ $((s - s0)) -le 512 ] || { flag+=" SERVER-RSS-GREW"; bad=1; }
    [ $((k - k0)) -le 512 ] || { flag+=" CLIENT-RSS-GREW"; bad=1; }
    echo "sample $n t=$(( $(date +%s) - t0 ))s objects: $c; rss server ${s} KiB, client ${k} KiB$flag"
done
kill -INT $cp $sp 2>/dev/null
crc=""; src=""
for i in $(seq 1 100); do kill -0 $cp 2>/dev/null || kill -0 $sp 2>/dev/null || break; sleep 0.1; done
kill -KILL $cp $sp 2>/dev/null
wait $cp; crc=$?; wait $sp; src=$?
case "$crc:$src" in 0:0|130:130|0:130|130:0) ;; *) echo "BURNIN exits client=$crc server=$src"; bad=1 ;; esac
grep -qs 'panicked at' "$W/c.out" "$W/s.out" && { echo "BURNIN panic"; bad=1; }
lines=$(grep -cE '^ *4096 ' "$W/c.out")
echo "BURNIN $TOOL ${SECS}s samples=$n result_lines=$lines objects_flat=$([ $objbad = 0 ] && echo yes || echo no) rss_server=${s0}..${smax}KiB rss_client=${k0}..${kmax}KiB exits=$crc/$src $([ $bad = 0 ] && echo FLAT || echo NOT-FLAT)"
rm -rf "$W"
[ $bad = 0 ]
