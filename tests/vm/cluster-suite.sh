#!/bin/bash
# The cluster part of the VM suite: one `cluster.sh up`, every
# tests/vm/cluster-cases/*.sh on the host against it, then `cluster.sh down`.
#
#   cluster-suite.sh [--nodes N] [--rails R] [--bare LIST] [--filter REGEX] [-v] BIN
#
# BIN: the rperftest binary put on every node.  Defaults: 4 nodes, node2 and
# node4 bare (so each full node has a bare neighbour).  Cases get CLUSTER
# (cluster.sh), CLUSTER_LIB, CLUSTER_NODES, CLUSTER_RAILS, CLUSTER_BARE, VMTEST_TMP (cwd)
# and VMTEST_CASE; headers as in tests/vm/cases (# timeout: SECS;
# # nodes: N, the bed size the case needs, 4 when absent: on another size
# it is reported skipped, so `--nodes 5 --filter '^35'` runs the 5-node one;
# # rails: R, the NICs per node the case needs, 1 when absent: a bed with
# fewer is reported skipped; --rails R boots the bed with R (cluster.sh up --rails);
# # xfail: REASON for a known intermittent or open failure: a failure is
# reported as xfail, a pass as ok with a note to drop the header).  Before
# each case every running node's faults are cleared.
#
# Output: the VMTEST/VMSUITE lines of run-suite.sh (mode=cluster), with two
# lines of its own: "up" (the boot, ssh and Slurm checks) and "down" (nothing
# left running: no qemu, tap, bridge or namespace).
# Exit: 0 all passed, 1 a case failed, 125 the cluster did not come up.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NODES=4
RAILS=1
BARE=2,4
FILTER=""
VERBOSE=0
BIN=""
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --nodes) NODES=$2; shift 2 ;;
        --rails) RAILS=$2; shift 2 ;;
        --bare) BARE=$2; shift 2 ;;
        --filter) FILTER=$2; shift 2 ;;
        -v) VERBOSE=1; shift ;;
        -h|--help) usage ;;
        -*) echo "cluster-suite: unknown option $1" >&2; usage ;;
        *) [ -z "$BIN" ] || usage; BIN=$1; shift ;;
    esac
done
[ -n "$BIN" ] && [ -f "$BIN" ] || { echo "cluster-suite: no rperftest binary '$BIN'" >&2; usage; }
T0=$(date +%s.%N)
now() { date +%s.%N; }
secs() { awk "BEGIN{printf \"%.1f\", $(now)-$1}"; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/rxe-cluster-suite.XXXXXX")
export RPT_CLUSTER_DIR=$WORK/cluster
CL=$HERE/cluster.sh
trap '"$CL" down >/dev/null 2>&1; rm -rf "$WORK"' EXIT

NAMES=()
for c in "$HERE"/cluster-cases/*.sh; do
    name=${c##*/}; name=${name%.sh}
    [ "$name" = lib ] && continue
    if [ -n "$FILTER" ] && ! [[ $name =~ $FILTER ]]; then continue; fi
    NAMES+=("$name")
done
passed=0 failed=0 xfailed=0 skipped=0
report() {  # name ok|FAILED secs [rc] [note] ; output file
    local name=$1 st=$2 t=$3 rc=$4 out=$5 note=${6:-}
    echo "VMTEST $name $st $t${rc:+ rc=$rc}${note:+ ($note)}"
    if [ "$st" != ok ] || [ "$VERBOSE" = 1 ]; then sed 's/^/    | /' "$out"; fi
    case "$st" in ok) passed=$((passed + 1)) ;; xfail) xfailed=$((xfailed + 1)) ;; *) failed=$((failed + 1)) ;; esac
}

