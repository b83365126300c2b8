#!/usr/bin/env bash
# Rewrites the golden files of tests/golden/ from what texc prints now, then shows what changed.
# Review every changed line against docs/sema-dump.md, docs/ir.md and the spec before
# committing: a golden that records a bug is worse than none.
#
#   scripts/accept-goldens.sh            # BUILD_DIR (default build) selects the build tree
#
# It builds test_frontend and test_passes and runs their golden tests with TEXC_ACCEPT=1, which
# writes the files instead of comparing them:
#   tests/golden/sema/     the sema dump (NAME.expected, NAME.diagnostics when there are warnings)
#   tests/golden/graph/    the dataflow graph, default fusion and --fuse=none
#   tests/golden/loops/    the loop IR
#   tests/golden/passes/   one graph pass, before and after
#   tests/golden/plan/     the memory plan (table and timeline)
# Goldens whose program was removed are deleted.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" >/dev/null
elif [[ ! -d "$build_dir/tests" ]] || ! grep -q test_passes "$build_dir/build.ninja" 2>/dev/null; then
  # A build tree configured before tests/unit/passes existed has no test_passes target yet.
  cmake -S . -B "$build_dir" >/dev/null
fi
cmake --build "$build_dir" --target test_frontend test_passes
# Run both even when one fails (a program that no longer compiles), then say so at the end.
status=0
TEXC_ACCEPT=1 "$build_dir/tests/test_frontend" "[golden]" || status=$?
TEXC_ACCEPT=1 "$build_dir/tests/test_passes" "[golden]" || status=$?
echo
echo "Changes under tests/golden (review them before committing):"
git --no-pager diff --stat -- tests/golden
git --no-pager status --short --untracked-files=all -- tests/golden
if [[ $status -ne 0 ]]; then
  echo "some golden tests failed (see above): their goldens were not all written" >&2
fi
exit $status
