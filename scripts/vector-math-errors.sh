#!/usr/bin/env bash
# Exhaustive error sweep of the inline vector math (compiler/backend/llvm/VectorMath.h): exp, log,
# tanh, sigmoid, erf, sin and cos on every one of the 2^32 float inputs, and on 2^24 double inputs
# each, in both --math modes, against glibc in higher precision (double for f32, long double for
# f64). Prints, per function, mode and type, the largest error in ulp and where it occurs, the
# inputs above 1 and 2 ulp, the special-value mismatches (NaN, infinity, sign of zero) and the
# time taken, then a markdown table of the maxima, then how long the whole run took.
# tests/tools/vecmath_errors.cpp says exactly what is measured.
#
#   scripts/vector-math-errors.sh [ARGS...]
#
# ARGS go to texc-vecmath-errors, e.g. `--fn exp,tanh` (a subset), `--mode precise`, `--threads N`
# (default: every core), `--stride S` (every S-th float only), `--f64-samples N`,
# `--max-ulp-precise X` (fail above X ulp in precise mode). Each function's 2^32 inputs in both
# modes take 65 to 90 s of CPU time on an AVX2 machine (its 2^24 doubles a few more), so the whole
# sweep is about 9 CPU-minutes: some 5 minutes on 2 cores, where `--fn exp` alone takes about 40 s.
#
# Environment: BUILD_DIR (default build; configured as a Release build when it does not exist).
# Exits with the tool's status: 0, 1 when a special value came out wrong (or --max-ulp-precise was
# exceeded), 2 on bad arguments.
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${BUILD_DIR:-build}
if [[ ! -f $build_dir/build.ninja ]]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
ninja -C "$build_dir" texc-vecmath-errors >/dev/null

start=$(date +%s.%N)
status=0
"$build_dir/texc-vecmath-errors" --markdown "$@" || status=$?
end=$(date +%s.%N)
awk -v s="$start" -v e="$end" \
  'BEGIN { t = e - s; printf "\nvector-math-errors: took %.0f s (%dm%02ds)\n", t, t / 60, t % 60 }'
exit "$status"
