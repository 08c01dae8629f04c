#!/bin/bash
# --aes_xts (AES-XTS crypto offload, an mlx5 feature) on rxe, ours and C perftest 6.06 side by
# side, with valid-looking key files (48-line credentials, a KEK file, a key app that writes 40
# hex lines):
# * write/read/send tools: both read the credentials, then fail to open the device as DEVX
#   (mlx5dv_open_device) before any connection: the same last two lines, exit 1, at once, server
#   and client alike; a missing or 50-line credentials file gives perftest's three lines.
# * atomic tools (perftest opens the device plainly there): both connect, run the key app, then
#   fail to create the DEK: "Failed to create dek" + " Couldn't create IB resources", exit 1,
#   both sides, ours<->ours, ours server <- C client, C server <- ours client; our key file is
#   removed; a failing key app gives perftest's "Execution of ... has failed" lines.
# * parameter checks: the same message as C's line, exit 1, nothing connected.
# mode: full
# (not in bare: the bare image differs only by lacking rdma-core, which 19-bare-all-tools covers)
# timeout: 600
. "$VMTEST_LIB"
X=(-d "$RXE_DEV" -x "$RXE_GID_IDX")
full() { [ "$RXE_VM_MODE" = full ]; }

K=$VMTEST_TMP/aes
mkdir -p "$K"
for i in $(seq 0 47); do printf '%x\n' $(( (i * 7 + 3) % 256 )); done >"$K/cred"
for i in $(seq 1 50); do echo 1; done >"$K/cred50"
echo 00112233445566778899aabbccddeeff >"$K/kek"
cat >"$K/app.sh" <<EOS
#!/bin/sh
# <kek> <out>: 40 lines, one hex byte each (the wrapped key); logs its output path
echo "\$2" >>"$K/app.log"
i=1; while [ \$i -le 40 ]; do printf '%x\n' \$i; i=\$((i+1)); done >"\$2"
EOS
cat >"$K/bad.sh" <<EOS
#!/bin/sh
echo "kek rejected" >&2
exit 3
EOS
chmod +x "$K/app.sh" "$K/bad.sh"
P=(--kek_path "$K/kek" --credentials_path "$K/cred" --data_enc_key_app_path "$K/app.sh")
OPEN2=$(printf "Couldn't get context for the device\n Couldn't get context for the device")

# tail_is FILE N TEXT: the last N lines of FILE are TEXT
tail_is() { [ "$(tail -n "$2" "$1")" = "$3" ] || fail "the last $2 lines of $1 are not: $3"; }

# open_fails KIND TOOL [ARGS...]: --aes_xts fails at the device open, exit 1, within 10 s,
# before any connection; run as server (no host) and as client.
open_fails() {
    local kind=$1 tool=$2; shift 2
    local cmd=("$tool")
    [ "$kind" = ours ] && cmd=(rperftest "$tool")
    for host in "" "$RXE_IP"; do
        log "== $kind $tool --aes_xts $* ${host:-(server)}"
        mark
        run with_timeout 30 "${cmd[@]}" "${X[@]}" --aes_xts "${P[@]}" "$@" $host
        bound 10 "refused"
        [ "$LAST_RC" = 1 ] || fail "rc=$LAST_RC, want 1"
        tail_is "$LAST_OUT" 2 "$OPEN2"
        expect_not_contains "Couldn't connect"
        expect_not_contains "Waiting for client"
        expect_not_contains "local address"
        if [ "$kind" = ours ]; then
            expect_contains "--aes_xts needs an mlx5 device with DEVX"
            [ "$(grep -c . "$LAST_OUT")" = 3 ] || fail "ours: not our line + perftest's two"
        fi
    done
}
for t in ib_write_bw ib_read_bw ib_send_bw ib_send_lat ib_read_lat; do open_fails ours $t; done
open_fails ours ib_write_bw -q 2 --data_enc_keys_number 3 --aes_block_size 4096 --encrypt_on_tx --sig_before
open_fails ours ib_send_bw -z
if full; then
    open_fails C ib_write_bw
    open_fails C ib_send_lat
