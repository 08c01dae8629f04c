#!/bin/bash
# Where the test buffer comes from (issue #5): --mmap <file> / --mmap-offset (the file mapped
# MAP_SHARED is the buffer, perftest's "allocated mmap buffer" line; a too-small file is one
# line, exit 1), --payload_file_path (the sender's buffer holds the file's DWORD pattern: proven
# by reading the *receiver's* --mmap file after the run, where the pattern must have landed in
# its receive area), and --odp refused on rxe (no On-Demand Paging) in one line.
# Against C perftest 6.06 (full image): C server with --mmap receives our payload; C client
# with --mmap -> our --mmap server.
# mode: full
# (not in bare: the bare image differs only by lacking rdma-core, which 19-bare-all-tools covers)
# timeout: 600
. "$VMTEST_LIB"
X=(-d "$RXE_DEV" -x "$RXE_GID_IDX")
full() { [ "$RXE_VM_MODE" = full ]; }
PAGE=$(getconf PAGESIZE 2>/dev/null || echo 4096)
[ "$PAGE" = 4096 ] || skip "page size $PAGE: the offsets below assume 4096"
# -s 4096, one QP: B = max(4096, page) = 4096; buffer = 2 B = 8192 bytes (send area, then the
# receive/target area). With --mmap-offset 4096 the file needs 12288 bytes and the receive area
# is file bytes 8192..12287.
S=(-s 4096 -n 200)
PAY=/tmp/27-payload.txt
printf '0x11223344,0x55667788,\n0x99aabbcc,0xddeeff00\n' >"$PAY"
# The 16 bytes of that pattern, little-endian words; the receive area must be 256 copies.
WANT=$(for i in $(seq 256); do printf '4433221188776655ccbbaa9900ffeedd'; done)

newfile() { rm -f "$1"; head -c "$2" /dev/zero >"$1" || fail "cannot create $1"; }
# recv_area FILE: hex of file bytes 8192..12287
recv_area() { od -An -tx1 -v -j 8192 -N 4096 "$1" | tr -d ' \n'; }
payload_landed() {
    local got; got=$(recv_area "$1")
    [ "$got" = "$WANT" ] || { echo "receive area of $1 starts: ${got:0:96}"; fail "$2: the sender's --payload_file_path pattern is not in $1"; }
    log "$2: the receive area of $1 holds the sender's pattern (4096 bytes)"
}
mmap_line() {
    grep -qE "^allocated mmap buffer of size 8192 at 0x[0-9a-f]+$" "$1" || { cat "$1"; fail "$2: no 'allocated mmap buffer of size 8192 at 0x…' line"; }
}

for tool in ib_write_bw ib_send_bw; do
    log "== $tool ours <-> ours: server --mmap (offset 4096), client --mmap + --payload_file_path"
    newfile /tmp/27-srv.bin 12288
    newfile /tmp/27-cli.bin 8192
    pair "$tool" rperftest "$tool" "${X[@]}" "${S[@]}" --mmap /tmp/27-srv.bin --mmap-offset 4096 -- \
        rperftest "$tool" "${X[@]}" "${S[@]}" --mmap=/tmp/27-cli.bin --payload_file_path "$PAY" "$RXE_IP"
    mmap_line "$SERVER_LOG" "$tool server"
    mmap_line "$VMTEST_TMP/client.out" "$tool client"
    payload_landed /tmp/27-srv.bin "$tool ours -> ours"
    # The client's own file is its buffer: the pattern fills it too (send area at offset 0).
    [ "$(od -An -tx1 -v -N 16 /tmp/27-cli.bin | tr -d ' \n')" = "${WANT:0:32}" ] || fail "$tool: client's --mmap file does not hold its payload"
    # The first file page (before --mmap-offset) is untouched.
    [ "$(od -An -tx1 -v -N 4096 /tmp/27-srv.bin | tr -d ' \n0')" = "" ] || fail "$tool: bytes before --mmap-offset were written"
done

