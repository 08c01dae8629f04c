#!/bin/bash
# Render check of the plots (issue 24): every SVG parses as XML (python3's parser) and, with
# Debian's chromium, SVGs and an HTML overlay render headless to a PNG of the figure's size
# that is not blank (at least 1% of the pixels dark).
#
#   tests/plot-render.sh [--install] [--from-log SUITE.log] [--bin RPERFTEST]
#   tests/plot-render.sh [--install] --no-plots --html PAGE.html...
#
# Inputs: the series files in tests/fixtures/plots/ (bw, lat, soak captured from VM case 65;
# lat-tail.jsonl, 3000 samples near 40 us and 4 near 12 ms, and b1.json/b2.json, one 64 KiB
# write_bw report each, written for issue 39), drawn here with `rperftest plot`; the tail
# histogram must carry its overflow label and bar, the one-size overlay its run names; with --from-log also the SVG/HTML artefacts VM case 65-plots printed
# (its "ARTEFACT name" blocks in a run-suite -v log). --install: apt-get install chromium if it
# is missing (else the render half is skipped, saying so). --html PAGE: also render that page
# (e.g. a matrix report.html; its inline SVGs are XML-checked too); --no-plots: only the --html
# pages, no fixtures and no binary needed. Exit 0 pass, 1 fail.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOG="" BIN="" INSTALL=0 PLOTS=1 PAGES=()
while [ $# -gt 0 ]; do
    case "$1" in
        --install) INSTALL=1; shift ;;
        --no-plots) PLOTS=0; shift ;;
        --html) PAGES+=("$2"); shift 2 ;;
        --from-log) LOG=$2; shift 2 ;;
        --bin) BIN=$2; shift 2 ;;
        *) echo "usage: $0 [--install] [--from-log SUITE.log] [--bin RPERFTEST] [--no-plots] [--html PAGE]..." >&2; exit 2 ;;
    esac
done
command -v python3 >/dev/null || { echo "plot-render: python3 not installed: skipped (apt-get install python3)"; exit 0; }
if [ -z "$BIN" ] && [ $PLOTS = 1 ]; then
    (cd "$ROOT" && cargo build -q -p rperftest)
    BIN=$ROOT/target/debug/rperftest
fi
W=$(mktemp -d /tmp/plot-render.XXXXXX)
trap 'rm -rf "$W"' EXIT
FIX=$ROOT/tests/fixtures/plots
if [ $PLOTS = 1 ]; then
    "$BIN" plot "$FIX/bw.jsonl" -o "$W/bw.svg" >/dev/null
    "$BIN" plot "$FIX/lat.jsonl" -o "$W/lat.svg" >/dev/null
    "$BIN" plot "$FIX/soak.jsonl" -o "$W/soak.svg" >/dev/null
    "$BIN" plot "$FIX/bw.jsonl" "$FIX/bw.jsonl" --label a --label b -o "$W/overlay.html" >/dev/null
    "$BIN" plot "$FIX/lat-tail.jsonl" -o "$W/lat-tail.svg" >/dev/null
    "$BIN" plot "$FIX/b1.json" "$FIX/b2.json" -o "$W/one-size.svg" >/dev/null
    "$BIN" plot "$FIX/b1.json" "$FIX/b2.json" -o "$W/one-size.html" >/dev/null
fi
fail=0
# has FILE TEXT...: each TEXT is the whole of a <text> element of the SVG (plotters writes the
# text on its own line).
has() {
    local f=$1; shift
    for t in "$@"; do
        grep -qxF -- "$t" "$W/$f" || { echo "FAIL: $f has no text \"$t\""; fail=1; }
    done
}
if [ $PLOTS = 1 ]; then
    has lat-tail.svg "&gt; 44.54 usec: 4 samples (max 12211)" "&gt; 44.54" "Latency CDF" \
        "beyond the body: 4 samples" "100" "1000"
    has one-size.svg "b1 · 64K" "b2 · 64K" "Bandwidth per run" "Message rate per run" "1020" "880"
fi
k=0
for page in "${PAGES[@]}"; do
    k=$((k + 1))
    cp "$page" "$W/page$k-$(basename "$page")" || { echo "plot-render: cannot read $page" >&2; exit 1; }
    # each inline SVG of the page, for the XML check
    python3 - "$page" "$W/page$k-svg" <<'PY'
