#!/usr/bin/env bash
# The second command of the README (and what CI runs): set up (with the Python package's virtual
# environment, scripts/python-env.sh), build, run every test, run every
# test again in a build with ASan and UBSan (scripts/sanitize.sh; SANITIZE=0 skips it), then fuzz
# the front end for a minute (FUZZ_SECONDS, 0 to skip).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/python-env.sh
scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "$(nproc)"
if [ "${SANITIZE:-1}" != 0 ]; then
  BUILD_DIR="${SANITIZE_BUILD_DIR:-build-asan}" scripts/sanitize.sh
fi
fuzz_seconds=${FUZZ_SECONDS:-60}
if [ "$fuzz_seconds" -gt 0 ]; then
  scripts/fuzz.sh "$fuzz_seconds"
fi
