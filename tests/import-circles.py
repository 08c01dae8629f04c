#!/usr/bin/env python3
"""Import circles between modules of one crate: a check for CI.

Every crate's module tree is read from its files (src/lib.rs or src/main.rs, `mod x;` lines,
x.rs or x/mod.rs). Each path a file names (`use crate::a::b`, `super::c::D`, `crate::a::f()`)
is resolved to the module file that holds it. Then, at every level of the tree, the children of
one module are the nodes of a graph, with an edge A -> B when any file under A names something
under B. A cycle in such a graph is a circle: two modules that cannot be understood, tested or
moved apart. A child naming its own parent (`super::Foo` from mod.rs) is not an edge: the parent
is the child's context, not its sibling.

Usage: tests/import-circles.py [CRATE_DIR ...]   (default: every workspace crate)
Exit 0 with no new circle, 1 listing each new circle (its modules and one file:line per edge).
A circle listed in KNOWN below (crate dir, parent module, its modules) is printed as known and
does not fail: each has a note on how it is to be broken; a circle with any module beyond its
entry is new. An entry that no longer matches a circle is reported, to be deleted.
Tests (`#[cfg(test)]` modules and tests/ folders) are not read: a test may see everything.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MOD_RE = re.compile(r'^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;', re.M)
PATH_ATTR_RE = re.compile(r'#\[path\s*=\s*"([^"]+)"\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;')
CFG_TEST_MOD_RE = re.compile(r'#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*(;|\{)')
# A path that starts at crate:: / super:: / self::, with an optional trailing `{...}` group.
PATH_RE = re.compile(r'\b((?:crate|super|self)(?:::(?:super|[A-Za-z_][A-Za-z0-9_]*))*)(::\{)?')


# Circles that predate this check, each to be broken; never add one to make CI pass.
KNOWN = {}


def strip_comments(src):
    src = re.sub(r'/\*.*?\*/', '', src, flags=re.S)
    out = []
    for line in src.split('\n'):
        # Drop // comments and string literals well enough for path scanning.
        line = re.sub(r'"(?:[^"\\]|\\.)*"', '""', line)
        i = line.find('//')
        out.append(line if i < 0 else line[:i])
    return '\n'.join(out)


def drop_inline_test_mods(src):
    """Blank the bodies of `#[cfg(test)] mod x { ... }` so tests add no edges."""
    out = src
    for m in list(CFG_TEST_MOD_RE.finditer(src))[::-1]:
        if m.group(2) != '{':
            continue
        depth, i = 0, m.end() - 1
        while i < len(src):
            if src[i] == '{':
                depth += 1
            elif src[i] == '}':
                depth -= 1
                if depth == 0:
                    break
            i += 1
        body = src[m.end():i]
        out = out[:m.end()] + re.sub(r'[^\n]', ' ', body) + out[i:]
    return out


PUB_USE_RE = re.compile(r'^\s*pub(?:\([^)]*\))?\s+use\s+([^;]+);', re.M)


class Crate:
    def __init__(self, root_file):
        self.files = {}  # module path tuple -> file path
        self.reexports = {}  # module path tuple -> {name: path segments as written there}
        self._walk(root_file, ())

    def _walk(self, path, modpath):
        self.files[modpath] = path
        with open(path, encoding='utf-8') as f:
            src = strip_comments(f.read())
        self.reexports[modpath] = reexports(drop_inline_test_mods(src))
        tests = {m.group(1) for m in CFG_TEST_MOD_RE.finditer(src)}
        explicit = {m.group(2): m.group(1) for m in PATH_ATTR_RE.finditer(src)}
        base = os.path.dirname(path)
        if os.path.basename(path) not in ('lib.rs', 'main.rs', 'mod.rs'):
            base = os.path.join(base, os.path.splitext(os.path.basename(path))[0])
        for m in MOD_RE.finditer(src):
            name = m.group(1)
            if name in tests:
                continue
            if name in explicit:
                cand = [os.path.join(os.path.dirname(path), explicit[name])]
            else:
                cand = [os.path.join(base, name + '.rs'), os.path.join(base, name, 'mod.rs')]
            for c in cand:
                if os.path.exists(c):
                    self._walk(c, modpath + (name,))
                    break

    def resolve(self, here, segs, depth=0):
        """The module that holds what a path named in module `here` names, or None. A name a
        module re-exports (`pub use child::Name;`) resolves to where it comes from, so that a
        path through a parent's re-export still counts as an edge to the sibling."""
        cur = None
        for i, s in enumerate(segs):
            if s == 'crate' and i == 0:
                cur = ()
            elif s == 'self' and i == 0:
                cur = here
            elif s == 'super':
                cur = (here if cur is None else cur)[:-1]
            elif cur is not None and cur + (s,) in self.files:
                cur = cur + (s,)
            elif cur is not None and s in self.reexports.get(cur, {}) and depth < 8:
                target = self.reexports[cur][s]
                if target[0] not in ('crate', 'self', 'super'):
                    target = ['self'] + target
                found = self.resolve(cur, target, depth + 1)
                return cur if found is None else found
            else:
                break
        return cur

    def edges(self):
        """(from module, to module, file, line) for every path a file names."""
        for modpath, path in self.files.items():
            with open(path, encoding='utf-8') as f:
                src = drop_inline_test_mods(strip_comments(f.read()))
            for m in PATH_RE.finditer(src):
                segs = m.group(1).split('::')
                line = src.count('\n', 0, m.start()) + 1
                targets = [segs]
                if m.group(2):
                    targets = [segs + g for g in brace_group(src, m.end())]
                for t in targets:
                    to = self.resolve(modpath, t)
                    if to is not None:
                        yield modpath, to, path, line


