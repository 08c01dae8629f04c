#!/usr/bin/env bash
# Usage: fuzz/run.sh [SECONDS] [TARGET...]
#
# Runs the cargo-fuzz targets as fuzzers (libFuzzer + ASan, nightly toolchain): every target
# (or the ones named) for SECONDS each (default 60), up to FUZZ_JOBS at a time (default: the
# CPU count). Builds all targets once first, with debug assertions, so that an arithmetic
# overflow is a finding here as it is in the stable replay (`cargo test`).
#
# Prints one summary line per target: executions, exec/s, cov, ft, corpus (units/bytes), result.
# Exit status: 0 no finding, 1 a finding (or a fuzzer that failed to run), 2 usage/setup error.
#
# A finding (crash-*, timeout-*, oom-*, leak-* artifact) is copied to
# fuzz/corpus/<target>/regress-<kind>-<sha1:12>, which the stable replay reads, so `cargo test`
# fails on it until it is fixed; rename it after what it tests once fixed (docs/fuzzing.md).
# Inputs the run finds interesting go to a scratch corpus outside the repository
# ($FUZZ_WORK/<target>/corpus), never into fuzz/corpus/.
#
# Environment:
#   FUZZ_JOBS      fuzzers at once (default: nproc)
#   FUZZ_WORK      scratch dir (default: ${TMPDIR:-/tmp}/rperftest-fuzz); logs, corpora, artifacts
#   FUZZ_KEEP=1    keep and continue each scratch corpus from the previous run (default: fresh)
#   FUZZ_TIMEOUT   libFuzzer -timeout per input, seconds (default 10)
#   FUZZ_RSS_MB    libFuzzer -rss_limit_mb (default 2048)
#   FUZZ_SAVE=0    do not copy findings into fuzz/corpus/
#
# Works from any directory, with or without a tty (CI=true).
set -euo pipefail

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }

