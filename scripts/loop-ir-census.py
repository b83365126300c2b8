#!/usr/bin/env python3
"""Counts what the loop-IR core (compiler/loops/Walk, Substitute, Equal, PerfectNest and
core/IndexAlgebra) is meant to replace, outside the core itself:
  * hand-written recursive walks over statement bodies: functions or lambdas that take a
    statement or a block, read a body and call themselves;
  * definitions of substitution / renaming, structural equality, and affine-form analyses.
Run from the repository root: python3 scripts/loop-ir-census.py [-v]"""
import glob
import os
import re
import sys

CORE = {"compiler/loops/Walk.cpp", "compiler/loops/Substitute.cpp", "compiler/loops/Equal.cpp",
        "compiler/loops/PerfectNest.cpp", "core/IndexAlgebra.cpp"}
COPIES = {
    "substitute": r"substitute\w*|rename(Var|Index|Acc)\w*|shiftVars",
    "equal": r"same(Index|Expr|Stmt)\w*|equal(Index|Expr|Stmt)?",
    "affine form": r"affine(Terms)?|coefficientOf|linearize|linearOffset|rowAffine",
}
DEF = re.compile(r"^[ \t]*(?:static\s+|inline\s+)*[A-Za-z_][\w:<>,\s\*&]*?[\s\*&](\w+)\(([^;{}]*?)\)\s*(?:const\s*)?\{",
                 re.M)


def body_at(src, start):
    depth, i = 1, start
    while depth and i < len(src):
        depth += {"{": 1, "}": -1}.get(src[i], 0)
        i += 1
    return src[start:i]


def main():
    verbose = "-v" in sys.argv
    files = sorted(glob.glob("compiler/**/*.cpp", recursive=True) + glob.glob("frontend/*.cpp"))
    walks, copies = [], {k: [] for k in COPIES}
    for f in files:
        if f in CORE:
            continue
        src = open(f).read()
        for m in DEF.finditer(src):
            name, params = m.group(1), m.group(2)
            if name in ("if", "for", "while", "switch", "return"):
                continue
            body = body_at(src, m.end())
            if f.startswith("compiler/") and re.search(r"\b(Stmt|Block)\b", params) and \
                    re.search(r"\b%s\(" % re.escape(name), body) and re.search(r"body|Body|epilogue", body):
                walks.append("%s:%s" % (f, name))
            for kind, pat in COPIES.items():
                if re.fullmatch(pat, name):
                    copies[kind].append("%s:%s" % (f, name))
        for m in re.finditer(r"std::function<[^;]*\b(Stmt|Block)\b[^;]*>\s*(\w+)\s*=", src):
            walks.append("%s:%s (lambda)" % (f, m.group(2)))
    print("recursive walks over statement bodies: %d" % len(walks))
    if verbose:
        for w in walks:
            print("  " + w)
    for kind, found in copies.items():
        print("definitions of %s outside the core: %d in %d files" % (kind, len(found), len({x.split(":")[0] for x in found})))
        if verbose:
            for x in found:
                print("  " + x)


if __name__ == "__main__":
    main()
