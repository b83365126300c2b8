#!/usr/bin/env bash
# The sanitizer stage of CI: builds everything with AddressSanitizer and UndefinedBehaviorSanitizer
# (TEXC_SANITIZE=ON) in its own build directory and runs the whole test suite there.
#
#   scripts/sanitize.sh [CTEST_ARGS...]
#
# BUILD_DIR (default build-asan). The build is Release with -O1 instead of -O3: compiling is
# about twice as fast and the sanitizers find the same bugs. Any sanitizer report fails the test
# that triggered it (UBSan does not recover; ASan aborts). The JIT-compiled kernels are LLVM's
# output and are not instrumented; the compiler, runtime and tests are. The differential run is
# shorter than in the plain build (60 programs, of which at least 30 must run within the time
# limit), its only reduced mode.
#
# Three tests are left out of the sanitized run (and say so): the e2e suite under every variant,
# the CUDA emulation of every program and the NVRTC/ptxas compile of every program. They spend
# their time in what the sanitizers do not instrument (the JIT-compiled kernels, the host C++
# compiler, ptxas): under ASan they took 370 of the run's 850 CPU seconds on a 2-core machine.
# The plain build runs them; the compiler's own code on such programs runs sanitized in the
# difftest's random programs and in every other test.
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${BUILD_DIR:-build-asan}
# Compiled by clang (SANITIZE_CXX, SANITIZE_CC), which is already here for the fuzzer: with
# -O1 and both sanitizers GCC 12 took 2.5 times as long on the same files (PipelineRowStores.cpp
# 10.9 s against 4.3, CodeGenLLVM.cpp 20.5 against 12.0). Warnings are the plain build's job (GCC,
# -Werror); clang's set differs, so here they do not stop the build.
cmake -S . -B "$build_dir" -G Ninja \
  -DCMAKE_CXX_COMPILER="${SANITIZE_CXX:-clang++-19}" -DCMAKE_C_COMPILER="${SANITIZE_CC:-clang-19}" -DTEXC_WERROR=OFF \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" -DCMAKE_C_FLAGS_RELEASE="-O1 -DNDEBUG" \
  -DTEXC_SANITIZE=ON -DTEXC_DIFFTEST_COUNT=60 -DTEXC_DIFFTEST_TIME_LIMIT=180 -DTEXC_DIFFTEST_MIN_PROGRAMS=30 >/dev/null
ninja -C "$build_dir"

# Leaks are errors too; a sanitizer report aborts the process, so the test fails. A huge
# allocation returns null (texc reports it as out of memory, which tests check) instead of aborting.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
not_sanitized='^(e2e: every program matches the float64 reference under every variant|cuda emulation: the generated CUDA C of every program matches the float64 reference|nvrtc: every example and e2e program compiles to PTX that ptxas accepts for sm_90)$'
echo "sanitize.sh: not run under the sanitizers (the plain build runs them; see the top of this script):"
echo "  e2e: every program ... under every variant; cuda emulation: ... every program ...; nvrtc: every example and e2e program ..."
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" -E "$not_sanitized" "$@"
