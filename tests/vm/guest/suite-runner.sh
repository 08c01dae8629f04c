#!/bin/bash
# Guest side of tests/vm/run-suite.sh: runs every case in /mnt/host/suite/cases
# (shipped per run, not part of the image) and prints one line per case:
#   VMTEST <name> ok|FAILED|skipped|xfail <seconds> [rc=N] [(note)]
# A case whose output (or any file it wrote) contains a Rust panic message fails (rc=70).
# A case that leaves RDMA objects behind (`rdma resource show`: pd, cq, qp, mr,
# cm_id, ctx, srq above their count before the case, once its processes are
# gone) fails (rc=71), naming the objects and the processes that hold them;
# the runner then kills those processes so the next case starts clean.
# then "VMTEST-DONE passed=.. failed=.. skipped=.. xfail=..".
# It always exits 0 once it has run every case: the verdict is in the lines,
# and a non-zero VM exit code means the bed itself broke.
#
# Case headers (first 40 lines, "# key: value"):
#   # timeout: SECS    per-case limit (default $VMTEST_DEFAULT_TIMEOUT, 300)
#   # mode: full|bare|any   skip the case in the other mode (default any)
#   # xfail: REASON    expected to fail for now: a failure is reported as
#                      xfail (not counted as failed); a pass as ok + a note
# A case that exits 77 is reported as skipped.
#
# Env from run-suite.sh: VMTEST_VERBOSE=1 (print every case's output),
# VMTEST_DEFAULT_TIMEOUT.  From /init: RXE_DEV RXE_NETDEV RXE_IP RXE_GID_IDX
# RXE_VM_MODE.
set -u
SUITE=${VMTEST_SUITE:-/mnt/host/suite}
export PATH=/mnt/host/bin:$PATH
export VMTEST_LIB=$SUITE/cases/lib.sh
MODE=${RXE_VM_MODE:-unknown}
VERBOSE=${VMTEST_VERBOSE:-0}
DEF_TIMEOUT=${VMTEST_DEFAULT_TIMEOUT:-300}

now() { local u r; read -r u r </proc/uptime; echo "$u"; }
secs() { awk "BEGIN{printf \"%.1f\", $2-$1}"; }
# header FILE KEY: print the value of "# KEY: value" (builtins only)
header() {
    local line n=0 v
    while IFS= read -r line; do
        n=$((n + 1)); [ $n -gt 40 ] && break
        case "$line" in
            "# $2:"*) v=${line#"# $2:"}; v=${v#"${v%%[![:space:]]*}"}; v=${v%"${v##*[![:space:]]}"}
                      printf '%s\n' "$v"; return 0 ;;
        esac
    done <"$1"
    return 1
}
show_log() { sed 's/^/    | /' "$1"; }