def reexports(src):
    """{name: segments} of a module's `pub use` items (globs and external crates left out)."""
    out = {}
    for m in PUB_USE_RE.finditer(src):
        body = ' '.join(m.group(1).split())
        if '{' in body:
            prefix, rest = body.split('{', 1)
            prefix = [x for x in prefix.strip().rstrip(':').split('::') if x]
            items = brace_group(rest, 0)
        else:
            prefix, items = [], [[x for x in body.split(' as ')[0].strip().split('::') if x]]
        for it in items:
            if not it or it[-1] in ('*', 'self'):
                continue
            name = it[-1]
            alias = re.search(r'\bas\s+([A-Za-z_][A-Za-z0-9_]*)', body)
            out[name] = prefix + it
            if alias and len(items) == 1:
                out[alias.group(1)] = prefix + it
    return out


def brace_group(src, start):
    """The first segment lists inside `{...}` starting after the `{` at `start`."""
    depth, i, item, items = 1, start, '', []
    while i < len(src) and depth:
        c = src[i]
        if c == '{':
            depth += 1
        elif c == '}':
            depth -= 1
        if depth == 1 and c == ',':
            items.append(item)
            item = ''
        elif depth >= 1 and not (depth == 1 and c in '{}'):
            item += c
        i += 1
    items.append(item)
    out = []
    for it in items:
        it = re.sub(r'\{.*', '', it.strip(), flags=re.S).strip().rstrip(':')
        if it:
            out.append([s for s in it.split(' as ')[0].strip().split('::') if s])
    return out


def cycles(nodes, adj):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in adj.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def check(crate_dir):
    for root in ('src/lib.rs', 'src/main.rs'):
        p = os.path.join(crate_dir, root)
        if not os.path.exists(p):
            continue
        crate = Crate(p)
        # sibling graphs: parent -> {child -> {child: where}}
        graphs = {}
        for frm, to, path, line in crate.edges():
            k = 0
            while k < min(len(frm), len(to)) and frm[k] == to[k]:
                k += 1
            if k >= len(frm) or k >= len(to):
                continue  # within one module, or to an ancestor/descendant
            parent, a, b = frm[:k], frm[k], to[k]
            where = graphs.setdefault(parent, {}).setdefault(a, {})
            where.setdefault(b, '%s:%d' % (os.path.relpath(path, ROOT), line))
        found = []
        for parent, g in sorted(graphs.items()):
            adj = {a: set(bs) for a, bs in g.items()}
            for comp in cycles(set(adj) | {b for bs in adj.values() for b in bs}, adj):
                edges = ['%s -> %s (%s)' % (a, b, g[a][b]) for a in comp for b in sorted(g.get(a, {})) if b in comp]
                found.append((parent, comp, edges))
        rel = os.path.relpath(crate_dir, ROOT)
        new = 0
        for parent, comp, edges in found:
            name = rel + ':' + ('::'.join(parent) or 'crate')
            known = KNOWN.get((rel, '::'.join(parent)))
            if known and set(comp) <= known[0]:
                print('known import circle in %s: %s (%s)' % (name, ' <-> '.join(comp), known[1]))
                continue
            new += 1
            print('import circle in %s: %s' % (name, ' <-> '.join(comp)))
            for e in edges:
                print('    ' + e)
        for (krel, kparent), (mods, _) in KNOWN.items():
            if krel == rel and not any('::'.join(p) == kparent and set(c) <= mods for p, c, _ in found):
                print('import-circles: the known circle in %s:%s is gone; delete its KNOWN entry' % (krel, kparent))
        return new
    return 0


def workspace_crates():
    out = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if d not in ('target', '.git', 'fuzz', 'node_modules')]
        if 'Cargo.toml' in filenames and os.path.isdir(os.path.join(dirpath, 'src')):
            out.append(dirpath)
    return sorted(out)


def main():
    dirs = sys.argv[1:] or workspace_crates()
    n = sum(check(os.path.abspath(d)) for d in dirs)
    print('import-circles: %d crate(s), %d new circle(s)' % (len(dirs), n))
    sys.exit(1 if n else 0)


if __name__ == '__main__':
    main()
