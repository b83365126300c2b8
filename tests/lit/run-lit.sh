#!/bin/sh
# ctest's `lit` test: runs the FileCheck tests of tests/lit with LLVM's lit.
#
#   run-lit.sh PYTHON LIT_PY FILECHECK SOURCE_DIR BUILD_DIR
#
# The first three are what CMake found (a path, or empty / *-NOTFOUND when missing). When one is
# missing the test is skipped (exit 77, ctest's SKIP_RETURN_CODE; tests/support/Skip.h) with the
# reason, never passed; in CI (CI set, not 0 or false) it fails instead, since scripts/setup.sh
# installs them (Debian's llvm-19-tools).
python=$1 lit=$2 filecheck=$3 source_dir=$4 build_dir=$5

missing=""
case "$python" in ""|*-NOTFOUND) missing="a Python 3 interpreter" ;; esac
if [ ! -f "$lit" ]; then missing="${missing:+$missing, }LLVM's lit (lit.py, Debian package llvm-19-tools)"; fi
if [ ! -x "$filecheck" ]; then missing="${missing:+$missing, }FileCheck (Debian package llvm-19-tools)"; fi

if [ -n "$missing" ]; then
  case "${CI:-}" in
    ""|0|false)
      echo "SKIPPED: the lit tests need $missing; run scripts/setup.sh and reconfigure"
      exit 77 ;;
    *)
      echo "FAILED: CI is set and the lit tests need $missing (scripts/setup.sh installs it)"
      exit 1 ;;
  esac
fi

exec "$python" "$lit" -sv "$source_dir/tests/lit" --param "build_dir=$build_dir"
