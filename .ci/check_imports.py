#!/usr/bin/env python3
"""Checks the rules of src/'s layers (docs/ARCHITECTURE.md §2) and fails on any break of them:

1. an upward import between layers;
2. an import cycle between files;
3. two top-level folders that import each other (say, two protocol cores), directly or round
   a longer loop;
4. the clock rule: a clock read (`Instant::now`, `SystemTime::now`, `.elapsed()`) in the
   shared leaves, the protocol cores or crawl/, where time is a parameter: the fetcher reads
   the clock once per turn and hands `now` on;
5. the file rule: file I/O (`std::fs` in any form, `File`, `OpenOptions`, the `redb` and
   `webgraph` crates, which open files) in the leaves, the cores, fetcher/ or crawl/: only
   store/ and app/ own disk (the fetcher spools bodies through a trait the store implements;
   app reads /etc/resolv.conf and /etc/hosts and dns parses them). An exception would be
   named, with its reason, in FILE_IO_ALLOWED; there is none.

Layers, lowest first: shared leaves (codec, datetime, return_code) < protocol cores (dns,
http, links, robots, discovery, content, proxy) < fetcher < crawl < store < app. A file may use its
own layer and any below it.

A file's edges are the module files its `crate::`, `super::` and `self::` paths reach,
read through imports (`pub use child::Item`, or a parent's private `use`), so
`use super::Item` counts as an edge to the file that defines Item. A folder's mod.rs (or X.rs beside X/) declaring and
re-exporting its children is not an edge; using a child's item in its own code is.
Test code is left out of every rule: *_tests.rs, tests.rs, tests/ folders, modules declared
under `#[cfg(test)]` (crawl's `sim`, the simulated web and clock) and `#[cfg(test)]` blocks.

Usage: .ci/check_imports.py [SRC_DIR]   (prints every violation, exits 1 if any)
       .ci/check_imports.py --self-test (each rule fails on a made-up tree that breaks it)
"""

import os
import re
import sys

LAYERS = {
    "codec": 0, "datetime": 0, "return_code": 0,
    "dns": 1, "http": 1, "links": 1, "robots": 1, "discovery": 1, "content": 1, "proxy": 1,
    "fetcher": 2, "crawl": 3, "store": 4, "app": 5,
}

PATH_RE = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)(::\{)?")
USE_RE = re.compile(r"\b(pub(?:\([a-z]+\))?\s+)?use\s+([^;]*);", re.S)
MOD_RE = re.compile(r"^\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+([a-z_0-9]+)\s*;", re.M)
# A module file declared as test code: `#[cfg(test)]`, other attributes, `mod name;`.
TEST_MOD_RE = re.compile(r"#\[cfg\(test\)\]\s*((?:#\[[^\]]*\]\s*)*)"
                         r"(?:pub(?:\([a-z]+\))?\s+)?mod\s+([a-z_0-9]+)\s*;")
PATH_ATTR_RE = re.compile(r'#\[path\s*=\s*"([^"]+)"\]')

LEAVES = {"codec", "datetime", "return_code"}
CORES = {"dns", "http", "links", "robots", "discovery", "content", "proxy"}
# Where time is a parameter, and what reads the clock.
CLOCKLESS = LEAVES | CORES | {"crawl"}
CLOCK_RE = re.compile(r"\b(?:Instant|SystemTime)\s*::\s*now\b|\.\s*elapsed\s*\(\s*\)")
# Where no file is opened, and what opens one (a path through std::fs, the std types, and the
# crates that open their own files). `use std::{fs, …}` is caught on the expanded path.
DISKLESS = CLOCKLESS | {"fetcher"}
FILE_RE = re.compile(r"\bstd\s*::\s*(?:os\s*::\s*\w+\s*::\s*)?fs\b|\b(?:File|OpenOptions)\b"
                     r"|\b(?:redb|webgraph)\s*::")
FILE_USE_RE = re.compile(r"(?:std::(?:os::\w+::)?fs|redb|webgraph)(?:::|$)")
# Files of DISKLESS folders allowed to open files, relative to src/, each with its reason.
FILE_IO_ALLOWED = {}


# Comments and literals, in one left-to-right pass: whichever starts first wins, so a `//` in
# a string ("http://…") is not a comment and a quote in a comment opens no string. (Block
# comments do not nest here; Rust's do, and the source has none nested.)
LEXEME_RE = re.compile(r"""
    (?P<comment> //[^\n]* | /\*.*?\*/ )
  | (?P<string> b?r(?P<hashes>\#*)".*?"(?P=hashes) | b?"(?:\\.|[^"\\])*" )
  | (?P<char> b?'(?:\\.|[^'\\\n])' )
""", re.S | re.X)


def blank(m):
    """What replaces a comment or literal: an empty one, then its line breaks (so that every
    line stays where it was)."""
    keep = {"comment": "", "string": '""', "char": "' '"}[m.lastgroup]
    return keep + "\n" * m.group(0).count("\n")


def strip_literals(text, keep_strings=False):
    """Drops comments and the text of literals (strings too unless `keep_strings`)."""
    return LEXEME_RE.sub(lambda m: m.group(0) if keep_strings and m.lastgroup != "comment"
                         else blank(m), text)


def strip(text):
    """Drops comments, literals and test code, keeping every line where it was."""
    text = strip_literals(text)
    # A #[cfg(test)] item: remove up to its matching close brace or semicolon.
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]", text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        j, depth = m.end(), 0
        while j < len(text):
            c = text[j]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    j += 1
                    break
            elif c == ";" and depth == 0:
                j += 1
                break
            j += 1
        out.append("\n" * text.count("\n", m.start(), j))
        i = j
    out.append(text[i:])
    return "".join(out)


