#!/bin/bash
# Guest half of bench/scripts/side-by-side.sh: runs inside ONE full-mode VM of the test bed.
# Alternates C perftest and rperftest on rxe0 (server and client in this VM, client → $RXE_IP),
# several runs per point, and writes raw rows to $SBS_OUT/raw.tsv. Nothing here asserts a speed.
#
# Environment (all optional):
#   SBS_OUT       where results go (default /mnt/share)
#   SBS_RUNS      runs per implementation and point (default 5)
#   SBS_BW_N      "-n" for BW points, as SIZE=N,... (default 2=10000,64=10000,4096=3000,65536=500)
#   SBS_LAT_N     "-n" for latency points (default 2000); atomics run once at their fixed 8 bytes
#   SBS_TOOLS_BW / SBS_TOOLS_LAT   which tools (default all four of each; "" = none)
#   SBS_URING     points that also run ours with RPERFTEST_RXE_DOORBELL=uring and uring-sqpoll,
#                 as TOOL:SIZE,... (default ib_write_bw:2,ib_write_bw:64,ib_read_lat:2,ib_write_lat:2);
#                 "" = none. Only the client's doorbell changes; the server keeps write().
#   SBS_IMPLS     implementations at every point (default "c ours"; also: ours-mono = ours
#                 with RPERFTEST_CLOCK=monotonic, ours-uring, ours-sqpoll; alt = the second
#                 binary rperftest-alt, see RPERFTEST_ALT_BIN in side-by-side.sh)
#   SBS_STARTUP   runs of the startup measurement per implementation (default 3; 0 = skip)
#
# Raw rows (tab separated):
#   kind tool size impl run rc  f1..f7  cpu_user_s cpu_sys_s maxrss_kib wall_s
# kind=bw:  f1 iters, f2 peak, f3 avg, f4 msgrate
# kind=lat: f1 iters, f2 t_min, f3 t_max, f4 t_typical, f5 t_avg, f6 t_stdev, f7 p99
# CPU and RSS are the CLIENT process's (getrusage of the child via busybox time, and bash `times`).
set -u
OUT=${SBS_OUT:-/mnt/share}
RUNS=${SBS_RUNS:-5}
BW_N=${SBS_BW_N:-2=10000,64=10000,4096=3000,65536=500}
LAT_N=${SBS_LAT_N:-2000}
TOOLS_BW=${SBS_TOOLS_BW-ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw}
TOOLS_LAT=${SBS_TOOLS_LAT-ib_write_lat ib_read_lat ib_send_lat ib_atomic_lat}
URING=${SBS_URING-ib_write_bw:2,ib_write_bw:64,ib_read_lat:2,ib_write_lat:2}
STARTUP=${SBS_STARTUP:-3}
IMPLS=${SBS_IMPLS:-c ours}
X=(-d "$RXE_DEV" -x "$RXE_GID_IDX")
W=$(mktemp -d)
RAW=$OUT/raw.tsv
LOG=$OUT/guest.log
: >"$RAW"
exec 3>>"$LOG"
say() { local u r; read -r u r </proc/uptime; echo "[$u] $*"; echo "[$u] $*" >&3; }

. "$(dirname "${BASH_SOURCE[0]}")/tcp-listening.bash"
listening() { tcp_listening 18515; }

# bin IMPL TOOL → the command words in $BIN
set_bin() {
    case "$1" in
        c) BIN=("$2"); ENVS=() ;;
        ours) BIN=(rperftest "$2"); ENVS=(RPERFTEST_RXE_DOORBELL=write) ;;
        ours-uring) BIN=(rperftest "$2"); ENVS=(RPERFTEST_RXE_DOORBELL=uring) ;;
        ours-sqpoll) BIN=(rperftest "$2"); ENVS=(RPERFTEST_RXE_DOORBELL=uring-sqpoll) ;;
        ours-mono) BIN=(rperftest "$2"); ENVS=(RPERFTEST_RXE_DOORBELL=write RPERFTEST_CLOCK=monotonic) ;;
        alt) BIN=(rperftest-alt "$2"); ENVS=(RPERFTEST_RXE_DOORBELL=write) ;;
    esac
    # The doorbell experiment varies the CLIENT's doorbell only; the server keeps write()
    # (the write_bw and read_lat servers never post anyway).
    SRV_ENVS=("${ENVS[@]}")
    case "$1" in ours-*) SRV_ENVS=(RPERFTEST_RXE_DOORBELL=write) ;; esac
}

