#!/bin/bash
# Build the release `rperftest` as a static executable and print its path
# (the last line of stdout; cargo's progress and every message go to stderr).
#
#   tests/vm/build-static.sh [extra cargo build args...]
#
# The product is the x86_64-unknown-linux-musl build.  When rustup does not
# list that target as installed, the script installs it (rustup target add
# x86_64-unknown-linux-musl).  Only when that is impossible (no rustup, or
# the add fails) does it build for x86_64-unknown-linux-gnu with -C
# target-feature=+crt-static (a glibc static-pie; needs libc6-dev), and it
# says so in one line on stderr.  RPERFTEST_STATIC_TARGET=musl|gnu forces
# one (musl then fails if the target cannot be installed).  Respects
# CARGO_TARGET_DIR.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
say() { echo "[build-static] $*" >&2; }

MUSL=x86_64-unknown-linux-musl
# musl_ready: the musl target is installed, or rustup installs it now.  On
# failure REASON says why, for the one-line fallback message.
REASON=""
musl_ready() {
    if ! command -v rustup >/dev/null 2>&1; then
        REASON="rustup not found"; return 1
    fi
    rustup target list --installed 2>/dev/null | grep -qx "$MUSL" && return 0
    local out
    if out=$(rustup target add "$MUSL" 2>&1); then
        say "installed the $MUSL target (rustup target add $MUSL)"
        return 0
    fi
    REASON="rustup target add $MUSL failed: $(printf '%s\n' "$out" | grep -v '^ *$' | tail -n 1)"
    return 1
}

want=${RPERFTEST_STATIC_TARGET:-}
case "$want" in
    "") if musl_ready; then want=musl; else
            say "WARNING: building a glibc static-pie, not the musl binary ($REASON)"
            want=gnu
        fi ;;
    musl) musl_ready || { say "RPERFTEST_STATIC_TARGET=musl: $REASON"; exit 1; } ;;
esac
case "$want" in
    musl) TRIPLE=$MUSL
          say "target $TRIPLE"
          cargo build --release -p rperftest --target "$TRIPLE" "$@" >&2 ;;
    gnu)  TRIPLE=x86_64-unknown-linux-gnu
          say "target $TRIPLE with +crt-static"
          # RUSTFLAGS only applies to the target with an explicit --target,
          # so build scripts and proc macros stay dynamic host binaries
          RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }-C target-feature=+crt-static" \
              cargo build --release -p rperftest --target "$TRIPLE" "$@" >&2 ;;
    *) say "bad RPERFTEST_STATIC_TARGET=$want (musl|gnu)"; exit 2 ;;
esac
TD=${CARGO_TARGET_DIR:-$ROOT/target}
case "$TD" in /*) ;; *) TD=$ROOT/$TD ;; esac
BIN=$TD/$TRIPLE/release/rperftest
[ -x "$BIN" ] || { say "no binary at $BIN"; exit 1; }
# a static executable has no PT_INTERP (type 3) program header
u() { od -An -tu"$1" -j"$2" -N"$1" "$BIN" | tr -d ' '; }
phoff=$(u 8 32); phent=$(u 2 54); phnum=$(u 2 56)
for ((i = 0; i < phnum; i++)); do
    if [ "$(u 4 $((phoff + i * phent)))" = 3 ]; then say "ERROR: $BIN is dynamically linked"; exit 1; fi
done
echo "$BIN"
