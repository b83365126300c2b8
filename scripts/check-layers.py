#!/usr/bin/env python3
"""Checks that no #include "..." in texc's C++ sources reaches from a lower layer to a higher one.

The layers, lowest first, are LAYERS below (docs/architecture.md, "Layers", says what each holds;
the CMake libraries of the same names link the same way). A file may include files of its own
layer and of any layer below it. Files under tests/ and bench/ are applications: they sit above
every layer and may include anything, but nothing in a layer may include them. A source file in
a layered folder (core/, runtime/, frontend/, compiler/) that matches no layer is an error too,
so that a new folder gets its place in the table.

Usage: check-layers.py [--root DIR]   (default: the repository holding this script)
Exits 0 when every include goes down or sideways within a layer, 1 otherwise, printing one line
per upward include: FILE:LINE: upward include of "INCLUDED" (layer A includes layer B above it).
"""

import argparse
import os
import re
import sys

# (layer, library, path prefixes), lowest first. A prefix ending in '/' is a folder (with its
# subfolders); anything else is one file. The longest matching prefix decides.
LAYERS = [
    ("core", "texc_core", ["core/"]),
    ("runtime", "texc_runtime", ["runtime/"]),
    ("frontend", "texc_frontend", ["frontend/"]),
    ("reference", "texc_reference", ["compiler/reference/"]),
    ("graph", "texc_graph", ["compiler/graph/"]),
    ("loops", "texc_loops", ["compiler/loops/"]),
    ("target", "texc_target", ["compiler/target/"]),
    ("pass-interface", "texc_pass_interface", ["compiler/passes/Pass.h", "compiler/passes/Passes.def"]),
    ("graph-passes", "texc_graph_passes", ["compiler/passes/graph/"]),
    ("loop-passes", "texc_loop_passes", ["compiler/passes/loops/"]),
    ("backend-llvm", "texc_backend_llvm", ["compiler/backend/llvm/", "compiler/passes/llvm/"]),
    ("backend-cuda", "texc_backend_cuda", ["compiler/backend/cuda/", "compiler/passes/cuda/"]),
    ("analysis", "texc_analysis", ["compiler/analysis/"]),
    ("pipeline", "texc_pipeline", ["compiler/passes/"]),
    ("driver", "texc_driver", ["compiler/driver/"]),
    ("applications", "(tests, tools)", ["tests/", "bench/"]),
]

# Folders whose every source file must belong to a layer.
LAYERED_ROOTS = ("core/", "runtime/", "frontend/", "compiler/")

SOURCE_SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".c", ".cu", ".def", ".inc")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def layer_of(path):
    """The index in LAYERS of the layer holding `path` (relative, '/'-separated), or None."""
    best, best_len = None, -1
    for index, (_, _, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            matches = path.startswith(prefix) if prefix.endswith("/") else path == prefix
            if matches and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    return best


def source_files(root):
    """Every C++ source below `root`, relative and '/'-separated, skipping build trees and dot folders."""
    found = []
    for folder, subfolders, files in os.walk(root):
        # A folder holding CMakeCache.txt is a build tree; its generated files are not sources.
        subfolders[:] = sorted(d for d in subfolders if not d.startswith(".")
                               and not os.path.exists(os.path.join(folder, d, "CMakeCache.txt")))
        for name in sorted(files):
            if name.endswith(SOURCE_SUFFIXES):
                found.append(os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/"))
    return found


def resolve(root, including, included):
    """The repository path `included` names from `including`: next to it first, then from the
    root (the one include directory texc's targets share). None when neither exists."""
    beside = os.path.normpath(os.path.join(os.path.dirname(including), included)).replace(os.sep, "/")
    if not beside.startswith("../") and os.path.isfile(os.path.join(root, beside)):
        return beside
    from_root = os.path.normpath(included).replace(os.sep, "/")
    if not from_root.startswith("../") and os.path.isfile(os.path.join(root, from_root)):
        return from_root
    return None


def check(root):
    """The problems found under `root`, one message each."""
    problems = []
    for path in source_files(root):
        source = layer_of(path)
        if source is None:
            if path.startswith(LAYERED_ROOTS):
                problems.append(f"{path}: in no layer (add its folder to the table in scripts/check-layers.py)")
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                target_path = resolve(root, path, match.group(1))
                if target_path is None:
                    continue  # a system or generated header
                target = layer_of(target_path)
                if target is None or target <= source:
                    continue
                problems.append(f'{path}:{number}: upward include of "{match.group(1)}" '
                                f"(layer {LAYERS[source][0]} includes layer {LAYERS[target][0]} above it)")
    return problems


def check_cmake_order(root):
    """Problems with compiler/CMakeLists.txt's TEXC_LAYER_ORDER (the libraries, lowest first, whose
    links CMake checks): it must name LAYERS' libraries in the same order. None to check when the
    tree has no such list (a test fixture)."""
    path = os.path.join(root, "compiler", "CMakeLists.txt")
    if not os.path.isfile(path):
        return []
    with open(path, encoding="utf-8") as f:
        match = re.search(r"set\(TEXC_LAYER_ORDER\s+([^)]*)\)", f.read())
    if not match:
        return []
    in_cmake = match.group(1).split()
    in_table = [library for _, library, _ in LAYERS if library.startswith("texc_")]
    if in_cmake != in_table:
        return [f"compiler/CMakeLists.txt: TEXC_LAYER_ORDER is {' '.join(in_cmake)}; "
                f"the table in scripts/check-layers.py says {' '.join(in_table)}"]
    return []


def main():
    parser = argparse.ArgumentParser(description="Fails on an #include from a lower layer to a higher one.")
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        help="the source tree to check (default: this repository)")
    parser.add_argument("--list", action="store_true", help="print the layer table, lowest first, and exit")
    args = parser.parse_args()
    if args.list:
        for index, (name, library, prefixes) in enumerate(LAYERS):
            print(f"{index:2}  {name:15} {library:20} {' '.join(prefixes)}")
        return 0
    problems = check_cmake_order(args.root) + check(args.root)
    for problem in problems:
        print(problem)
    if problems:
        print(f"check-layers: {len(problems)} problem(s); the layers are in docs/architecture.md, \"Layers\"",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
