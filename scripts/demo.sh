#!/usr/bin/env bash
# The first command of the README: set up, build, and run texc's main job on an example.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
set -x
build/texc check examples/gelu.tex