class Tree:
    def __init__(self, src):
        self.src = src
        self.files = {}  # module path tuple -> file
        self.module_of_file = {}
        self.text = {}
        raw = {}
        for root, dirs, names in os.walk(src):
            for n in names:
                if n.endswith(".rs"):
                    f = os.path.join(root, n)
                    with open(f, encoding="utf-8") as fh:
                        raw[f] = fh.read()
        test_mods, test_files = test_declared(src, raw)
        for f, text in sorted(raw.items()):
            rel = os.path.relpath(f, src)
            if is_test(rel) or f in test_files:
                continue
            mod = module_of(rel)
            if mod is None or any(mod[:len(t)] == t for t in test_mods):
                continue
            self.files[mod] = f
            self.module_of_file[f] = mod
            self.text[f] = strip(text)
        self.reexports = {f: parse_reexports(t) for f, t in self.text.items()}

    def module_file(self, mod):
        return self.files.get(tuple(mod))

    def resolve(self, mod, rest, depth=0):
        """Follows a path from module `mod` through `rest`; returns the defining file."""
        mod = list(mod)
        rest = list(rest)
        while rest and self.module_file(mod + [rest[0]]):
            mod.append(rest.pop(0))
        f = self.module_file(mod)
        if not rest or depth > 8:
            return f
        item = rest[0]
        for name, target in self.reexports.get(f, []):
            if name == item or name == "*":
                base_mod, tail = climb(self, mod, f, [target[0]] + target[1])
                if base_mod is None:
                    continue
                if name == "*":
                    glob = self.module_file(base_mod + tail)
                    if glob and re.search(r"\b(fn|struct|enum|trait|type|const|static|mod)\s+"
                                          + re.escape(item) + r"\b", self.text[glob]):
                        return self.resolve(base_mod, tail + [item], depth + 1)
                    continue
                return self.resolve(base_mod, tail, depth + 1)
        return f


def is_test(rel):
    parts = rel.split(os.sep)
    return ("tests" in parts[:-1] or parts[-1] == "tests.rs"
            or parts[-1].endswith("_tests.rs") or rel in ("main.rs",))


