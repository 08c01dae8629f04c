#!/bin/bash
# Guest half of bench/scripts/round-trip-split.sh: runs inside ONE full-mode VM of the test bed.
# For each latency client run, records the kernel's raw_syscalls events for write(2) with the
# x86-tsc trace clock, so the host side can split every iteration into time inside the doorbell
# write() and time between doorbells. Nothing here asserts a speed.
#
# Environment (all optional):
#   RTS_OUT     where results go (default /mnt/share)
#   RTS_RUNS    runs per implementation and tool (default 9)
#   RTS_N       "-n" (default 2000)
#   RTS_SIZE    "-s" for non-atomic tools (default 2)
#   RTS_TOOLS   (default "ib_atomic_lat ib_read_lat")
#   RTS_IMPLS   c = C perftest, ours = rperftest, alt = rperftest-alt (default "c ours")
#   RTS_EVENTS  more tracepoints to record, as SUBSYSTEM/EVENT (default none; e.g.
#               "sched/sched_switch irq_vectors/local_timer_entry" to see what hit the slow
#               iterations); ones this kernel lacks are skipped with a note
# Output: RTS_OUT/trace.TOOL.IMPL.RUN.txt (the trace), RTS_OUT/server.TOOL.IMPL.RUN (the server's
#   pid: in a ping-pong both processes ring doorbells), RTS_OUT/results.tsv (tool impl run, then
#   perftest's result columns), RTS_OUT/tsc.txt (the guest's TSC rate).
set -u
OUT=${RTS_OUT:-/mnt/share}
RUNS=${RTS_RUNS:-9}
N=${RTS_N:-2000}
SIZE=${RTS_SIZE:-2}
TOOLS=${RTS_TOOLS:-ib_atomic_lat ib_read_lat}
IMPLS=${RTS_IMPLS:-c ours}
. "$(dirname "${BASH_SOURCE[0]}")/tcp-listening.bash"
say() { local u r; read -r u r </proc/uptime; echo "[$u] $*"; }

T=/sys/kernel/tracing
[ -e $T/trace ] || mount -t tracefs nodev $T 2>/dev/null
[ -e $T/trace ] || { mount -t debugfs none /sys/kernel/debug 2>/dev/null; T=/sys/kernel/debug/tracing; }
[ -e $T/events/raw_syscalls/sys_enter/enable ] || { say "no tracefs with raw_syscalls events"; exit 1; }
echo x86-tsc >$T/trace_clock || { say "no x86-tsc trace clock"; exit 1; }
echo 16384 >$T/buffer_size_kb
echo 'id == 1' >$T/events/raw_syscalls/sys_enter/filter   # write(2) only
echo 'id == 1' >$T/events/raw_syscalls/sys_exit/filter
# The TSC rate the kernel measured at boot (MHz), to turn ticks into ns.
dmesg | sed -n 's/.*tsc: Detected \([0-9.]*\) MHz.*/\1/p' | head -1 >"$OUT/tsc.txt"
[ -s "$OUT/tsc.txt" ] || awk -F: '/cpu MHz/ { print $2 + 0; exit }' /proc/cpuinfo >"$OUT/tsc.txt"
: >"$OUT/results.tsv"
say "start: $(nproc) vCPUs, $(uname -r), TSC $(cat "$OUT/tsc.txt") MHz"

X=(-d "$RXE_DEV" -x "$RXE_GID_IDX")
# Enable the two events once, while nothing else runs, and gate recording with tracing_on per
# run: enabling a tracepoint patches kernel text, and doing that between runs (while the server
# was still exiting) left a vCPU spinning in the guest kernel in 2 of 4 early tries under TCG.
echo 0 >$T/tracing_on
echo 1 >$T/events/raw_syscalls/sys_enter/enable
echo 1 >$T/events/raw_syscalls/sys_exit/enable
for ev in ${RTS_EVENTS:-}; do
    if [ -e "$T/events/$ev/enable" ]; then echo 1 >"$T/events/$ev/enable"; else say "no event $ev: skipped"; fi
done
for tool in $TOOLS; do
    S=(-s "$SIZE"); case $tool in *atomic*) S=() ;; esac
    say "$tool ${S[*]} -n $N: $IMPLS × $RUNS"
    for ((r = 1; r <= RUNS; r++)); do
        for impl in $IMPLS; do
            case $impl in
                c) BIN=("$tool") ;;
                ours) BIN=(rperftest "$tool") ;;
                alt) BIN=(rperftest-alt "$tool") ;;
                *) say "unknown implementation $impl"; exit 2 ;;
            esac
            "${BIN[@]}" "${X[@]}" "${S[@]}" -n "$N" >/tmp/srv 2>&1 &
            srv=$!
            echo "$srv" >"$OUT/server.$tool.$impl.$r"
            i=0
            until tcp_listening 18515; do
                sleep 0.05; i=$((i + 1))
                if [ $i -gt 600 ] || ! kill -0 $srv 2>/dev/null; then break; fi
            done
            echo >$T/trace
            echo 1 >$T/tracing_on
            timeout 120 "${BIN[@]}" "${X[@]}" "${S[@]}" -n "$N" "$RXE_IP" >/tmp/cli 2>&1
            rc=$?
            echo 0 >$T/tracing_on
            i=0; while kill -0 $srv 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
            kill -KILL $srv 2>/dev/null; wait $srv 2>/dev/null
            grep -v '^#' $T/trace >"$OUT/trace.$tool.$impl.$r.txt"
            line=$(awk '/^ [0-9]+[ \t]+[0-9]+[ \t]/ && NF >= 9 { $1 = $1; gsub(/ /, "\t"); print }' /tmp/cli)
            printf '%s\t%s\t%s\t%s\t%s\n' "$tool" "$impl" "$r" "$rc" "${line:--}" >>"$OUT/results.tsv"
            [ "$rc" = 0 ] || { say "rc=$rc $impl $tool"; sed 's/^/  cli| /' /tmp/cli; }
        done
    done
done
say "end"
