#!/usr/bin/env bash
# Opt-in check of the Python package's real installation (docs/python.md, "Installing"): makes a
# throwaway virtual environment, runs `pip install .` from the repository root (an isolated build
# into build-pip/, a full build of the compiler) and runs the pytest suite against the installed
# package. With REUSE_BUILD=DIR the wheel is built with --no-build-isolation in the already-built
# tree DIR instead (scripts/build.sh's; only the module is relinked, if anything).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/python-env.sh
root=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
if [ -n "${REUSE_BUILD:-}" ]; then
  .venv/bin/python -m pip wheel -v --no-deps --no-build-isolation --config-settings=build-dir="$REUSE_BUILD" -w "$work/wheel" . |
    grep -E '^\s*\[[0-9]+/[0-9]+\]' || true
  "$work/venv/bin/python" -m pip install -q "$work"/wheel/texc-*.whl
else
  "$work/venv/bin/python" -m pip install -q .
fi
"$work/venv/bin/python" -m pip install -q pytest nbclient nbformat ipykernel matplotlib pandas
# Out of the repository, so that nothing but the installed package can be imported.
cd "$work"
"$work/venv/bin/python" -c "import texc, sys; print('texc from', texc.__file__)"
"$work/venv/bin/python" -m pytest -q -rs -p no:cacheprovider "$root/python/tests"
