#!/usr/bin/env python3
"""Checks that no layer's static library uses a symbol that only a higher layer defines.

A static library is not linked on its own, so a call from a lower layer into a higher one (a
function declared in a lower header but defined above, say) builds as long as some executable
links both. This script reads the libraries' symbol tables with nm instead: for each library, every
symbol it references but does not define must be defined by a library listed before it, or by
none of them (the C++ library, fmt, LLVM, ...).

Usage: check-layer-symbols.py [--nm NM] LIBRARY...   (the layers' .a files, lowest first)
Exits 1, printing one line per symbol, when a library needs a symbol of a library above it.
"""

import argparse
import os
import subprocess
import sys


def symbols(nm, library, defined):
    """The symbols `library` defines (defined=True) or references without defining."""
    flag = "--defined-only" if defined else "--undefined-only"
    out = subprocess.run([nm, flag, "--format=posix", library], check=True, capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        fields = line.split()
        # "NAME TYPE [VALUE SIZE]"; archive member headers ("lib.a[obj.o]:") have no type.
        if len(fields) >= 2 and not fields[0].endswith(":"):
            names.add(fields[0])
    return names


def demangle(names):
    try:
        out = subprocess.run(["c++filt"], input="\n".join(names), check=True, capture_output=True, text=True).stdout
        return out.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return list(names)


def main():
    parser = argparse.ArgumentParser(description="Fails when a layer's library needs a symbol of a higher layer.")
    parser.add_argument("--nm", default="nm")
    parser.add_argument("libraries", nargs="+", help="the layers' static libraries, lowest first")
    args = parser.parse_args()

    defined = [symbols(args.nm, lib, True) for lib in args.libraries]
    problems = 0
    for index, lib in enumerate(args.libraries):
        needed = symbols(args.nm, lib, False) - defined[index]
        for lower in defined[:index]:
            needed -= lower
        for above in range(index + 1, len(args.libraries)):
            upward = sorted(needed & defined[above])
            for name, readable in zip(upward, demangle(upward)):
                print(f"{os.path.basename(lib)} needs {readable} ({name}), "
                      f"defined only above it in {os.path.basename(args.libraries[above])}")
                problems += 1
            needed -= defined[above]
    if problems:
        print(f"check-layer-symbols: {problems} upward symbol reference(s); the layers are in "
              f"docs/architecture.md, \"Layers\"", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
