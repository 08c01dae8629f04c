#!/bin/bash
# Golden output: our stdout (header block, address lines, result table) against C perftest's
# for the same command on the same device, with run-dependent values masked (QPN, PSN, RKey,
# VAddr; every number in the result lines, keeping its column width). Server and client side.
# mode: full
# timeout: 300
. "$VMTEST_LIB"
X=(-d "$RXE_DEV" -x "$RXE_GID_IDX")

mask() {
    sed -E 's/QPN 0x[0-9a-f]+/QPN X/; s/PSN 0x[0-9a-f]+/PSN X/; s/RKey 0x[0-9a-f]+/RKey X/; s/VAddr 0x[0-9a-f]+/VAddr X/' "$1" |
    awk '/^ [0-9]/ {
            out = ""; s = $0
            # a number padded by %-7 printf to at least 7 columns: mask it as 7 columns and keep
            # only the separator spaces that follow the padding (widths vary with magnitude)
            while (match(s, /[0-9][0-9.]*/)) {
                L = RLENGTH; pre = substr(s, 1, RSTART - 1); s = substr(s, RSTART + L)
                match(s, /^ */); S = RLENGTH; s = substr(s, S + 1)
                if (L < 7) { S = S - (7 - L); if (S < 0) S = 0 }
                sp = ""; for (i = 0; i < S; i++) sp = sp " "
                out = out pre "#######" sp
            }
            print out s; next }
         { print }'
}

# one_run WHO TOOL OPTS: server and client of WHO (c|ours); stdout only (stderr apart)
one_run() {
    local who=$1 tool=$2; shift 2
    local bin=("$tool"); [ "$who" = ours ] && bin=(rperftest "$tool")
    local try
    for try in 1 2 3; do
        start_server -t 60 bash -c 'exec "$@" 2>'"$who.$tool.srv.err" _ "${bin[@]}" "${X[@]}" "$@"
        with_timeout 120 "${bin[@]}" "${X[@]}" "$@" "$RXE_IP" >"$who.$tool.cli.out" 2>"$who.$tool.cli.err"
        local rc=$?
        wait_server 60 >/dev/null
        cp "$SERVER_LOG" "$who.$tool.srv.out"
        if [ $try -lt 3 ] && c_clock_flaked "$who.$tool".{cli,srv}.{out,err}; then
            log "C perftest could not calibrate its clock; retrying"; continue
        fi
        [ "$rc" = 0 ] || { cat "$who.$tool.cli.out" "$who.$tool.cli.err"; fail "$who $tool client rc=$rc"; }
        [ "$SERVER_RC" = 0 ] || { cat "$who.$tool.srv.out" "$who.$tool.srv.err"; fail "$who $tool server rc=$SERVER_RC"; }
        break
    done
}

bad=0
golden() {
    local tool=$1; shift
    log "== $tool $*"
    one_run c "$tool" "$@"
    one_run ours "$tool" "$@"
    local side
    for side in cli srv; do
        mask "c.$tool.$side.out" >"c.$tool.$side.masked"
        mask "ours.$tool.$side.out" >"ours.$tool.$side.masked"
        if diff -u "c.$tool.$side.masked" "ours.$tool.$side.masked"; then
            log "$tool $side: identical after masking"
        else
            log "$tool $side: DIFFERS (above: - C perftest, + rperftest)"; bad=1
        fi
        if ! diff -q "c.$tool.$side.err" "ours.$tool.$side.err" >/dev/null 2>&1; then
            log "$tool $side stderr differs (informational):"; diff "c.$tool.$side.err" "ours.$tool.$side.err"
        fi
    done
}

golden ib_write_bw -n 200 -s 4096
golden ib_send_lat -n 100
golden ib_read_bw -n 200 -s 4096
golden ib_atomic_bw -n 200
golden ib_write_lat -n 100
golden ib_read_lat -n 100
golden ib_send_bw -n 200 -s 4096
golden ib_atomic_lat -n 100
[ $bad = 0 ] || fail "output differs from C perftest"
