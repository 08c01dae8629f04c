#!/bin/bash
# Guest half of bench/scripts/qperf-vs-stock.sh: runs inside ONE full-mode VM of the test bed.
# Both sides ours (`rperftest qperf`) against both sides Debian's qperf 0.4.11, alternating,
# client and server in this VM, the client to $RXE_IP (rxe0's netdev): tcp_bw, tcp_lat, and
# rc_bw, rc_lat with rdma_cm (stock's NODE has no GID, so on RoCE its RC tests need -cm1).
# Writes raw rows to $QVS_OUT/raw.tsv. Nothing here asserts a speed.
#
# Environment (all optional):
#   QVS_OUT     where results go (default /mnt/share)
#   QVS_RUNS    rounds (default 5); each round runs both implementations, the order swapping
#               every round so drift of the bed hits both alike
#   QVS_TIME    -t of every test, seconds (default 2)
#
# Raw rows (tab separated):  impl round test figure value
#   impl: ours | stock; figure: bw (bytes/s) or latency (s), from the text qperf prints
#   (3 significant digits, as both print them); value "-" when the run printed none.
set -u
OUT=${QVS_OUT:-/mnt/share}
RUNS=${QVS_RUNS:-5}
TIME=${QVS_TIME:-2}
STOCK=/usr/bin/qperf
RAW=$OUT/raw.tsv
LOG=$OUT/guest.log
W=$(mktemp -d)
: >"$RAW"
exec 3>>"$LOG"
say() { local u r; read -r u r </proc/uptime; echo "[$u] $*"; echo "[$u] $*" >&3; }
[ -x "$STOCK" ] || { say "no $STOCK (full image needed)"; exit 1; }

. "$(dirname "${BASH_SOURCE[0]}")/tcp-listening.bash"
wait_listen() {
    local i=0
    until tcp_listening "$1"; do
        sleep 0.05; i=$((i + 1))
        [ $i -gt 600 ] && { say "nothing listens on $1"; exit 1; }
    done
}

# Each implementation's server stays up for the whole run, on its own port.
rperftest qperf -lp 19765 >"$W/ours-srv.log" 2>&1 &
OURS_SRV=$!
"$STOCK" -lp 19766 >"$W/stock-srv.log" 2>&1 &
STOCK_SRV=$!
trap 'kill $OURS_SRV $STOCK_SRV 2>/dev/null' EXIT
wait_listen 19765
wait_listen 19766

# to_si VALUE UNIT: bytes/s or seconds
to_si() {
    awk -v v="${1//,/}" -v u="$2" 'BEGIN {
        m["bytes/sec"] = 1; m["KB/sec"] = 1e3; m["MB/sec"] = 1e6; m["GB/sec"] = 1e9
        m["ns"] = 1e-9; m["us"] = 1e-6; m["ms"] = 1e-3; m["sec"] = 1
        if (!(u in m)) { print "-"; exit }
        printf "%.6g\n", v * m[u] }'
}

# one IMPL ROUND: one client run of the four tests; a raw row per test.
one() {
    local impl=$1 round=$2 rc t fig line
    local cmd=(rperftest qperf -lp 19765)
    [ "$impl" = stock ] && cmd=("$STOCK" -lp 19766)
    timeout $((TIME * 4 + 60)) "${cmd[@]}" "$RXE_IP" -t "$TIME" tcp_bw tcp_lat -cm1 rc_bw rc_lat >"$W/cli" 2>&1
    rc=$?
    cat "$W/cli" >&3
    for t in tcp_bw tcp_lat rc_bw rc_lat; do
        case $t in *_bw) fig=bw ;; *) fig=latency ;; esac
        # the figure row of test t's block: "    bw  =  10.1 MB/sec"
        line=$(awk -v t="$t:" -v f="$fig" '
            $0 == t { on = 1; next }
            on && /^[a-z_]+:$/ { exit }
            on && $1 == f && $2 == "=" { print $3, $4; exit }' "$W/cli")
        if [ -n "$line" ]; then
            printf '%s\t%s\t%s\t%s\t%s\n' "$impl" "$round" "$t" "$fig" "$(to_si $line)" >>"$RAW"
        else
            printf '%s\t%s\t%s\t%s\t-\n' "$impl" "$round" "$t" "$fig" >>"$RAW"
        fi
    done
    say "round $round $impl rc=$rc"
}

say "qperf vs stock: $RUNS rounds, -t $TIME, server and client in this VM ($RXE_IP)"
for round in $(seq 1 "$RUNS"); do
    if [ $((round % 2)) = 1 ]; then one ours "$round"; one stock "$round"
    else one stock "$round"; one ours "$round"; fi
done
say "done"