case "${1:-}" in -h|--help) usage; exit 0 ;; esac
SECONDS_PER_TARGET=${1:-60}
[ $# -gt 0 ] && shift
if ! [[ $SECONDS_PER_TARGET =~ ^[1-9][0-9]*$ ]]; then
    echo "fuzz/run.sh: SECONDS must be a positive integer, got '$SECONDS_PER_TARGET'" >&2
    usage >&2
    exit 2
fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
JOBS=${FUZZ_JOBS:-$(nproc)}
WORK=${FUZZ_WORK:-${TMPDIR:-/tmp}/rperftest-fuzz}
TIMEOUT=${FUZZ_TIMEOUT:-10}
RSS_MB=${FUZZ_RSS_MB:-2048}

if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    echo "fuzz/run.sh: no nightly toolchain (rustup toolchain install nightly)" >&2
    exit 2
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "=== fuzz/run.sh: installing cargo-fuzz from crates.io"
    cargo install cargo-fuzz --locked || { echo "fuzz/run.sh: cargo install cargo-fuzz failed" >&2; exit 2; }
fi

# The targets are the [[bin]]s of fuzz/Cargo.toml (what `cargo fuzz list` prints).
mapfile -t ALL < <(cargo +nightly fuzz list)
[ ${#ALL[@]} -gt 0 ] || { echo "fuzz/run.sh: cargo +nightly fuzz list found no targets" >&2; exit 2; }
if [ $# -gt 0 ]; then
    TARGETS=("$@")
    for t in "${TARGETS[@]}"; do
        printf '%s\n' "${ALL[@]}" | grep -qx -- "$t" || {
            echo "fuzz/run.sh: unknown target '$t' (known: ${ALL[*]})" >&2; exit 2; }
    done
else
    TARGETS=("${ALL[@]}")
fi

HOST=$(rustc +nightly -vV | sed -n 's/^host: //p')
# FUZZ_TARGET_DIR: where the instrumented build goes (default fuzz/target); CI keeps it
# outside its fresh clone so that the build is incremental from one run to the next
TDIR=${FUZZ_TARGET_DIR:-$ROOT/fuzz/target}
BIN_DIR=$TDIR/$HOST/release
echo "=== fuzz/run.sh: building ${#ALL[@]} targets ($(cargo +nightly fuzz --version), $(rustc +nightly --version)) in $TDIR"
# -a: debug assertions (overflow checks), as in the stable replay; one build for all targets.
cargo +nightly fuzz build -a --target "$HOST" --target-dir "$TDIR"

mkdir -p "$WORK"
echo "=== fuzz/run.sh: ${#TARGETS[@]} targets x ${SECONDS_PER_TARGET}s, $JOBS at a time, scratch in $WORK"

# One target: scratch corpus first (written), committed seeds second (only read).
run_one() {
    local t=$1 d=$WORK/$1
    if [ "${FUZZ_KEEP:-0}" != 1 ]; then rm -rf "$d"; fi
    rm -rf "$d/artifacts" "$d/log"
    mkdir -p "$d/corpus" "$d/artifacts"
    local rc=0
    # The outer timeout only guards against a fuzzer that stops honouring -max_total_time.
    timeout --kill-after=10 $((SECONDS_PER_TARGET + 4 * TIMEOUT + 60)) \
        "$BIN_DIR/$t" -max_total_time="$SECONDS_PER_TARGET" -timeout="$TIMEOUT" \
        -rss_limit_mb="$RSS_MB" -print_final_stats=1 -artifact_prefix="$d/artifacts/" \
        "$d/corpus" "$ROOT/fuzz/corpus/$t" >"$d/log" 2>&1 || rc=$?
    echo "$rc" >"$d/rc"
}

trap 'j=$(jobs -p); [ -n "$j" ] && kill $j 2>/dev/null; exit 130' INT TERM
T0=$(date +%s)
running=0
for t in "${TARGETS[@]}"; do
    if [ "$running" -ge "$JOBS" ]; then
        wait -n || true
        running=$((running - 1))
    fi
    echo "--- $t"
    run_one "$t" &
    running=$((running + 1))
done
wait || true
trap - INT TERM

# Summary from libFuzzer's last status line ("#N DONE cov: X ft: Y corp: U/B ...") and its final
# stats (-print_final_stats: stat::number_of_executed_units, stat::average_exec_per_sec).
SUMMARY=$WORK/summary.txt
failed=0
# Not a pipe into tee: `failed` and FOUND must survive the loop.
{
    printf '%-14s %12s %8s %6s %6s %14s  %s\n' target executions exec/s cov ft corpus result
    for t in "${TARGETS[@]}"; do
        d=$WORK/$t log=$WORK/$t/log
        rc=$(cat "$d/rc" 2>/dev/null || echo '?')
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
        eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
        last=$(grep -E '^#[0-9]+[[:space:]].*cov: ' "$log" | tail -1 || true)
        cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
        ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
        corp=$(sed -n 's/.* corp: \([^ ]*\).*/\1/p' <<<"$last")
        shopt -s nullglob
        finds=("$d"/artifacts/crash-* "$d"/artifacts/timeout-* "$d"/artifacts/oom-* "$d"/artifacts/leak-*)
        shopt -u nullglob
        if [ ${#finds[@]} -gt 0 ]; then
            result="${#finds[@]} finding(s):"
            for f in "${finds[@]}"; do
                b=$(basename "$f")
                kind=${b%%-*}
                sum=$(sha1sum "$f" | cut -c1-12)
                if [ "${FUZZ_SAVE:-1}" != 0 ]; then
                    cp "$f" "$ROOT/fuzz/corpus/$t/regress-$kind-$sum"
                    result+=" fuzz/corpus/$t/regress-$kind-$sum"
                else
                    result+=" $f"
                fi
            done
            failed=1
            FOUND+=("$t")
        elif [ "$rc" != 0 ]; then
            result="fuzzer failed (exit $rc), see $log"
            failed=1
        else
            result="no finding"
        fi
        printf '%-14s %12s %8s %6s %6s %14s  %s\n' "$t" "${execs:--}" "${eps:--}" "${cov:--}" \
            "${ft:--}" "${corp:--}" "$result"
    done
} >"$SUMMARY"
cat "$SUMMARY"

# For each finding, the start of the fuzzer's report (panic message, sanitizer error, timeout).
for t in "${FOUND[@]}"; do
    echo "=== $t: from $WORK/$t/log"
    grep -v -E '^#[0-9]+[[:space:]]' "$WORK/$t/log" | grep -m1 -A24 -E \
        'panicked at|==[0-9]+==ERROR|ALARM: working on the last Unit|out-of-memory|ERROR: libFuzzer' ||
        tail -40 "$WORK/$t/log"
done
echo "=== fuzz/run.sh: ${#TARGETS[@]} targets x ${SECONDS_PER_TARGET}s in $(( $(date +%s) - T0 ))s;" \
    "$([ $failed = 0 ] && echo 'no finding' || echo 'FINDINGS (see above)'); summary in $SUMMARY"
exit $failed
