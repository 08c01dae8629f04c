# Host half shared by the VM benchmarks (side-by-side.sh, round-trip-split.sh); sourced, not run.
#
#   vmb_setup NAME [OUT_DIR]   cd to the repository root; OUT = OUT_DIR (created, made absolute)
#                              or ${CARGO_TARGET_DIR:-target}/NAME/<date>; BIN = RPERFTEST_BIN or
#                              a fresh static build (tests/vm/build-static.sh); the image is built
#                              if needed; STAGE = a temporary directory (removed on exit) holding
#                              bin/rperftest, bin/rperftest-alt (RPERFTEST_ALT_BIN, if set) and
#                              tcp-listening.bash
#   vmb_meta ARGS ENV          the common lines of OUT/meta.txt on stdout: date, the command
#                              (with its arguments ARGS), the guest environment ENV, host, load,
#                              binaries
#   vmb_env VAR...             ENV_ARGS = "-e VAR=VALUE" for each VAR that is set (guest knobs)
#   vmb_run GUEST TIMEOUT      boot one full-mode VM running GUEST (a script already in STAGE)
#                              with STAGE/bin on PATH, OUT shared read-write, ENV_ARGS exported,
#                              the host load sampled every 30 s into OUT/host-load.txt; appends
#                              the load after to OUT/meta.txt; RC = the VM's exit status. Calls
#                              the script's own say().
vmb_setup() {
    local name=$1 root
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    cd "$root"
    local td=${CARGO_TARGET_DIR:-$root/target}
    OUT=${2:-$td/$name/$(date +%Y%m%d-%H%M%S)}
    mkdir -p "$OUT"
    OUT=$(cd "$OUT" && pwd)
    BIN=${RPERFTEST_BIN:-$(tests/vm/build-static.sh)}
    tests/vm/build-image.sh >/dev/null
    STAGE=$(mktemp -d)
    trap 'rm -rf "$STAGE"' EXIT
    mkdir -p "$STAGE/bin"
    cp "$BIN" "$STAGE/bin/rperftest"
    if [ -n "${RPERFTEST_ALT_BIN:-}" ]; then
        cp "$RPERFTEST_ALT_BIN" "$STAGE/bin/rperftest-alt"
    fi
    cp tests/vm/guest/tcp-listening.bash "$STAGE/tcp-listening.bash"
}

vmb_meta() {
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "command: $0 $1"
    echo "env: $2"
    echo "host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
    echo "host load before: $(uptime)"
    echo "rperftest: $BIN ($(stat -c %s "$BIN") bytes), git $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet 2>/dev/null || echo '+dirty')"
    [ -z "${RPERFTEST_ALT_BIN:-}" ] || echo "alt: $RPERFTEST_ALT_BIN ($(stat -c %s "$RPERFTEST_ALT_BIN") bytes)"
}

vmb_env() {
    local v
    ENV_ARGS=()
    for v in "$@"; do
        [ -n "${!v+x}" ] && ENV_ARGS+=(-e "$v=${!v}")
    done
    return 0
}

vmb_run() {
    local guest=$1 timeout=$2 loadpid
    # Other work on the machine distorts figures: the load goes next to them.
    ( while sleep 30; do echo "$(date -u +%H:%M:%S) $(cat /proc/loadavg)"; done ) >"$OUT/host-load.txt" 2>/dev/null &
    loadpid=$!
    say "booting the VM (results in $OUT)"
    RC=0
    tests/vm/run-in-vm.sh -q --mode full --timeout "$timeout" --share "$OUT" \
        --timing-file "$OUT/vm-timing.txt" "${ENV_ARGS[@]}" \
        "$STAGE/bin" "$STAGE/$guest" "$STAGE/tcp-listening.bash" \
        -- bash -c "export PATH=/mnt/host/bin:\$PATH; exec bash /mnt/host/$guest" || RC=$?
    kill "$loadpid" 2>/dev/null || true
    echo "host load after: $(uptime)" >>"$OUT/meta.txt"
    say "VM exit $RC"
}
