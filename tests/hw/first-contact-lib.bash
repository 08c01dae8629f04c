# The steps and the report of tests/hw/first-contact.sh (sourced by it; reads its settings:
# BIN DEV OUT QUICK GIDX IBPORT C_DIR USE_C TMO SRC T_START STARTED driver).
# Named .bash so nothing runs it on its own.

R_SECTION=() R_NAME=() R_STATUS=() R_SECS=() R_DETAIL=() R_LOG=()
PORT_NEXT=18600
LOG_N=0
BG_PIDS=()

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
say() { echo "[first-contact] $*" >&2; }

cleanup_bg() {
    local p
    for p in "${BG_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for p in "${BG_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
    return 0
}
trap cleanup_bg EXIT
trap 'cleanup_bg; exit 130' INT TERM

# record SECTION NAME STATUS SECS DETAIL LOG
record() {
    R_SECTION+=("$1") R_NAME+=("$2") R_STATUS+=("$3") R_SECS+=("$4") R_DETAIL+=("$5") R_LOG+=("$6")
    printf '[first-contact] %-10s %-8s %s%s (%s s)\n' "$1" "$3" "$2" "${5:+: $5}" "$4" >&2
}

# new_log NAME: NEWLOG, a fresh log path under $OUT/logs (no subshell: the counter must move)
new_log() {
    LOG_N=$((LOG_N + 1))
    printf -v NEWLOG '%s/logs/%02d-%s.log' "$OUT" "$LOG_N" "$(printf '%s' "$1" | tr -c 'A-Za-z0-9_.-' '_')"
}

# bounded SECS CMD...: run CMD, killed after SECS; its status, or 124 when it was killed.
bounded() {
    local secs=$1 p w flag; shift
    flag=$(mktemp "${TMPDIR:-/tmp}/first-contact.XXXXXX") && rm -f "$flag"
    "$@" &
    p=$!
    ( sleep "$secs"; : >"$flag"; kill -TERM "$p" 2>/dev/null; sleep 3; kill -KILL "$p" 2>/dev/null ) &
    w=$!
    wait "$p"; local rc=$?
    kill "$w" 2>/dev/null; wait "$w" 2>/dev/null
    if [ -e "$flag" ]; then rm -f "$flag"; return 124; fi
    return "$rc"
}

# tcp_listening PORT: a TCP socket on PORT is in LISTEN state (reads /proc only).
tcp_listening() {
    local hex sl local rem st rest f
    printf -v hex ':%04X' "$1"
    for f in /proc/net/tcp /proc/net/tcp6; do
        [ -r "$f" ] || continue
        while read -r sl local rem st rest; do
            [ "$st" = 0A ] && [ "${local: -5}" = "$hex" ] && return 0
        done <"$f"
    done
    return 1
}

# refusal FILE...: print the first line saying something is not supported, if any.
refusal() {
    grep -hiE -m1 "not supported|unsupported|isn't supported|does not support|doesn't support|no userspace provider|not available on|EOPNOTSUPP|EPROTONOSUPPORT|has no (SRD|UC|UD|RC|atomic)" "$@" 2>/dev/null | head -n 1 | sed 's/^[[:space:]]*//' | cut -c1-200
}

# last_words FILE: the file's last non-empty line (what a failing tool said last), trimmed.
last_words() { grep -v '^[[:space:]]*$' "$1" 2>/dev/null | tail -n 1 | sed 's/^[[:space:]]*//' | cut -c1-200; }

# device_driver DEV: the kernel driver behind DEV (rxe has no PCI device; its parent is a netdev)
device_driver() {
    local d=/sys/class/infiniband/$1 drv
    drv=$(readlink "$d/device/driver" 2>/dev/null) && { basename "$drv"; return; }
    [ -e "$d/parent" ] && { echo rxe; return; }
    echo unknown
}

dev_args() {
    DEVARGS=(-d "$DEV" -i "$IBPORT")
    [ -z "$GIDX" ] || DEVARGS+=(-x "$GIDX")
}

# ---- devinfo --------------------------------------------------------------------------------
step_devinfo() {
    local log t rc
    new_log devinfo; log=$NEWLOG; t=$(now)
    bounded 30 "$BIN" devinfo -d "$DEV" -v >"$log" 2>&1; rc=$?
    if [ $rc = 0 ]; then
        record devinfo "devinfo -v" pass "$(since "$t")" \
            "$(grep -m1 -E '^[[:space:]]*fw_ver:' "$log" | tr -s ' \t' ' ' | sed 's/^ //')" "$log"
    else
        verdict devinfo "devinfo -v" "$t" "$log" "$rc"
    fi
}

# verdict SECTION NAME T0 LOG RC: a failed step is "refused" when its output says so.
verdict() {
    local why
    why=$(refusal "$4")
    if [ -n "$why" ]; then
        record "$1" "$2" refused "$(since "$3")" "$why" "$4"
    elif [ "$5" = 124 ]; then
        record "$1" "$2" fail "$(since "$3")" "no end within its bound (killed)" "$4"
    else
        record "$1" "$2" fail "$(since "$3")" "rc=$5: $(last_words "$4")" "$4"
    fi
}

# ---- selftest -------------------------------------------------------------------------------
step_selftest() {
    local log t rc line name why
    dev_args
    new_log selftest; log=$NEWLOG; t=$(now)
    bounded 300 "$BIN" selftest "${DEVARGS[@]}" -t 10 >"$log" 2>&1; rc=$?
    if ! grep -qE '^  (ok|FAIL) ' "$log"; then
        verdict selftest "selftest (set-up)" "$t" "$log" "$rc"
        return
    fi
    while IFS= read -r line; do
        case "$line" in
            "  ok    "*) record selftest "${line#  ok    }" pass 0 "" "$log" ;;
            "  FAIL  "*)
                name=${line#  FAIL  }; why=${name#*: }; name=${name%%: *}
                if [ -n "$(echo "$why" | refusal /dev/stdin)" ]; then
                    record selftest "$name" refused 0 "$why" "$log"
                else
                    record selftest "$name" fail 0 "$why" "$log"
                fi ;;
        esac
    done <"$log"
    if [ $rc != 0 ] && ! grep -q '^  FAIL ' "$log"; then
        verdict selftest "selftest (exit)" "$t" "$log" "$rc"
    fi
}