# rdma_counts: "dev:kind=N ..." for every device and object kind, e.g.
# "rxe0:pd=1 rxe0:cq=1 rxe0:qp=1 ..." (the kernel's own GSI objects included)
rdma_counts() {
    rdma resource show 2>/dev/null | awk '{
        dev = $2; sub(/:$/, "", dev)
        for (i = 3; i < NF; i += 2) printf "%s:%s=%s ", dev, $i, $(i + 1)
    }'
}
# leaked BEFORE AFTER: the kinds whose count grew, on devices that existed
# before (a case may add and remove devices of its own)
leaked() {
    local b a k v out=""
    declare -A was=()
    for b in $1; do was[${b%=*}]=${b#*=}; done
    for a in $2; do
        k=${a%=*}; v=${a#*=}
        [ -n "${was[$k]:-}" ] || continue
        [ "$v" -gt "${was[$k]}" ] && out+="$k ${was[$k]}->$v, "
    done
    printf '%s' "${out%, }"
}
# holders: the "pid N comm C" of every user object in the resource tables
holders() {
    local kind
    for kind in qp cq pd mr cm_id srq ctx; do
        rdma resource show "$kind" 2>/dev/null | grep -o 'pid [0-9]* comm [^ ]*'
    done | sort -u
}

echo "VMTEST-BEGIN mode=$MODE dev=${RXE_DEV:-?} ip=${RXE_IP:-?} gid_idx=${RXE_GID_IDX:-?} kernel=$(uname -r)"
passed=0 failed=0 skipped=0 xfailed=0
for c in "$SUITE"/cases/*.sh; do
    [ -f "$c" ] || continue
    name=${c##*/}; name=${name%.sh}
    [ "$name" = lib ] && continue
    cmode=$(header "$c" mode) || cmode=any
    t=$(header "$c" timeout) || t=$DEF_TIMEOUT
    xf=$(header "$c" xfail) || xf=""
    case "$cmode" in
        any|"$MODE") ;;
        *) echo "VMTEST $name skipped 0.0 (mode $cmode only)"; skipped=$((skipped + 1)); continue ;;
    esac
    dir=/tmp/vmtest/$name; rm -rf "$dir"; mkdir -p "$dir"
    before=$(rdma_counts)
    log=/tmp/vmtest/$name.log
    flag=/tmp/vmtest/$name.timedout
    t0=$(now)
    # own session + process group: the whole case (servers included) can be
    # killed as a group on timeout and cleaned up afterwards
    (cd "$dir" && VMTEST_CASE=$name VMTEST_TMP=$dir VMTEST_TIMEOUT=$t exec setsid bash "$c") </dev/null >"$log" 2>&1 &
    pid=$!
    ( sleep "$t"; : >"$flag"; kill -TERM -- -"$pid" 2>/dev/null; sleep 5; kill -KILL -- -"$pid" 2>/dev/null ) &
    wd=$!
    wait "$pid"; rc=$?
    kill "$wd" 2>/dev/null; wait "$wd" 2>/dev/null
    kill -KILL -- -"$pid" 2>/dev/null   # leftover background processes of the case
    dt=$(secs "$t0" "$(now)")
    note=""
    if [ -e "$flag" ]; then rc=124; note=" (timeout after ${t}s)"; echo "[vmtest] TIMEOUT after ${t}s" >>"$log"; fi
    # Leak check.  The kernel frees a process's objects when its last
    # uverbs/rdma_cm file closes, at exit; SIGKILLed processes may take a
    # moment to be reaped under TCG, so settle for up to 10 s first.
    leak=""
    for i in $(seq 1 50); do
        leak=$(leaked "$before" "$(rdma_counts)")
        [ -z "$leak" ] && break
        sleep 0.2
    done
    if [ -n "$leak" ]; then
        who=$(holders | tr '\n' ' '); who=${who% }
        [ "$rc" = 0 ] && rc=71
        note="$note (left RDMA objects behind: $leak; held by: ${who:-the kernel})"
        echo "[vmtest] LEAK: $leak; held by: ${who:-no process (kernel objects)}" >>"$log"
        for p in $(holders | awk '{print $2}'); do kill -KILL "$p" 2>/dev/null; done
        for i in $(seq 1 50); do [ -z "$(leaked "$before" "$(rdma_counts)")" ] && break; sleep 0.2; done
    fi
    # No Rust panic may ever reach a user, whatever the case expects: scan the case's output and
    # every file it wrote (server logs included) for the panic message.
    if grep -rqs "panicked at" "$log" "$dir"; then
        rc=70; note="$note (a Rust panic message appeared in the output)"
        grep -rhs -m3 "panicked at" "$log" "$dir" | sed 's/^/[vmtest] PANIC: /' >>"$log"
    fi
    if [ "$rc" = 0 ]; then
        [ -n "$xf" ] && note=" (passed although marked xfail: $xf; remove the header)"
        echo "VMTEST $name ok $dt$note"; passed=$((passed + 1))
        [ "$VERBOSE" = 1 ] && show_log "$log"
    elif [ "$rc" = 77 ]; then
        echo "VMTEST $name skipped $dt (case skipped itself)"; skipped=$((skipped + 1))
        show_log "$log"
    elif [ -n "$xf" ]; then
        echo "VMTEST $name xfail $dt rc=$rc (expected failure: $xf)$note"; xfailed=$((xfailed + 1))
        [ "$VERBOSE" = 1 ] && show_log "$log"
    else
        echo "VMTEST $name FAILED $dt rc=$rc$note"; failed=$((failed + 1))
        show_log "$log"
    fi
done
echo "VMTEST-DONE passed=$passed failed=$failed skipped=$skipped xfail=$xfailed"
exit 0