# one KIND TOOL SIZE IMPL RUN ITERS: one server+client pair, one raw row. Retries once when
# C perftest cannot calibrate its clock under TCG.
one() {
    local kind=$1 tool=$2 size=$3 impl=$4 run=$5 n=$6 try rc srv i line f ru t0 t1 S
    set_bin "$impl" "$tool"
    S=(-s "$size"); case "$tool" in *atomic*) S=() ;; esac  # atomics are 8 bytes; -s is refused
    for try in 1 2 3; do
        env "${SRV_ENVS[@]}" "${BIN[@]}" "${X[@]}" "${S[@]}" -n "$n" >"$W/srv" 2>&1 &
        srv=$!
        i=0
        until listening; do
            sleep 0.05; i=$((i + 1))
            if [ $i -gt 600 ] || ! kill -0 $srv 2>/dev/null; then break; fi
        done
        read -r t0 _ </proc/uptime
        bash -c '"$@" 2>&1; times >&2' _ env "${ENVS[@]}" busybox time -o "$W/ru" -v \
            "${BIN[@]}" "${X[@]}" "${S[@]}" -n "$n" "$RXE_IP" \
            >"$W/cli" 2>"$W/times" &
        local cpid=$! k=0
        while kill -0 $cpid 2>/dev/null; do
            sleep 0.1; k=$((k + 1))
            [ $k -gt 900 ] && { kill -KILL $cpid $srv 2>/dev/null; say "KILLED after 90 s: $impl $tool $size"; break; }
        done
        wait $cpid; rc=$?
        read -r t1 _ </proc/uptime
        i=0
        while kill -0 $srv 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
        kill -KILL $srv 2>/dev/null; wait $srv 2>/dev/null
        if [ $try -lt 3 ] && grep -q "Can't produce a report" "$W/cli" "$W/srv"; then
            say "clock calibration failed ($impl $tool $size); retrying"
            continue
        fi
        break
    done
    # the result line: perftest's layout, the same for both implementations
    line=$(awk -v k="$kind" '
        # any token may be "inf" or "-nan" (perftest prints them; so does rperftest, faithfully)
        k != "lat" && /^ [0-9]+[ \t]+[0-9]+[ \t]/ && NF >= 5 { l = $1"\t"$2"\t"$3"\t"$4"\t"$5"\t-\t-\t-" }
        k == "lat" && /^ [0-9]+[ \t]+[0-9]+[ \t]/ && NF >= 9 { l = $1"\t"$2"\t"$3"\t"$4"\t"$5"\t"$6"\t"$7"\t"$8 }
        END { print l }' "$W/cli")
    [ -n "$line" ] || { line="$size	-	-	-	-	-	-	-"; rc=${rc/#0/99}; }
    # bash `times`: line 2 = children's user and system time, e.g. "0m1.234s 0m0.056s"
    local cu cs rss
    local ct
    ct=$(sed -n 2p "$W/times" | awk '{ for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); printf "%.3f ", a[1] * 60 + a[2] } }')
    read -r cu cs <<<"$ct"
    rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$W/ru")
    f=$(echo "$line" | cut -f2-)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$kind" "$tool" "$size" "$impl" "$run" "$rc" \
        "$f" "${cu:--}" "${cs:--}" "${rss:--}" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')" >>"$RAW"
    if [ "$rc" != 0 ]; then
        say "rc=$rc $impl $tool -s $size"; sed 's/^/  cli| /' "$W/cli" >&3; sed 's/^/  srv| /' "$W/srv" >&3
    fi
}

# point KIND TOOL SIZE N IMPL...: RUNS rounds; the order of the implementations rotates each
# round so that drift in the machine's load hits all of them alike.
point() {
    local kind=$1 tool=$2 size=$3 n=$4; shift 4
    local impls=("$@") r j k m=$#
    say "$tool -s $size -n $n: ${impls[*]} × $RUNS"
    for ((r = 1; r <= RUNS; r++)); do
        for ((j = 0; j < m; j++)); do
            k=$(((j + r - 1) % m))
            one "$kind" "$tool" "$size" "${impls[$k]}" "$r" "$n"
        done
    done
}

uring_at() { case ",$URING," in *",$1:$2,"*) return 0 ;; esac; return 1; }

say "start: load $(cat /proc/loadavg); $(nproc) vCPUs; $(uname -r)"
say "C perftest: $(dpkg-query -W perftest 2>/dev/null || grep -m1 perftest /etc/rxe-vm/manifest.txt)"
say "rperftest: $(rperftest --version 2>&1 | head -1)"
say "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
say "io_uring_disabled=$(cat /proc/sys/kernel/io_uring_disabled 2>/dev/null || echo 'absent (never disabled)')"

for tool in $TOOLS_BW; do
    for sn in ${BW_N//,/ }; do
        size=${sn%%=*} n=${sn#*=}
        case "$tool" in *atomic*) [ "$size" = 2 ] || continue; size=8 ;; esac
        impls=($IMPLS); uring_at "$tool" "$size" && impls+=(ours-uring ours-sqpoll)
        point bw "$tool" "$size" "$n" "${impls[@]}"
    done
done
for tool in $TOOLS_LAT; do
    for size in 2 64; do
        case "$tool" in *atomic*) [ "$size" = 2 ] || continue; size=8 ;; esac
        impls=($IMPLS); uring_at "$tool" "$size" && impls+=(ours-uring ours-sqpoll)
        point lat "$tool" "$size" "$LAT_N" "${impls[@]}"
    done
done

# Setup cost: the same client with 5 iterations (its CPU is subtracted from the per-op figures).
point setup ib_write_bw 64 5 c ours

# Startup: exec → first doorbell (a 32-byte write() of POST_SEND, command 0x1c, on the uverbs
# fd; librxe rings it the same way), traced with strace --seccomp-bpf so only execve and write
# stop the process. ib_write_bw -s 64 -n 5 client; the server is started first, untraced.
if [ "$STARTUP" -gt 0 ] && command -v strace >/dev/null; then
    say "startup: $STARTUP runs each"
    ST=$OUT/startup.tsv; : >"$ST"
    for ((r = 1; r <= STARTUP; r++)); do
        for impl in c ours; do
            set_bin "$impl" ib_write_bw
            env "${ENVS[@]}" "${BIN[@]}" "${X[@]}" -s 64 -n 5 >"$W/srv" 2>&1 &
            srv=$!
            i=0; until listening || [ $i -gt 600 ]; do sleep 0.05; i=$((i + 1)); done
            env "${ENVS[@]}" strace -f --seccomp-bpf -tt -xx -s 4 -e trace=execve,write -o "$W/st" \
                "${BIN[@]}" "${X[@]}" -s 64 -n 5 "$RXE_IP" >"$W/cli" 2>&1
            wait $srv
            awk -v impl="$impl" -v r="$r" '
                function t(s,  a) { split(s, a, ":"); return a[1] * 3600 + a[2] * 60 + a[3] }
                $3 ~ /^execve\(/ && !e { e = t($2) }
                $3 ~ /^write\(/ && /"\\x1c\\x00\\x00\\x00"/ && !d { d = t($2) }
                END { printf "%s\t%d\t%.1f\n", impl, r, (d && e) ? (d - e) * 1000 : -1 }' "$W/st" >>"$ST"
            cp "$W/st" "$OUT/strace.$impl.$r.txt"
        done
    done
fi
say "end: load $(cat /proc/loadavg)"