# ---- tool runs ------------------------------------------------------------------------------
# The runs: "TRANSPORT TOOL" pairs; the UC/UD/SRD rows are the tools perftest has them for.
RUNS_RC=(ib_write_bw ib_write_lat ib_read_bw ib_read_lat ib_send_bw ib_send_lat ib_atomic_bw ib_atomic_lat)
RUNS_OTHER=("UC ib_write_bw" "UC ib_send_bw" "UD ib_send_bw" "UD ib_send_lat" "SRD ib_send_bw" "SRD ib_send_lat"
    "SRD ib_read_bw" "SRD ib_read_lat" "SRD ib_write_bw" "SRD ib_write_lat")

# tool_opts TOOL TRANSPORT: the options of one run (iterations, size, connection)
tool_opts() {
    TOOLOPTS=()
    [ "$2" = RC ] || TOOLOPTS+=(-c "$2")
    if [ "$QUICK" = 1 ]; then
        TOOLOPTS+=(-n 100)
        # 4 KiB BW messages; not on UD/SRD, whose message must fit the MTU (the tool's default does)
        case "$1:$2" in ib_atomic_bw:*|*:UD|*:SRD) ;; *_bw:*) TOOLOPTS+=(-s 4096) ;; esac
    fi
}

# result_line FILE: the tool printed a result row (bytes, iterations, then figures)
result_line() { grep -qE '^ +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+' "$1"; }

# c_clock_flaked FILE...: C perftest's CPU clock calibration failed (a loaded or virtual host)
c_clock_flaked() { grep -qsE "Can't produce a report|Correlation coefficient r\^2" "$@"; }

