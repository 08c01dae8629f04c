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