def test_declared(src, raw):
    """Module paths and files that a `#[cfg(test)] mod name;` declares: test code, with
    everything below them."""
    mods, files = set(), set()
    for f, text in raw.items():
        mod = module_of(os.path.relpath(f, src))
        for m in TEST_MOD_RE.finditer(strip_literals(text, keep_strings=True)):
            path = PATH_ATTR_RE.search(m.group(1))
            if path:
                files.add(os.path.normpath(os.path.join(os.path.dirname(f), path.group(1))))
            elif mod is not None:
                mods.add(mod + (m.group(2),))
    return mods, files


def module_of(rel):
    parts = rel[:-3].split(os.sep)
    if parts == ["lib"]:
        return ()
    if parts[-1] == "mod":
        parts = parts[:-1]
    return tuple(parts)


def parse_reexports(text):
    """(item name, (first word, path)) for each `use` item; `*` for globs. Private ones count
    too: a child module sees its parent's imports (`super::Item`)."""
    out = []
    for m in USE_RE.finditer(text):
        for path in expand(m.group(2)):
            words = [w.strip() for w in path.split("::")]
            if len(words) < 2:
                continue
            last = words[-1]
            if " as " in last:
                last = last.split(" as ")[1].strip()
                words = words[:-1] + [words[-1].split(" as ")[0].strip()]
            first = words[0]
            if first in ("crate", "self", "super"):
                out.append((last, (first, words[1:-1] if last == "*" else words[1:])))
            else:
                out.append((last, (first, words[1:-1] if last == "*" else words[1:])))
    return out


def expand(tree):
    """`a::{b, c::{d, e}}` -> ["a::b", "a::c::d", "a::c::e"]."""
    tree = re.sub(r"\s+", " ", tree).strip()
    i = tree.find("{")
    if i < 0:
        return [tree]
    prefix = tree[:i]
    depth, parts, cur = 0, [], ""
    body = tree[i + 1:tree.rfind("}")]
    for c in body:
        if c == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += c == "{"
        depth -= c == "}"
        cur += c
    parts.append(cur)
    out = []
    for p in parts:
        p = p.strip()
        if not p:
            continue
        if p == "self":
            out.append(prefix.rstrip(":"))
        else:
            out.extend(expand(prefix + p))
    return out


def edges(tree, mod, f):
    text = tree.text[f]
    found = {}
    is_parent = any(len(m) == len(mod) + 1 and m[:len(mod)] == mod for m in tree.files)

    def add(words, line, reexport):
        base, words = climb(tree, mod, f, words)
        if base is None:
            return
        target = tree.resolve(base, words)
        if not target or target == f:
            return
        tmod = tree.module_of_file[target]
        if reexport and is_parent and tmod[:len(mod)] == tuple(mod):
            return  # a folder re-exporting its children
        found.setdefault(target, line)

    for m in USE_RE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        for path in expand(m.group(2)):
            words = [w.strip().split(" as ")[0].strip() for w in path.split("::")]
            if words[-1] == "*":
                words = words[:-1]
            add(words, line, bool(m.group(1)))
    body = USE_RE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    for m in PATH_RE.finditer(body):
        if m.start() > 0 and body[m.start() - 1] == ":":
            continue  # the tail of a longer path, already read
        words = [m.group(1)] + m.group(2).split("::")[1:]
        add(words, body.count("\n", 0, m.start()) + 1, False)
    return found


def rule_breaks(tree):
    """The clock and file rules: (file, line, what) for each line that breaks one."""
    out = []
    for mod, f in sorted(tree.files.items(), key=lambda e: e[1]):
        if not mod:
            continue
        text = tree.text[f]
        found = {}
        if mod[0] in CLOCKLESS:
            for m in CLOCK_RE.finditer(text):
                found.setdefault((text.count("\n", 0, m.start()) + 1, "clock"),
                                 f"reads the clock ({m.group(0)}) in {mod[0]}/: "
                                 f"take `now` as a parameter")
        if mod[0] in DISKLESS and os.path.relpath(f, tree.src) not in FILE_IO_ALLOWED:
            hits = [(m.start(), m.group(0)) for m in FILE_RE.finditer(text)]
            for m in USE_RE.finditer(text):
                for path in expand(m.group(2)):
                    if FILE_USE_RE.match(re.sub(r"\s+", "", path)):
                        hits.append((m.start(), path.strip()))
            for at, what in hits:
                found.setdefault((text.count("\n", 0, at) + 1, "file"),
                                 f"file I/O ({what}) in {mod[0]}/: only store/ and app/ own disk")
        out.extend((f, line, what) for (line, _), what in sorted(found.items()))
    return out


