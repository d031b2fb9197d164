#!/usr/bin/env python3
"""check_includes.py - fail on a cycle in the #include graph of C sources.

Usage: check_includes.py [--below LOWER:UPPER]... DIR...   (e.g. --below kernels:harness harness kernels)

Reads the `#include "x.h"` lines of every .c/.h/.hip file under the given directories, resolves a
name against the including file's directory and then against every given directory, and reports
each cycle among the files as `a.h -> b.h -> a.h`. Cycles among modules (x.c and x.h are module
x: x includes y.h while y includes x.h) are reported as well, since they make two modules one
(issue 14: runner.c <-> worker.c through worker.h including runner.h).
--below LOWER:UPPER states a layering: no file under LOWER includes a file under UPPER (the kernels
layer includes nothing from harness/); each such include is reported.
Exit status: 0 no cycle and no layering broken, 1 found, 2 usage.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(dirs):
    for d in dirs:
        for root, _, files in os.walk(d):
            for f in sorted(files):
                if f.endswith((".c", ".h", ".hip", ".cuh")):
                    yield os.path.normpath(os.path.join(root, f))


def resolve(name, src, dirs, known):
    for base in [os.path.dirname(src)] + dirs:
        p = os.path.normpath(os.path.join(base, name))
        if p in known:
            return p
    return None  # a system or generated header: outside the graph


def cycles(graph):
    """Every elementary cycle found by depth-first search (one report per cycle, rotated)."""
    found, state, stack = set(), {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                cyc = stack[stack.index(m):]
                k = cyc.index(min(cyc))
                found.add(tuple(cyc[k:] + cyc[:k]))
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n)
    return sorted(found)


def under(path, d):
    return path == d or path.startswith(d + os.sep)


def module(path):
    return os.path.splitext(path)[0]


def main(argv):
    args, below = argv[1:], []
    while len(args) >= 2 and args[0] == "--below" and ":" in args[1]:
        lower, upper = args[1].split(":", 1)
        below.append((os.path.normpath(lower), os.path.normpath(upper)))
        args = args[2:]
    dirs = [os.path.normpath(d) for d in args]
    if not dirs or any(d.startswith("-") for d in dirs):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    files = list(sources(dirs))
    known = set(files)
    files_graph, modules_graph = {}, {}
    for src in files:
        with open(src, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for name in INCLUDE.findall(text):
            dst = resolve(name, src, dirs, known)
            if dst is None or dst == src:
                continue
            files_graph.setdefault(src, set()).add(dst)
            if module(dst) != module(src):
                modules_graph.setdefault(module(src), set()).add(module(dst))
    bad = 0
    for lower, upper in below:
        for src in sorted(files_graph):
            for dst in sorted(files_graph[src]):
                if under(src, lower) and under(dst, upper):
                    print("layering broken: %s includes %s (%s is below %s)" % (src, dst, lower, upper))
                    bad += 1
    for kind, graph in (("header", files_graph), ("module", modules_graph)):
        for cyc in cycles(graph):
            print("include cycle (%s): %s" % (kind, " -> ".join(cyc + (cyc[0],))))
            bad += 1
    if bad:
        return 1
    print("no include cycle among %d files in %s" % (len(files), ", ".join(dirs)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