# pair SECTION NAME SERVER_BIN CLIENT_BIN TOOL TRANSPORT: one server and one client over
# 127.0.0.1; both must exit 0 and the client must print a result row.
pair() {
    for PAIR_TRY in 1 2 3; do
        pair_once "$@" && return
        say "C perftest could not calibrate its clock (try $PAIR_TRY); again"
    done
}

pair_once() {
    local sec=$1 name=$2 sbin=$3 cbin=$4 tool=$5 tr=$6 slog clog t port spid i rc src
    dev_args; tool_opts "$tool" "$tr"
    port=$PORT_NEXT; PORT_NEXT=$((PORT_NEXT + 1))
    new_log "$name server"; slog=$NEWLOG; clog=${slog%server.log}client.log
    t=$(now)
    run_side "$sbin" "$tool" "${DEVARGS[@]}" -p "$port" "${TOOLOPTS[@]}" >"$slog" 2>&1 &
    spid=$!; BG_PIDS+=("$spid")
    for ((i = 0; i < 300; i++)); do
        tcp_listening "$port" && break
        kill -0 "$spid" 2>/dev/null || break
        sleep 0.1
    done
    if ! tcp_listening "$port"; then
        kill_wait "$spid" 1; src=$?
        verdict "$sec" "$name" "$t" "$slog" "$src"
        return 0
    fi
    bounded "$TMO" run_side "$cbin" "$tool" "${DEVARGS[@]}" -p "$port" "${TOOLOPTS[@]}" 127.0.0.1 >"$clog" 2>&1
    rc=$?
    # A server whose client failed may wait for it a long time (C perftest forever): 3 s.
    if [ $rc = 0 ]; then kill_wait "$spid" 30; else kill_wait "$spid" 3; fi
    src=$?
    if [ $rc = 0 ] && [ $src = 0 ] && result_line "$clog"; then
        record "$sec" "$name" pass "$(since "$t")" "$(result_row "$clog")" "$clog"
        return 0
    fi
    # C perftest's clock calibration flakes on a loaded or virtual host: not ours, try again.
    if [ "$PAIR_TRY" -lt 3 ] && c_clock_flaked "$clog" "$slog"; then return 1; fi
    local why
    why=$(refusal "$clog" "$slog")
    if [ -n "$why" ]; then
        record "$sec" "$name" refused "$(since "$t")" "$why" "$clog"
    elif [ $rc = 124 ]; then
        record "$sec" "$name" fail "$(since "$t")" "client did not end within ${TMO}s" "$clog"
    elif [ $rc = 0 ] && [ $src = 0 ]; then
        record "$sec" "$name" fail "$(since "$t")" "exit 0 but no result row" "$clog"
    else
        local who=client f=$clog
        [ $rc = 0 ] && { who=server; f=$slog; }
        record "$sec" "$name" fail "$(since "$t")" "client rc=$rc, server rc=$src; $who: $(last_words "$f")" "$clog"
    fi
    return 0
}

# run_side BIN TOOL ARGS...: our binary takes the tool as its first argument, C perftest is it.
run_side() {
    local b=$1 tool=$2; shift 2
    if [ "$b" = "$BIN" ]; then exec "$b" "$tool" "$@"; else exec "$b/$tool" "$@"; fi
}