log "== --mmap file too small: one line naming the file and sizes, exit 1, before connecting"
newfile /tmp/27-small.bin 8192
mark
expect_rc 1 with_timeout 30 rperftest ib_write_bw "${X[@]}" "${S[@]}" --mmap /tmp/27-small.bin --mmap-offset 4096
bound 20 "too-small --mmap refusal"
expect_contains "--mmap file '/tmp/27-small.bin' is too small: the buffer needs 8192 bytes from offset 4096 (12288 bytes), the file has 8192 bytes"
[ "$(wc -l <"$LAST_OUT")" = 1 ] || fail "the too-small refusal is not one line"
expect_rc 1 with_timeout 30 rperftest ib_write_bw "${X[@]}" --mmap /tmp/27-missing.bin
expect_contains "Unable to open '/tmp/27-missing.bin' (--mmap)"
[ "$(wc -l <"$LAST_OUT")" = 1 ] || fail "the missing-file refusal is not one line"
expect_rc 1 with_timeout 30 rperftest ib_write_bw "${X[@]}" --mmap /tmp/27-small.bin --mmap-offset 100
expect_contains "--mmap-offset 100 is not a multiple of the page size (4096)"

log "== --payload_file_path errors: one line, exit 1"
expect_rc 1 with_timeout 30 rperftest ib_send_bw "${X[@]}" --payload_file_path /tmp/27-nothere.txt
expect_contains "Failed to open '/tmp/27-nothere.txt' (--payload_file_path)"
[ "$(wc -l <"$LAST_OUT")" = 1 ] || fail "not one line"
printf '0x1122334,0x55667788\n' >/tmp/27-bad.txt
expect_rc 1 with_timeout 30 rperftest ib_send_bw "${X[@]}" --payload_file_path /tmp/27-bad.txt
expect_contains "Failed to parse DWORD number: 0 (--payload_file_path '/tmp/27-bad.txt')"
[ "$(wc -l <"$LAST_OUT")" = 1 ] || fail "not one line"
printf '0x11223344,0x5566778g\n' >/tmp/27-bad.txt
expect_rc 1 with_timeout 30 rperftest ib_write_bw "${X[@]}" --payload_file_path /tmp/27-bad.txt
expect_contains "Invalid hex char in DWORD number: 1"

log "== --payload_file_path with send_lat ours <-> ours (server --mmap sees the client's pattern)"
newfile /tmp/27-srv.bin 12288
pair ib_send_lat rperftest ib_send_lat "${X[@]}" -s 4096 -n 100 --mmap /tmp/27-srv.bin --mmap-offset 4096 -- \
    rperftest ib_send_lat "${X[@]}" -s 4096 -n 100 --payload_file_path "$PAY" "$RXE_IP"
payload_landed /tmp/27-srv.bin "ib_send_lat ours -> ours"

log "== --odp on rxe: the device has no On-Demand Paging: one line, exit 1"
for tool in ib_write_bw ib_send_lat ib_read_bw; do
    mark
    expect_rc 1 with_timeout 30 rperftest "$tool" "${X[@]}" --odp
    bound 20 "$tool --odp refusal"
    expect_contains " The device does not support On-Demand Paging. (run without --odp)"
    [ "$(wc -l <"$LAST_OUT")" = 1 ] || fail "$tool --odp refusal is not one line"
done

if full; then
    log "== write_bw ours -> C server with --mmap: our payload lands in C's file"
    newfile /tmp/27-srv.bin 12288
    pair ib_write_bw ib_write_bw "${X[@]}" "${S[@]}" --mmap /tmp/27-srv.bin --mmap-offset 4096 -- \
        rperftest ib_write_bw "${X[@]}" "${S[@]}" --payload_file_path "$PAY" "$RXE_IP"
    mmap_line "$SERVER_LOG" "C server"
    payload_landed /tmp/27-srv.bin "ib_write_bw ours -> C"

    log "== send_bw C client --mmap -> ours server --mmap"
    newfile /tmp/27-srv.bin 12288
    newfile /tmp/27-cli.bin 8192
    pair ib_send_bw rperftest ib_send_bw "${X[@]}" "${S[@]}" --mmap /tmp/27-srv.bin --mmap-offset 4096 -- \
        ib_send_bw "${X[@]}" "${S[@]}" --mmap /tmp/27-cli.bin "$RXE_IP"
    mmap_line "$SERVER_LOG" "our server"
    mmap_line "$VMTEST_TMP/client.out" "C client"
    # C fills its --mmap buffer with rand(): what reached our file is the C client's send area.
    [ "$(recv_area /tmp/27-srv.bin)" = "$(od -An -tx1 -v -N 4096 /tmp/27-cli.bin | tr -d ' \n')" ] \
        || fail "C client -> ours: our receive area does not hold the C client's send area"
    log "C client -> ours: our receive area equals the C client's send area (its --mmap file)"
fi
rm -f /tmp/27-*.bin /tmp/27-*.txt
log "buffer options checked"