fi

# Credentials problems: perftest's three lines end the output (ours adds one line first).
cred_fails() {
    local kind=$1 file=$2 first=$3
    local cmd=(ib_write_bw)
    [ "$kind" = ours ] && cmd=(rperftest ib_write_bw)
    log "== $kind credentials $file"
    run with_timeout 30 "${cmd[@]}" "${X[@]}" --aes_xts --kek_path "$K/kek" --credentials_path "$file" \
        --data_enc_key_app_path "$K/app.sh" "$RXE_IP"
    [ "$LAST_RC" = 1 ] || fail "rc=$LAST_RC, want 1"
    tail_is "$LAST_OUT" 3 "$(printf "%s\nCouldn't set credentials\n Couldn't get context for the device" "$first")"
    [ "$kind" = ours ] && expect_contains "--credentials_path $file: "
    return 0
}
for kind in ours $(full && echo C); do
    cred_fails "$kind" "$K/none" "Can not open the credentials file"
    cred_fails "$kind" "$K/cred50" "Invalid credentials file"
done
# ours only (perftest reads past a short or garbage file): one clear line, still its last two
printf '1\n2\n' >"$K/cred2"
run with_timeout 30 rperftest ib_write_bw "${X[@]}" --aes_xts --kek_path "$K/kek" --credentials_path "$K/cred2" \
    --data_enc_key_app_path "$K/app.sh" "$RXE_IP"
[ "$LAST_RC" = 1 ] || fail "rc=$LAST_RC, want 1"
expect_contains "2 lines; want 48 lines, one hex byte each"

# atomic_pair SRV CLI TOOL APP WANT: both sides connect, run the key app, fail in ctx_init.
# WANT: the line before " Couldn't create IB resources" on our side(s).
atomic_pair() {
    local ks=$1 kc=$2 tool=$3 app=$4 want=$5
    local srv=("$tool") cli=("$tool")
    [ "$ks" = ours ] && srv=(rperftest "$tool")
    [ "$kc" = ours ] && cli=(rperftest "$tool")
    local a=(--aes_xts --kek_path "$K/kek" --credentials_path "$K/cred" --data_enc_key_app_path "$K/$app")
    log "== $tool --aes_xts ($app): server $ks, client $kc"
    : >"$K/app.log"
    start_server -t 60 "${srv[@]}" "${X[@]}" "${a[@]}"
    mark
    run with_timeout 90 "${cli[@]}" "${X[@]}" "${a[@]}" "$RXE_IP"
    bound 60 "client exit"
    [ "$LAST_RC" = 1 ] || fail "client rc=$LAST_RC, want 1"
    expect_contains " Couldn't create IB resources"
    expect_not_contains "Couldn't connect"
    [ "$kc" = ours ] && tail_is "$LAST_OUT" 2 "$(printf "%s\n Couldn't create IB resources" "$want")"
    wait_server 60
    bound 70 "server exit"
    [ "$SERVER_RC" = 1 ] || fail "server rc=$SERVER_RC, want 1"
    expect_contains " Couldn't create IB resources" "$SERVER_LOG"
    [ "$ks" = ours ] && tail_is "$SERVER_LOG" 2 "$(printf "%s\n Couldn't create IB resources" "$want")"
    if [ "$app" = app.sh ]; then
        # the key app ran on each side with a /tmp/<6 chars> path, which is gone afterwards
        [ "$(grep -c '^/tmp/[a-z0-9]\{6\}$' "$K/app.log")" -ge 2 ] || fail "key app did not run on both sides"
        while read -r f; do [ ! -e "$f" ] || fail "key file $f left behind"; done <"$K/app.log"
    fi
    return 0
}
atomic_pair ours ours ib_atomic_bw app.sh "Failed to create dek"
atomic_pair ours ours ib_atomic_lat app.sh "Failed to create dek"
atomic_pair ours ours ib_atomic_bw bad.sh "Failed to set dek"
expect_contains "Execution of $K/bad.sh $K/kek /tmp/" "$SERVER_LOG"
expect_contains "exit status: 3: kek rejected" "$SERVER_LOG"
if full; then
    atomic_pair ours C ib_atomic_bw app.sh "Failed to create dek"
    atomic_pair C ours ib_atomic_bw app.sh "Failed to create dek"
    atomic_pair C ours ib_atomic_bw bad.sh "Failed to set dek"
    expect_contains "Execution of $K/bad.sh $K/kek /tmp/"
