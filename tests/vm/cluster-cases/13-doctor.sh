#!/bin/bash
# rperftest doctor between two hosts (expected ~20 s; 19-21 s on the bed): `doctor --serve` on node4, `doctor
# node4` on node3. A healthy pair is all ok (RC SEND, WRITE, READ; the packets left through
# eth0), exit 0. Then each fault is named with its fix, each client within 15 s: a wrong -x
# (the IPv6 link-local GID, index 0) against the peer's RoCE v2 IPv4 GID; an MTU mismatch
# (node4's netdev MTU 1000: active 512 against 1024); UDP 4791 dropped at node4 (RETRY_EXC,
# or no completion within the doctor's bound, with TCP working); TCP 18515 refused (no
# server) and dropped. Every fault is cleared.
# timeout: 180
. "$CLUSTER_LIB"
trap '"$CL" fault node4 clear >/dev/null 2>&1' EXIT
n=0
# doctor_pair LABEL WANT_RC "CLIENT ARGS": a fresh server on node4, the client on node3 against
# it; the client's rc must be WANT_RC and it must end within 15 s. Output in $out.
doctor_pair() {
    local label=$1 want=$2 args=$3 t0 rc
    n=$((n + 1)); out=client.$n.out
    bg node4 "srv$n" timeout 40 rperftest doctor --serve --listen-timeout 30
    wait_listen node4 18515 30
    t0=$(date +%s)
    # shellcheck disable=SC2086
    on node3 timeout 30 rperftest doctor $args node4 >"$out" 2>&1; rc=$?
    secs=$(( $(date +%s) - t0 ))
    srv_rc=$(wait_bg "srv$n" 20)
    if [ "$rc" != "$want" ] || [ "$secs" -gt 15 ]; then
        echo "--- server"; cat "srv$n.out"; echo "--- client"; cat "$out"
        fail "$label: client rc=$rc (want $want) after ${secs}s (bound 15 s)"
    fi
    echo "ok: $label: client rc=$rc after ${secs}s, server rc=$srv_rc"
    grep -E '^(FAIL|warn) |^ok    peer (RC|counters)' "$out" | sed 's/^/    /'
}
has() { grep -qF -- "$1" "$out" || { cat "$out"; fail "expected '$1' in the client's lines"; }; }

# --- healthy
doctor_pair "healthy pair" 0 "-d rxe0"
for op in SEND WRITE READ; do has "ok    peer RC $op"; done
has "ok    peer GID: this side RoCE v2 index 1 (IPv4 10.77.0.3), peer RoCE v2 index 1 (IPv4 10.77.0.4)"
has "ok    peer MTU: active MTU 1024 and netdev MTU 1500 on both"
has "ok    peer counters: eth0 sent"
grep -q "^FAIL" "$out" && { cat "$out"; fail "a healthy pair has a FAIL"; }
[ "$srv_rc" = 0 ] || { cat "srv$n.out"; fail "healthy: server rc=$srv_rc"; }

# --- wrong -x: the IPv6 link-local GID against the peer's RoCE v2 IPv4 one
doctor_pair "wrong -x 0" 1 "-d rxe0 -x 0"
has "FAIL  peer GID: GID types differ: this side RoCE v2 index 0 (IPv6 fe80::"
has "peer RoCE v2 index 1 (IPv4 10.77.0.4); fix: use -x 1 on this side"
has "warn  rxe0/1 GID: -x 0 is RoCE v2, IPv6"

# --- MTU mismatch
"$CL" fault node4 mtu 1000 || fail "fault mtu"
doctor_pair "MTU 1000 at node4" 1 "-d rxe0"
has "FAIL  peer MTU: active MTUs differ: this side 1024 (netdev eth0 MTU 1500), peer 512 (netdev MTU 1000)"
has "-m 512 on both sides"
has "FAIL  peer RC WRITE: REM_INV_REQ_ERR: the peer refused packets larger than its MTU"
"$CL" fault node4 clear || fail "fault clear"

# --- UDP 4791 dropped at node4
"$CL" fault node4 drop-udp 4791 || fail "fault drop-udp"
doctor_pair "UDP 4791 dropped at node4" 1 "-d rxe0"
has "ok    peer TCP: "
# RETRY_EXC_ERR where the device honours the QP's retry bound; rxe on 6.1 keeps retrying,
# so the doctor's own 4 s bound names the same causes
has "FAIL  peer RC SEND: "
has "with the peer reachable over TCP: the RoCE packets get no answer"
has "UDP 4791 (RoCE v2) is dropped on the path"
has "the packets left through eth0 but few came back"
"$CL" fault node4 clear || fail "fault clear"

# --- TCP 18515: refused (nothing listens), then dropped
t0=$(date +%s)
on node3 timeout 30 rperftest doctor -d rxe0 node4 >refused.out 2>&1; rc=$?
out=refused.out
[ "$rc" = 1 ] && [ $(( $(date +%s) - t0 )) -le 15 ] || { cat "$out"; fail "refused: rc=$rc"; }
has "FAIL  peer TCP: 10.77.0.4:18515 refused the connection"
has "fix: start 'rperftest doctor --serve -p 18515'"
echo "ok: TCP 18515 refused named"; grep '^FAIL' "$out" | sed 's/^/    /'
"$CL" fault node4 drop-tcp 18515 || fail "fault drop-tcp"
t0=$(date +%s)
on node3 timeout 30 rperftest doctor -d rxe0 node4 >dropped.out 2>&1; rc=$?
out=dropped.out
[ "$rc" = 1 ] && [ $(( $(date +%s) - t0 )) -le 15 ] || { cat "$out"; fail "dropped: rc=$rc"; }
has "FAIL  peer TCP: no answer from 10.77.0.4:18515 within 3 s"
echo "ok: TCP 18515 dropped named"; grep '^FAIL' "$out" | sed 's/^/    /'
"$CL" fault node4 clear || fail "fault clear"