# kill_wait PID SECS: wait up to SECS for a server, then end it; its status (143/137 if killed).
kill_wait() {
    local p=$1 i
    for ((i = 0; i < $2 * 10; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -TERM "$p" 2>/dev/null; sleep 0.2; kill -KILL "$p" 2>/dev/null
    wait "$p"
}

# result_row FILE: the last result row, spaces squeezed
result_row() { grep -E '^ +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+' "$1" | tail -n 1 | tr -s ' ' | sed 's/^ //'; }

step_loopback() {
    local t run others=("${RUNS_OTHER[@]}")
    # --quick: UC once (the selftest covers UC's verbs)
    [ "$QUICK" = 1 ] && others=("UC ib_send_bw" "UD ib_send_bw" "UD ib_send_lat" "SRD ib_send_bw" "SRD ib_send_lat")
    for t in "${RUNS_RC[@]}"; do pair loopback "RC $t ours<->ours" "$BIN" "$BIN" "$t" RC; done
    for run in "${others[@]}"; do
        set -- $run
        pair loopback "$1 $2 ours<->ours" "$BIN" "$BIN" "$2" "$1"
    done
}

# find_c_perftest: C_FOUND, the folder of C perftest's binaries, or "" with the reason in C_WHY
find_c_perftest() {
    local p
    C_FOUND="" C_WHY=""
    if [ "$USE_C" = 0 ]; then C_WHY="--no-c-perftest"; return; fi
    if [ -n "$C_DIR" ]; then
        if [ -x "$C_DIR/ib_write_bw" ]; then C_FOUND=$C_DIR; else C_WHY="no ib_write_bw in $C_DIR"; fi
        return
    fi
    p=$(command -v ib_write_bw 2>/dev/null) || { C_WHY="C perftest is not installed (no ib_write_bw on PATH)"; return; }
    # A link to rperftest named ib_write_bw is not C perftest.
    if [ "$(readlink -f "$BIN")" = "$(readlink -f "$p")" ]; then
        C_WHY="ib_write_bw on PATH is rperftest itself; give C perftest's folder with --c-perftest"
        return
    fi
    C_FOUND=$(dirname "$p")
}

step_c_perftest() {
    local t tr
    find_c_perftest
    if [ -z "$C_FOUND" ]; then
        record c_perftest "against C perftest" skipped 0 "$C_WHY" ""
        return
    fi
    local runs=("${RUNS_RC[@]}" "UD ib_send_bw" "UD ib_send_lat")
    # --quick: a sample, one RC BW tool and one UD latency tool, both directions
    [ "$QUICK" = 1 ] && runs=(ib_write_bw "UD ib_send_lat")
    for t in "${runs[@]}"; do
        tr=RC
        case "$t" in "UD "*) tr=UD; t=${t#UD } ;; esac
        pair c_perftest "$tr $t ours -> C server" "$C_FOUND" "$BIN" "$t" "$tr"
        pair c_perftest "$tr $t C client -> ours" "$BIN" "$C_FOUND" "$t" "$tr"
    done
}

# ---- host hot path --------------------------------------------------------------------------
step_hotpath() {
    local log t rc ex arg
    if [ "$QUICK" = 1 ]; then record hotpath "host hot path" skipped 0 "--quick" ""; return; fi
    if ! command -v cargo >/dev/null 2>&1 || [ ! -e "$SRC/providers/examples/rxe_hotpath.rs" ]; then
        record hotpath "host hot path" skipped 0 "needs cargo and the rperftest source tree" ""
        return
    fi
    for ex in "rxe_hotpath 2000000" "mlx5_hotpath bw 2000000" "mlx5_hotpath lat 2000000"; do
        set -- $ex; arg=("${@:2}")
        new_log "hotpath $ex"; log=$NEWLOG; t=$(now)
        (cd "$SRC" && bounded 600 cargo run -q --release -p providers --example "$1" -- "${arg[@]}") >"$log" 2>&1
        rc=$?
        if [ $rc = 0 ]; then
            record hotpath "$ex" pass "$(since "$t")" "$(last_words "$log")" "$log"
        else
            verdict hotpath "$ex" "$t" "$log" "$rc"
        fi
    done
}

# ---- the report -----------------------------------------------------------------------------
SECTIONS=(devinfo selftest loopback c_perftest hotpath)

json_str() {
    local s=$1
    s=${s//\\/\\\\}; s=${s//\"/\\\"}; s=${s//$'\t'/\\t}; s=${s//$'\r'/\\r}; s=${s//$'\n'/\\n}
    printf '"%s"' "$(printf '%s' "$s" | tr -d '\000-\010\013\014\016-\037')"
}

count() {
    local want=$1 n=0 s
    for s in "${R_STATUS[@]}"; do [ "$s" = "$want" ] && n=$((n + 1)); done
    echo $n
}

write_reports() {
    local total pass fail refused skipped
    total=$(since "$T_START")
    pass=$(count pass) fail=$(count fail) refused=$(count refused) skipped=$(count skipped)
    write_json "$total" "$pass" "$fail" "$refused" "$skipped" >"$OUT/report.json"
    write_text "$total" "$pass" "$fail" "$refused" "$skipped" >"$OUT/report.txt"
    cat "$OUT/report.txt"
    echo "report: $OUT/report.txt, $OUT/report.json"
    [ "$fail" = 0 ]
    exit $?
}

write_json() {
    local sec i first
    printf '{\n  "report": "rperftest first-contact",\n  "format": 1,\n'
    printf '  "device": %s,\n  "driver": %s,\n' "$(json_str "$DEV")" "$(json_str "$driver")"
    printf '  "binary": %s,\n  "version": %s,\n' "$(json_str "$BIN")" "$(json_str "$("$BIN" --version 2>&1 | head -n 1)")"
    printf '  "host": %s,\n  "kernel": %s,\n' "$(json_str "$(hostname 2>/dev/null || cat /proc/sys/kernel/hostname)")" "$(json_str "$(uname -r)")"
    printf '  "started": %s,\n  "seconds": %s,\n  "quick": %s,\n' "$(json_str "$STARTED")" "$1" "$([ "$QUICK" = 1 ] && echo true || echo false)"
    printf '  "summary": {"pass": %s, "fail": %s, "refused": %s, "skipped": %s},\n' "$2" "$3" "$4" "$5"
    printf '  "sections": {'
    first=1
    for sec in "${SECTIONS[@]}"; do
        [ $first = 1 ] || printf ','
        first=0
        printf '\n    %s: [' "$(json_str "$sec")"
        local n=0
        for i in "${!R_SECTION[@]}"; do
            [ "${R_SECTION[$i]}" = "$sec" ] || continue
            [ $n = 0 ] || printf ','
            n=$((n + 1))
            printf '\n      {"name": %s, "status": %s, "seconds": %s, "detail": %s, "log": %s}' \
                "$(json_str "${R_NAME[$i]}")" "$(json_str "${R_STATUS[$i]}")" "${R_SECS[$i]}" \
                "$(json_str "${R_DETAIL[$i]}")" "$(json_str "${R_LOG[$i]#"$OUT"/}")"
        done
        [ $n = 0 ] || printf '\n    '
        printf ']'
    done
    printf '\n  }\n}\n'
}

write_text() {
    local sec i
    echo "rperftest first contact: $DEV (driver $driver) on $(uname -n), kernel $(uname -r)"
    echo "binary $BIN ($("$BIN" --version 2>&1 | head -n 1)), started $STARTED, ${1} s$([ "$QUICK" = 1 ] && echo ', quick')"
    for sec in "${SECTIONS[@]}"; do
        echo
        echo "== $sec"
        for i in "${!R_SECTION[@]}"; do
            [ "${R_SECTION[$i]}" = "$sec" ] || continue
            printf '  %-8s %s%s\n' "${R_STATUS[$i]}" "${R_NAME[$i]}" "${R_DETAIL[$i]:+  (${R_DETAIL[$i]})}"
        done
    done
    echo
    if [ "$4" != 0 ]; then
        echo "== what the device (or rperftest on it) refused"
        for i in "${!R_STATUS[@]}"; do
            [ "${R_STATUS[$i]}" = refused ] && echo "  ${R_SECTION[$i]}: ${R_NAME[$i]}: ${R_DETAIL[$i]}"
        done
        echo
    fi
    echo "summary: $2 passed, $3 failed, $4 refused, $5 skipped"
}