def climb(tree, mod, f, words):
    """Consumes a path's leading crate/self/super words: (module, the rest)."""
    if not words:
        return None, []
    if words[0] == "crate":
        return [], words[1:]
    base = list(mod)
    if words[0] == "self":
        words = words[1:]
    elif words[0] == "super":
        while words and words[0] == "super":
            base = base[:-1]
            words = words[1:]
    elif tree.module_file(base + [words[0]]):
        pass  # `use child::X` inside a parent names its own child module
    else:
        return None, []  # an outside crate or std
    return base, words


def self_test():
    """The check finds what it is for: a cycle through a re-export, an upward import, two
    folders importing each other, a clock read and file I/O where they may not be; and lets a
    folder re-export its children, fetcher/ read the clock, store/ open files, and test code
    do either."""
    import tempfile
    files = {
        "lib.rs": "pub mod crawl;\npub mod store;\n",
        "crawl/mod.rs": "mod a;\nmod b;\npub use a::A;\npub use b::B;\n",
        "crawl/a.rs": "use super::B;\npub struct A;\n",
        "crawl/b.rs": "pub struct B;\nfn f() { let _ = crate::crawl::A; }\n",
        "store/mod.rs": "pub fn s() {}\n",
        "crawl/c_tests.rs": "use crate::store::s;\n",
    }
    with tempfile.TemporaryDirectory() as d:
        for name, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(d, name)), exist_ok=True)
            with open(os.path.join(d, name), "w") as fh:
                fh.write(text)
        graph = {f: edges(Tree(d), m, f) for m, f in Tree(d).files.items()}
        cycles = find_cycles(graph)
        assert len(cycles) == 1 and len(cycles[0]) == 2, cycles
        with open(os.path.join(d, "crawl/b.rs"), "a") as fh:
            fh.write("use crate::store::s;\n")
        tree = Tree(d)
        up = [t for m, f in tree.files.items() for t in edges(tree, m, f)
              if m[:1] == ("crawl",) and tree.module_of_file[t][:1] == ("store",)]
        assert len(up) == 1, up
        # Two cores that import each other, through files that form no file cycle.
        for name, text in {"lib.rs": "pub mod links;\npub mod discovery;\n",
                           "links/mod.rs": "pub mod scan;\npub mod kind;\n",
                           "links/scan.rs": "pub fn scan() {}\n",
                           "links/kind.rs": "fn k() { crate::discovery::feed::f(); }\n",
                           "discovery/mod.rs": "pub mod feed;\npub mod text;\n",
                           "discovery/feed.rs": "pub fn f() {}\n",
                           "discovery/text.rs": "fn t() { crate::links::scan::scan(); }\n"}.items():
            os.makedirs(os.path.dirname(os.path.join(d, "b", name)), exist_ok=True)
            with open(os.path.join(d, "b", name), "w") as fh:
                fh.write(text)
        tree = Tree(os.path.join(d, "b"))
        graph = {f: edges(tree, m, f) for m, f in tree.files.items()}
        assert not find_cycles(graph), find_cycles(graph)
        assert len(find_cycles(folder_graph(tree, graph))) == 1
        # The clock and file rules: where each applies, and test code left out.
        for name, text in {
            "lib.rs": "pub mod crawl;\npub mod fetcher;\npub mod links;\npub mod store;\n",
            "links/mod.rs": "use std::time::Instant;\npub fn f() -> Instant { Instant::now() }\n"
                            "#[cfg(test)]\nmod tests {\n    fn t() { Instant::now(); }\n}\n"
                            # A `//` and a `/*` in a string, a quote in a char: code after them
                            # is still read.
                            "const U: &str = \"http://h/*\";\nfn q<'a>(_: &'a u8) -> u8 { b'\"' }\n"
                            "fn h() { SystemTime::now(); }\n",
            "crawl/mod.rs": "#[cfg(test)]\nmod sim;\n/* a comment\nof two lines */\n"
                            "use std::{fs, io};\npub fn g(t: Instant) { t.elapsed(); }\n",
            "crawl/sim.rs": "fn s() { SystemTime::now(); std::fs::read(\"x\"); }\n",
            "fetcher/mod.rs": "fn n() { Instant::now(); }\n/// A `File` named in a comment.\n"
                              "pub struct F(std::fs::File);\n",
            "store/mod.rs": "fn w() { std::fs::File::create(\"x\"); SystemTime::now(); }\n",
        }.items():
            os.makedirs(os.path.dirname(os.path.join(d, "c", name)), exist_ok=True)
            with open(os.path.join(d, "c", name), "w") as fh:
                fh.write(text)
        tree = Tree(os.path.join(d, "c"))
        found = [(os.path.relpath(f, tree.src), line, what.split(" ")[0])
                 for f, line, what in rule_breaks(tree)]
        assert found == [("crawl/mod.rs", 5, "file"), ("crawl/mod.rs", 6, "reads"),
                         ("fetcher/mod.rs", 3, "file"), ("links/mod.rs", 2, "reads"),
                         ("links/mod.rs", 9, "reads")], found
    print("self-test passed")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return 0
    src = sys.argv[1] if len(sys.argv) > 1 else "src"
    tree = Tree(src)
    graph = {}
    problems = []
    for mod, f in sorted(tree.files.items()):
        es = edges(tree, mod, f)
        graph[f] = es
        for target, line in es.items():
            tmod = tree.module_of_file[target]
            if not mod or not tmod:
                continue
            a, b = LAYERS.get(mod[0]), LAYERS.get(tmod[0])
            if a is None or b is None:
                problems.append(f"{f}:{line}: layer of {mod[0]} or {tmod[0]} unknown")
            elif b > a:
                problems.append(f"{f}:{line}: upward import into {target} ({mod[0]} < {tmod[0]})")
    cycles = find_cycles(graph)
    for c in cycles:
        problems.append("cycle: " + " -> ".join(c + [c[0]]))
    folder_cycles = find_cycles(folder_graph(tree, graph))
    for c in folder_cycles:
        problems.append("folders import each other: " + " -> ".join(c + [c[0]]))
    upward = len(problems) - len(cycles) - len(folder_cycles)
    breaks = rule_breaks(tree)
    problems.extend(f"{f}:{line}: {what}" for f, line, what in breaks)
    for p in problems:
        print(p)
    clock = sum(1 for b in breaks if b[2].startswith("reads the clock"))
    print(f"{len(tree.files)} files, {sum(len(e) for e in graph.values())} imports, "
          f"{len(cycles)} cycles, {len(folder_cycles)} folder cycles, {upward} upward imports, "
          f"{clock} clock reads, {len(breaks) - clock} file I/O uses where they may not be")
    return 1 if problems else 0


def folder_graph(tree, graph):
    """Top-level folder -> the folders its files import (each edge with one file that makes
    it): the same layer may import itself, but two folders must not import each other."""
    folders = {}
    for f, es in graph.items():
        mod = tree.module_of_file.get(f)
        for target in es:
            tmod = tree.module_of_file[target]
            if mod and tmod and mod[0] != tmod[0]:
                folders.setdefault(mod[0], {}).setdefault(tmod[0], f)
    return folders


def find_cycles(graph):
    """One cycle per strongly connected component of more than one file (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, {}):
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
                out.append(shortest_cycle(graph, set(comp)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def shortest_cycle(graph, comp):
    start = sorted(comp)[0]
    prev, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph.get(v, {})):
                if w == start:
                    path = [v]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    path.reverse()
                    return path + ([] if len(comp) == len(path) else
                                   [f"(+{len(comp) - len(path)} more in the same knot)"])
                if w in comp and w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return sorted(comp)


if __name__ == "__main__":
    sys.exit(main())