fi

# conflict TOOL MSG ARGS...: ours and C refuse at once with MSG, exit 1, nothing connected.
conflict() {
    local tool=$1 msg=$2; shift 2
    log "== conflict: $tool $*"
    mark
    run with_timeout 20 rperftest "$tool" "${X[@]}" "$@" "$RXE_IP"
    bound 5 "ours refused"
    [ "$LAST_RC" = 1 ] || fail "ours rc=$LAST_RC, want 1"
    expect_contains ": $msg"
    expect_not_contains "Couldn't connect"
    [ "$(grep -c . "$LAST_OUT")" = 1 ] || fail "ours: not one line"
    if full; then
        run with_timeout 20 "$tool" "${X[@]}" "$@" "$RXE_IP"
        [ "$LAST_RC" = 1 ] || fail "C rc=$LAST_RC, want 1"
        grep -qx -- " $msg" "$LAST_OUT" || fail "C: no line ' $msg'"
        expect_not_contains "Couldn't connect"
    fi
}
conflict ib_write_bw "aes_xts supported only on RC" --aes_xts -c UC "${P[@]}"
conflict ib_send_bw "aes_xts supported only on RC" --aes_xts -c UD "${P[@]}"
conflict ib_write_bw "Please provide key encryption key file path" --aes_xts
conflict ib_write_bw "Please provide data encryption key app path" --aes_xts --kek_path "$K/kek" --credentials_path "$K/cred"
conflict ib_write_bw "Please provide credentials file path" --aes_xts --kek_path "$K/kek" --data_enc_key_app_path "$K/app.sh"
conflict ib_write_lat "aes_xts isn't supported on write_lat" --aes_xts "${P[@]}"
conflict ib_write_bw "aes_xts doesn't support Inline messages" --aes_xts "${P[@]}" -s 64 -I 64
conflict ib_send_lat "aes_xts doesn't support Inline messages" --aes_xts "${P[@]}" -s 8 -I 100
conflict ib_write_bw "aes_xts doesn't support old post send" --aes_xts "${P[@]}" --use_old_post_send
conflict ib_write_bw "rdma_cm doesn't support aes_xts" --aes_xts "${P[@]}" -R
conflict ib_write_bw "encrypt_on_tx supported only when enc/dec traffic" --encrypt_on_tx
conflict ib_read_bw "sig_before supported only when enc/dec traffic" --sig_before
conflict ib_write_bw "giving credentials path supported only with enc/dec traffic" --credentials_path "$K/cred"
conflict ib_write_bw "giving kek path supported only with enc/dec traffic" --kek_path "$K/kek"
conflict ib_send_bw "giving kek path supported only with enc/dec traffic" --data_enc_key_app_path "$K/app.sh"
log "== --aes_block_size abc: ours refuses in one line, C too"
run with_timeout 20 rperftest ib_write_bw --aes_xts "${P[@]}" --aes_block_size abc "$RXE_IP"
[ "$LAST_RC" = 1 ] || fail "ours rc=$LAST_RC"
expect_contains "aes_block_size argument 'abc' should be an integer"
if full; then
    run with_timeout 20 ib_write_bw --aes_xts "${P[@]}" --aes_block_size abc "$RXE_IP"
    [ "$LAST_RC" = 1 ] || fail "C rc=$LAST_RC"
    expect_contains "aes_block_size argument abc should be uint16_t"
fi
log "PASS"
