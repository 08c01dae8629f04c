#!/usr/bin/env python3
"""Compute PRM bit offsets/widths of named fields from an mlx5_ifc.h-style header (facts only).
usage: ifc.py HEADER struct.path.to.field ..."""
import re, sys
src = open(sys.argv[1]).read()
src = re.sub(r'/\*.*?\*/', '', src, flags=re.S)
defs = {}
for m in re.finditer(r'(struct|union)\s+mlx5_ifc_(\w+)_bits\s*\{(.*?)\n\};', src, re.S):
    kind, name, body = m.groups()
    defs[name] = (kind, body)
def parse(name):
    kind, body = defs[name]
    if isinstance(body, list): return kind, body
    fields = []
    for line in body.split(';'):
        line = line.strip()
        if not line: continue
        a = re.match(r'u8\s+(\w+)((?:\[(?:0x[0-9a-fA-F]+|\d+)\])+)$', line)
        if a:
            dims = [int(x, 0) for x in re.findall(r'\[(0x[0-9a-fA-F]+|\d+)\]', a.group(2))]
            n = 1
            for d in dims: n *= d
            fields.append((a.group(1), 'bits', n)); continue
        b = re.match(r'(struct|union)\s+mlx5_ifc_(\w+)_bits\s+(\w+)(\[(0x[0-9a-fA-F]+|\d+)\])?$', line)
        if b: fields.append((b.group(3), b.group(2), int(b.group(5), 0) if b.group(5) else 1)); continue
        raise SystemExit('cannot parse: %r in %s' % (line, name))
    defs[name] = (kind, fields)
    return kind, fields
def size(name):
    kind, fields = parse(name)
    sizes = [(w if t == 'bits' else size(t) * w) for _, t, w in fields]
    return max(sizes) if kind == 'union' else sum(sizes)
def find(name, path):
    kind, fields = parse(name); off = 0
    for f, t, w in fields:
        sz = w if t == 'bits' else size(t) * w
        if f == path[0]:
            if len(path) == 1: return off, sz
            o, s = find(t, path[1:]); return off + o, s
        if kind == 'struct': off += sz
    raise SystemExit('no field %s in %s' % (path[0], name))
for p in sys.argv[2:]:
    parts = p.split('.')
    if len(parts) == 1:
        print('%-70s size %d bits = %d bytes' % (p, size(p), size(p) // 8)); continue
    o, s = find(parts[0], parts[1:])
    print('%-70s bit %6d (0x%05x) width %4d  dword %4d bit-in-dword(msb-first) %2d' % (p, o, o, s, o // 32, o % 32))
