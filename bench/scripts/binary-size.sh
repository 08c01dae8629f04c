#!/bin/bash
# What the static musl rperftest weighs, and what each part of it costs: the tables of
# docs/benchmarks.md "The static binary" (and docs/benchmarks-data/*-binary-size.md).
#
#   bench/scripts/binary-size.sh [OUT_DIR]
#   bench/scripts/binary-size.sh --tables OUT_DIR    (the tables again from OUT_DIR's files)
#
# Builds the product with tests/vm/build-static.sh, then has cargo-bloat (cargo install
# cargo-bloat) attribute every function of .text to a crate, and prints markdown: the file by
# section group, then .text by crate, with bench, the cli (crate `rperftest`) and providers split
# by module.  OUT_DIR (default: a temporary directory) keeps bloat.json, sections.txt, tables.md.
#
# cargo-bloat builds the release profile again with other strip/debug settings (about 2 minutes
# on 2 cores; same code: the script checks that both builds have the same .text size, to 0.1 %), and cargo
# then leaves that 7 MB build at the product's path: the script runs build-static.sh again at
# the end, which puts the product back in well under a second.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
say() { echo "[binary-size] $*" >&2; }
if [ "${1:-}" = --tables ]; then
    OUT=${2:?usage: binary-size.sh --tables OUT_DIR}
    [ -s "$OUT/bloat.json" ] && [ -s "$OUT/sections.txt" ] && [ -s "$OUT/size" ] \
        || { say "$OUT has no bloat.json, sections.txt and size of an earlier run"; exit 1; }
else
    command -v cargo-bloat >/dev/null 2>&1 || { say "cargo-bloat not found: cargo install cargo-bloat, then rerun"; exit 1; }
    OUT=${1:-$(mktemp -d)}
    mkdir -p "$OUT"
    BIN=$(tests/vm/build-static.sh)
    tests/vm/check-musl.sh "$BIN" >&2 || say "WARNING: the tables describe a build that is not the musl one"
    TRIPLE=$(basename "$(dirname "$(dirname "$BIN")")")
    say "cargo bloat (a release build with symbols and debug info; minutes)"
    cargo bloat --release -p rperftest --bin rperftest --target "$TRIPLE" -n 0 --message-format json \
        >"$OUT/bloat.json"
    BIN=$(tests/vm/build-static.sh)          # the product back at its path
    readelf -SW "$BIN" >"$OUT/sections.txt"
    stat -c %s "$BIN" >"$OUT/size"
fi

python3 - "$OUT" <<'PY' | tee "$OUT/tables.md"
import collections, json, os, re, sys
out = sys.argv[1]
size = int(open(f"{out}/size").read())
sections = {}
for line in open(f"{out}/sections.txt"):
    m = re.match(r"\s*\[\s*\d+\]\s+(\.\S+)\s+(\S+)\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)", line)
    if m and m.group(2) != "NOBITS":
        sections[m.group(1)] = int(m.group(3), 16)
bloat = json.load(open(f"{out}/bloat.json"))
# The two builds differ only in strip and debug settings; a few hundred bytes of alignment can
# move between them (160 of 5.25 MB on 2026-12-06), which the shares below cannot show.
drift = abs(bloat["text-section-size"] - sections[".text"])
if drift > sections[".text"] // 1000:
    sys.exit(f"cargo-bloat's build has .text {bloat['text-section-size']}, the product {sections['.text']}: not the same code")

def row(name, n, total, note=""):
    print(f"| {name} | {n:,} | {n / 1024:,.1f} | {100 * n / total:.1f} %{' | ' + note if note else ''} |")

groups = [
    ("code (`.text`)", [".text"], ""),
    ("unwind tables (`.eh_frame`, `.eh_frame_hdr`, `.gcc_except_table`)",
     [".eh_frame", ".eh_frame_hdr", ".gcc_except_table"], "`panic = \"unwind\"`"),
    ("symbols (`.symtab`, `.strtab`)", [".symtab", ".strtab"], "kept for perf; `strip` removes them"),
    ("constants (`.rodata`, `.data.rel.ro`)", [".rodata", ".data.rel.ro"], ""),
    ("relocations (`.rela.dyn`)", [".rela.dyn"], "static-pie: relocated at start"),
]
print(f"File: {size:,} bytes ({size / 2**20:.2f} MiB).\n")
print("| part of the file | bytes | KiB | share |  |\n|---|---:|---:|---:|---|")
used = 0
for name, secs, note in groups:
    n = sum(sections.get(s, 0) for s in secs)
    used += n
    print(f"| {name} | {n:,} | {n / 1024:,.1f} | {100 * n / size:.1f} % | {note} |")
print(f"| headers, padding, the rest | {size - used:,} | {(size - used) / 1024:,.1f} | {100 * (size - used) / size:.1f} % |  |")

crates, modules = collections.Counter(), collections.Counter()
for f in bloat["functions"]:
    crate, name = f.get("crate", "[Unknown]").rstrip("?"), f["name"]
    if crate == "[Unknown]":   # C and C++ objects: musl itself and LLVM's libunwind
        crate = "libunwind" if "libunwind" in name or name.startswith(("_Unwind", "unw_")) else "musl libc"
    crates[crate] += f["size"]
    m = re.search(r"\b" + re.escape(crate) + r"::(\w+)", name)
    modules[(crate, m.group(1) if m else "")] += f["size"]
text = sections[".text"]
split = {  # the parts the docs name; the remainder of each crate is its "rest"
    "perftest": ["engine", "tool", "oob", "params", "report", "gpu"],
    "rperftest": ["selftest", "plot_cmd", "cmtest"],
    "providers": ["mlx5", "rxe", "bnxt_re", "efa"],
    "uverbs": ["cmd", "objects", "cm", "discovery"],
}
rest_label = {"providers": "`providers`, the rest (opening a device, the shared glue)"}
merge = {"clap": ["clap_builder", "clap_lex", "anstyle"],
         "plotters": ["plotters", "plotters_svg", "plotters_backend"],
         "serde_json": ["serde_json", "serde_core", "zmij", "memchr"]}
for into, parts in merge.items():
    crates[into + " (" + ", ".join(parts) + ")"] = sum(crates.pop(p, 0) for p in parts)
print(f"\n`.text` by crate ({text:,} bytes; cargo-bloat attributes {sum(crates.values()):,}):\n")
print("| crate / part | bytes | KiB | share of .text |\n|---|---:|---:|---:|")
for crate, n in crates.most_common():
    row(f"`{crate}`", n, text)
    if crate in split:
        rest = n
        for mod in split[crate]:
            k = modules[(crate, mod)]
            rest -= k
            row(f"&nbsp;&nbsp;`{crate}::{mod}`", k, text)
        row(f"&nbsp;&nbsp;{rest_label.get(crate, f'`{crate}`, the rest')}", rest, text)
PY
say "tables in $OUT/tables.md"
