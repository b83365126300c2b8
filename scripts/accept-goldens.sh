#!/usr/bin/env bash
# Rewrites the golden files of tests/golden/ from what the front end prints now, then shows what
# changed. Review every changed line against docs/sema-dump.md and the spec before committing:
# a golden that records a bug is worse than none.
#
#   scripts/accept-goldens.sh            # BUILD_DIR (default build) selects the build tree
#
# It builds test_frontend and runs its golden tests with TEXC_ACCEPT=1, which writes each
# NAME.expected (and NAME.diagnostics, when the program has warnings) instead of comparing.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" >/dev/null
fi
cmake --build "$build_dir" --target test_frontend
TEXC_ACCEPT=1 "$build_dir/tests/test_frontend" "[golden]"
echo
echo "Changes under tests/golden (review them before committing):"
git --no-pager diff --stat -- tests/golden
git --no-pager status --short --untracked-files=all -- tests/golden