# ------------------------------------------------------------------ up
t=$(now)
"$CL" up "$NODES" --rails "$RAILS" --bare "$BARE" --bin "$BIN" >"$WORK/up.out" 2>&1
rc=$?
if [ $rc != 0 ]; then
    report up FAILED "$(secs "$t")" "$rc" "$WORK/up.out"
    for n in "${NAMES[@]}"; do echo "VMTEST $n FAILED 0.0 rc=125 (not run: the cluster did not come up)"; done
    failed=$((failed + ${#NAMES[@]}))
    echo "VMSUITE mode=cluster passed=0 failed=$failed skipped=0 xfail=0 boot=- cases=- total=$(secs "$T0")"
    exit 125
fi
read -r BOOT READY <"$RPT_CLUSTER_DIR/up-seconds"
report up ok "$(secs "$t")" "" "$WORK/up.out" "$NODES nodes x $RAILS rail(s), bare $BARE: booted in ${BOOT}s, ssh and Slurm ready in ${READY}s"

# ---------------------------------------------------------------- cases
TC=$(now)
for name in "${NAMES[@]}"; do
    c=$HERE/cluster-cases/$name.sh
    to=$(sed -n '1,40s/^# timeout:[[:space:]]*\([0-9]\+\).*/\1/p' "$c" | head -1)
    xf=$(sed -n '1,40s/^# xfail:[[:space:]]*\(.*\)/\1/p' "$c" | head -1)
    need=$(sed -n '1,40s/^# nodes:[[:space:]]*\([0-9]\+\).*/\1/p' "$c" | head -1)
    if [ "${need:-4}" != "$NODES" ]; then
        echo "VMTEST $name skipped 0 (needs a bed of ${need:-4} nodes, this one has $NODES)"
        skipped=$((skipped + 1)); continue
    fi
    needr=$(sed -n '1,40s/^# rails:[[:space:]]*\([0-9]\+\).*/\1/p' "$c" | head -1)
    if [ "${needr:-1}" -gt "$RAILS" ]; then
        echo "VMTEST $name skipped 0 (needs ${needr} rails, this bed has $RAILS)"
        skipped=$((skipped + 1)); continue
    fi
    for k in $(seq 1 "$NODES"); do
        "$CL" status 2>/dev/null | grep -q "^node$k .* running" && "$CL" fault "node$k" clear >/dev/null 2>&1
    done
    d=$WORK/cases/$name; mkdir -p "$d"
    t=$(now)
    ( cd "$d" && CLUSTER=$CL CLUSTER_LIB=$HERE/cluster-cases/lib.sh CLUSTER_NODES=$NODES CLUSTER_RAILS=$RAILS CLUSTER_BARE=$BARE \
        VMTEST_TMP=$d VMTEST_CASE=$name setsid timeout -k 10 "${to:-300}" bash "$c" ) >"$d/output" 2>&1
    rc=$?
    if [ $rc = 0 ]; then report "$name" ok "$(secs "$t")" "" "$d/output" "${xf:+passed although marked xfail: $xf}"
    elif [ -n "$xf" ]; then report "$name" xfail "$(secs "$t")" "$rc" "$d/output" "expected failure: $xf"
    elif [ $rc = 124 ] || [ $rc = 137 ]; then report "$name" FAILED "$(secs "$t")" "$rc" "$d/output" "timeout ${to:-300}s"
    else report "$name" FAILED "$(secs "$t")" "$rc" "$d/output"; fi
done
CASES_S=$(secs "$TC")

# ---------------------------------------------------------------- down
t=$(now)
"$CL" down >"$WORK/down.out" 2>&1
rc=$?
ns=$(ip netns list 2>/dev/null | grep -c '^rptcl' || true)
qemus=$(pgrep -f "$RPT_CLUSTER_DIR/node" | wc -l)
echo "namespaces left: $ns; qemu processes of this cluster left: $qemus" >>"$WORK/down.out"
if [ $rc = 0 ] && [ "$ns" = 0 ] && [ "$qemus" = 0 ]; then report down ok "$(secs "$t")" "" "$WORK/down.out" "nothing left running"
else report down FAILED "$(secs "$t")" "$rc" "$WORK/down.out"; fi
echo "VMSUITE mode=cluster passed=$passed failed=$failed skipped=$skipped xfail=$xfailed boot=$BOOT cases=$CASES_S total=$(secs "$T0")"
[ "$failed" = 0 ]
