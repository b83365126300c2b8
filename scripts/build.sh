#!/usr/bin/env bash
# Configures and builds texc. BUILD_DIR (default build) and BUILD_TYPE (default Release) select
# the tree; extra arguments go to cmake's configure step (e.g. -DTEXC_SANITIZE=ON).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
build_type=${BUILD_TYPE:-Release}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="$build_type" "$@" >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
