#!/bin/bash
# Is BIN the static musl rperftest (the product the README and docs/benchmarks.md describe)?
#
#   tests/vm/check-musl.sh BIN
#
# Prints one line: "musl static: BIN, N bytes" and exits 0, or says what is wrong and exits 1.
# The checks, each of which a glibc +crt-static build (or a dynamic one) fails:
#   - no ELF interpreter (PT_INTERP) and no NEEDED entry: static;
#   - no .note.ABI-tag section: glibc's crt1.o brings it ("for GNU/Linux 3.2.0" in `file`),
#     musl's crt1.o does not;
#   - none of glibc's own strings (GLIBC_TUNABLES, the tunables' environment variable, and
#     GLIBC_PRIVATE, its private symbol version): every static glibc carries them;
#   - musl's strerror text for errno 0, "No error information" (glibc says "Success"): Rust's
#     std formats io errors with strerror_r, so the musl binary always has it.
# Needs readelf (binutils) and grep.
set -euo pipefail
[ $# = 1 ] || { echo "usage: tests/vm/check-musl.sh BIN" >&2; exit 2; }
BIN=$1
[ -f "$BIN" ] || { echo "check-musl: no such file: $BIN" >&2; exit 1; }
bad() { echo "check-musl: $BIN is not the static musl build: $*" >&2; exit 1; }
has_string() { LC_ALL=C grep -aqF -- "$1" "$BIN"; }

readelf -hW "$BIN" >/dev/null 2>&1 || bad "not an ELF file (readelf -h fails)"
# whole outputs first: `readelf | grep -q` can end readelf with SIGPIPE, which pipefail reports
progs=$(readelf -lW "$BIN"); dyn=$(readelf -dW "$BIN"); sects=$(readelf -SW "$BIN")
[[ $progs != *INTERP* ]] || bad "it has an ELF interpreter (dynamically linked)"
[[ $dyn != *"(NEEDED)"* ]] || bad "it has NEEDED entries (shared libraries)"
[[ $sects != *.note.ABI-tag* ]] || bad "it has glibc's .note.ABI-tag section"
for s in GLIBC_TUNABLES GLIBC_PRIVATE; do
    if has_string "$s"; then bad "it contains glibc's string $s"; fi
done
has_string "No error information" || bad "musl's strerror text \"No error information\" is missing"
echo "musl static: $BIN, $(stat -c %s "$BIN") bytes"
