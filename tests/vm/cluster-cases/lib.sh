# Helpers for tests/vm/cluster-cases/*.sh (sourced).  The cases run on the
# host; cluster-suite.sh has booted the cluster (node1, node3 (and node5 on
# the 5-node bed) full; node2, node4 bare) and sets CLUSTER (cluster.sh), CLUSTER_NODES,
# CLUSTER_BARE and VMTEST_TMP (the case's cwd).
set -uo pipefail
CL=$CLUSTER
# The matrix cases' cluster: node1-node4 (their pair and round counts are those
# of 4 nodes); 35 has a 5-node bed of its own.
MATRIX_NODES=4
GIDX=1      # the IPv4-mapped RoCEv2 GID: index 1 on every node (init checks)
on() { local n=$1; shift; "$CL" exec "$n" -- "$@"; }
fail() { echo "FAIL: $*"; exit 1; }
note() { echo "--- $*"; }
is_bare() { [[ ,$CLUSTER_BARE, == *,${1#node},* ]]; }

# bg NODE NAME CMD...: CMD on NODE in the background; output in NAME.out,
# exit code in NAME.rc (both in the case's dir on the host)
bg() {
    local n=$1 name=$2; shift 2
    ( "$CL" exec "$n" -- "$@" >"$name.out" 2>&1 </dev/null; echo $? >"$name.rc" ) &
}
# wait_bg NAME SECS: wait for bg job NAME to end (at most SECS); prints rc
wait_bg() {
    local name=$1 secs=$2 i=0
    while [ ! -s "$name.rc" ]; do
        [ $i -ge $((secs * 5)) ] && { echo timeout; return 0; }
        sleep 0.2; i=$((i + 1))
    done
    cat "$name.rc"
}
# wait_listen NODE PORT [SECS]: until a TCP socket listens on PORT on NODE (IPv4, or IPv6 with
# its 32-digit wildcard peer, as qperf's dual-stack listener)
wait_listen() {
    local hex; hex=$(printf '%04X' "$2")
    on "$1" bash -c "for i in \$(seq 1 $((${3:-60} * 5))); do grep -Eq ':$hex (0{8}|0{32}):0000 0A' /proc/net/tcp /proc/net/tcp6 2>/dev/null && exit 0; sleep 0.2; done; exit 1" \
        || fail "nothing listens on $1:$2 after ${3:-60} s"
}
# pushed_and_removed ERRFILE: a `matrix --push` run's stderr says the binary went to a private
# /tmp/rperftest-push-<16 hex> on every matrix node and was removed, and no node has such a
# directory
pushed_and_removed() {
    grep -Eq "^push: this binary to /tmp/rperftest-push-[0-9a-f]{16}/rperftest in $MATRIX_NODES of $MATRIX_NODES node" "$1" || fail "no push line"
    grep -q "^push: /tmp/rperftest-push-[0-9a-f]* removed from every node" "$1" || fail "pushed copies not removed"
    local k left
    for k in $(seq 1 "$CLUSTER_NODES"); do
        left=$(on "node$k" bash -c 'ls -d /tmp/rperftest-push-* 2>/dev/null | wc -l')
        [ "$left" = 0 ] || fail "node$k: $left push directory(ies) left"
    done
}
# a perftest result line: size, iterations, then numbers
has_result() { grep -Eq '^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+' "$1"; }
# ours / C perftest on a node, as a command prefix
ours() { echo rperftest; }

# pair LABEL SNODE "SERVER ARGS" CNODE "CLIENT ARGS": a perftest server on
# SNODE, then its client on CNODE against SNODE (the client's last argument);
# both must exit 0 and print a result line.  Bounded: the server listens
# within 60 s, the client ends within 180 s, the server 30 s after it.
pair() {
    local label=$1 sn=$2 sargs=$3 cn=$4 cargs=$5 tag rc crc
    tag=$(echo "$label" | tr -c 'a-zA-Z0-9\n' '_')
    # shellcheck disable=SC2086
    bg "$sn" "$tag.server" timeout 200 $sargs
    case "$sargs" in *" -R"*|*" -z"*) sleep 3 ;; *) wait_listen "$sn" 18515 60 ;; esac
    # shellcheck disable=SC2086
    on "$cn" timeout 180 $cargs "$sn" >"$tag.client" 2>&1; crc=$?
    rc=$(wait_bg "$tag.server" 30)
    if [ "$crc" != 0 ] || [ "$rc" != 0 ] || ! has_result "$tag.client" || ! has_result "$tag.server.out"; then
        echo "FAILED: $label: client rc=$crc, server rc=$rc"
        echo "--- server ($sn: $sargs)"; cat "$tag.server.out"
        echo "--- client ($cn: $cargs $sn)"; cat "$tag.client"
        return 1
    fi
    echo "ok: $label: $(grep -E '^ *[0-9]+ +[0-9]+ +[0-9.]+' "$tag.client" | tail -1 | tr -s ' ')"
}

# ends_with_error LABEL FILE RC SECS BOUND: a side that must have failed
# cleanly: non-zero exit (not the 124 of the case's own timeout), within
# BOUND seconds, with an error line
ends_with_error() {
    local label=$1 f=$2 rc=$3 s=$4 bound=$5
    [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$rc" != timeout ] || { cat "$f"; fail "$label: exit $rc, want a clean failure"; }
    [ "$s" -le "$bound" ] || { cat "$f"; fail "$label: took ${s}s, bound ${bound}s"; }
    local line; line=$(grep -viE '^ *(-{5,}|#|[0-9])|^ [A-Za-z ]+: |^\s*$|RDMA_|Test$|^ +GID|address' "$f" | tail -1)
    [ -n "$line" ] || { cat "$f"; fail "$label: no error line"; }
    echo "ok: $label: exit $rc after ${s}s: $line"
}

# The two-host tool set of cases 10 and 11 (issue: write_bw, read_bw,
# send_lat, atomic_bw, and -R), small enough for TCG VMs.
TWO_HOST_TESTS=("ib_write_bw -s 4096 -n 200" "ib_read_bw -s 4096 -n 200" "ib_send_lat -n 100"
                "ib_atomic_bw -A FETCH_AND_ADD -n 200" "ib_write_bw -R -s 4096 -n 200")
# dev_args TEST: the device options for TEST (-R picks its GID through rdma_cm)
dev_args() { case "$1" in *" -R"*) echo "-d rxe0" ;; *) echo "-d rxe0 -x $GIDX" ;; esac; }