import re, sys
for i, s in enumerate(re.findall(r"<svg.*?</svg>", open(sys.argv[1]).read(), re.S)):
    open(f"{sys.argv[2]}{i}.svg.xml", "w").write(s)
PY
done
if [ -n "$LOG" ]; then
    # "ARTEFACT name" then "    | | line" (run-suite -v indents the guest's lines with "    | ").
    awk -v d="$W/vm-" '
        /ARTEFACT / { f = d $NF; next }
        f != "" && /^    \| \| ?/ { sub(/^    \| \| ?/, ""); print > f; next }
        f != "" && /^    \| \|$/ { print "" > f; next }
        { if (f != "") close(f); f = "" }' "$LOG"
    ls "$W"/vm-*.svg >/dev/null 2>&1 || { echo "plot-render: no ARTEFACT blocks in $LOG" >&2; exit 1; }
fi
for f in "$W"/*.svg "$W"/*.svg.xml; do
    [ -e "$f" ] || continue
    if python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "$f"; then
        echo "xml ok: $(basename "$f")"
    else
        echo "FAIL: $(basename "$f") is not well-formed XML"; fail=1
    fi
done
CHROME=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROME" ] && [ $INSTALL = 1 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null
    CHROME=$(command -v chromium || true)
fi
if [ -z "$CHROME" ]; then
    echo "plot-render: chromium not installed: the render check is skipped (--install installs it)"
    exit $fail
fi
# png_check PNG W H [R,G,B]: the PNG is W x H and not blank, and shows at least 20 pixels of
# colour R,G,B (the overflow bin's vermillion) when given.
png_check() {
    python3 - "$@" <<'PY'
import struct, sys, zlib
path, w, h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
want = tuple(int(c) for c in sys.argv[4].split(",")) if len(sys.argv) > 4 else None
hits = 0
data = open(path, "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, ihdr = 8, b"", None
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        ihdr = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
pw, ph, depth, ctype = ihdr[:4]
if (pw, ph) != (w, h):
    sys.exit(f"size {pw}x{ph}, want {w}x{h}")
bpp = {2: 3, 6: 4}.get(ctype)
if depth != 8 or bpp is None:
    sys.exit(f"unexpected PNG format depth {depth} colour type {ctype}")
raw, stride, prev, ink = zlib.decompress(idat), pw * bpp, bytearray(pw * bpp), 0
for y in range(ph):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    ink += sum(1 for x in range(0, stride, bpp) if min(line[x:x + 3]) < 200)
    if want:
        hits += sum(1 for x in range(0, stride, bpp) if all(abs(line[x + k] - want[k]) <= 16 for k in range(3)))
    prev = line
share = ink / (pw * ph)
if share < 0.01:
    sys.exit(f"blank: {share:.3%} of the pixels are not white")
if want and hits < 20:
    sys.exit(f"{hits} pixels of colour {want}, want 20 or more")
print(f"{pw}x{ph}, {share:.1%} ink" + (f", {hits} px of {want}" if want else ""))
PY
}
render() { # render FILE W H [R,G,B]
    "$CHROME" --headless=new --no-sandbox --disable-gpu --hide-scrollbars --window-size="$2,$3" \
        --screenshot="$1.png" "file://$1" >/dev/null 2>&1 || { echo "FAIL: chromium could not render $1"; return 1; }
    if out=$(png_check "$1.png" "$2" "$3" ${4:+"$4"} 2>&1); then
        echo "render ok: $(basename "$1") $out"
    else
        echo "FAIL: $(basename "$1"): $out"; return 1
    fi
}
for f in "$W"/*.svg; do
    [ -e "$f" ] || continue
    w=$(grep -o '^<svg width="[0-9]*" height="[0-9]*"' "$f" | head -1 | sed 's/[^0-9 ]//g' | awk '{print $1}')
    h=$(grep -o '^<svg width="[0-9]*" height="[0-9]*"' "$f" | head -1 | sed 's/[^0-9 ]//g' | awk '{print $2}')
    colour=""
    # The tail histogram's overflow bar and CDF dots are vermillion (render.rs EDGE).
    [ "$(basename "$f")" = lat-tail.svg ] && colour=213,94,0
    render "$f" "$w" "$h" $colour || fail=1
done
for f in "$W"/*.html; do [ -e "$f" ] || continue; render "$f" 1000 1200 || fail=1; done
[ $fail = 0 ] && echo "plot-render: passed" || echo "plot-render: FAILED"
exit $fail
