#!/usr/bin/env bash
# The first command of the README: set up, build, and run texc's main job on an example.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
set -x
build/texc check examples/gelu.tex
build/texc compile examples/gelu.tex --emit ir --fuse=none -D N=64 -D D=64
build/texc run examples/gelu.tex -D N=64 -D D=64 --random 1 --check --output-dir out --time-passes
