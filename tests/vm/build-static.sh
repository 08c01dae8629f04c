#!/bin/bash
# Build the release `rperftest` as a static executable and print its path
# (the last line of stdout; cargo's progress goes to stderr).
#
#   tests/vm/build-static.sh [extra cargo build args...]
#
# With the x86_64-unknown-linux-musl target installed (rustup target list
# --installed) it builds for musl; otherwise for x86_64-unknown-linux-gnu
# with -C target-feature=+crt-static (needs glibc's static libs: libc6-dev).
# RPERFTEST_STATIC_TARGET=musl|gnu forces one.  Respects CARGO_TARGET_DIR.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
say() { echo "[build-static] $*" >&2; }

want=${RPERFTEST_STATIC_TARGET:-}
if [ -z "$want" ]; then
    want=gnu
    if command -v rustup >/dev/null 2>&1 \
       && rustup target list --installed 2>/dev/null | grep -qx x86_64-unknown-linux-musl; then
        want=musl
    fi
fi
case "$want" in
    musl) TRIPLE=x86_64-unknown-linux-musl
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
