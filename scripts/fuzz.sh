#!/usr/bin/env bash
# Fuzzes texc with libFuzzer under ASan and UBSan.
#
#   scripts/fuzz.sh [SECONDS] [LIBFUZZER_FLAGS...]     (default 60 seconds)
#
# FUZZ_TARGET picks the target: `frontend` (default: lexer, parser, sema, printers) or
# `pipeline` (every program that passes sema is compiled to machine code under a fusion mode and
# -O level picked from the input's hash; tests/fuzz/PipelineFuzzer.cpp).
#
# Configures build-fuzz (BUILD_DIR overrides) with clang-19 and TEXC_FUZZ=ON at -O1 -g (warnings
# are not errors there: clang's set differs from GCC's, which the main build enforces), builds
# the target's fuzzer, replays tests/fuzz/regressions/, then fuzzes for SECONDS starting from a
# seed corpus of examples/*.tex and tests/errors/*.tex (pipeline: also tests/e2e/*.tex), copied at
# run time. The corpus grown so far lives in build-fuzz/corpus (build-fuzz/corpus-pipeline) and
# is reused by the next run; crashing inputs land in build-fuzz/artifacts/. Exits non-zero on any
# crash, leak, timeout, out-of-memory or undefined behaviour.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
if [[ $# -gt 0 ]]; then shift; fi
if ! [[ $seconds =~ ^[0-9]+$ ]] || [[ $seconds -eq 0 ]]; then
  echo "usage: scripts/fuzz.sh [SECONDS] [LIBFUZZER_FLAGS...]" >&2
  exit 2
fi

build_dir=${BUILD_DIR:-build-fuzz}
target=${FUZZ_TARGET:-frontend}
case $target in
  frontend) corpus_name=corpus; seed_globs=(examples/*.tex tests/errors/*.tex) ;;
  pipeline) corpus_name=corpus-pipeline; seed_globs=(examples/*.tex tests/errors/*.tex tests/e2e/*.tex) ;;
  *)
    echo "fuzz: FUZZ_TARGET must be frontend or pipeline, not '$target'" >&2
    exit 2
    ;;
esac
cxx=${FUZZ_CXX:-clang++-19}
cc=${FUZZ_CC:-clang-19}

cmake -S . -B "$build_dir" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" \
  -DCMAKE_CXX_FLAGS="-fno-sanitize-recover=all" \
  -DTEXC_FUZZ=ON -DTEXC_WERROR=OFF >/dev/null
ninja -C "$build_dir" "${target}_fuzzer" >"$build_dir/build.log" 2>&1 || {
  cat "$build_dir/build.log" >&2
  echo "fuzz: building ${target}_fuzzer failed" >&2
  exit 1
}

fuzzer="$build_dir/tests/fuzz/${target}_fuzzer"
corpus="$build_dir/$corpus_name"
seeds="$build_dir/seeds"
artifacts="$build_dir/artifacts"
log="$build_dir/fuzz-$target.log"
mkdir -p "$corpus" "$artifacts"
rm -rf "$seeds"
mkdir -p "$seeds"
shopt -s nullglob
for f in "${seed_globs[@]}"; do
  cp "$f" "$seeds/$(echo "$f" | tr / _)"
done

# Undefined behaviour and leaks are errors, not log lines.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}

# Inputs that once failed must keep passing.
regressions=()
for f in tests/fuzz/regressions/*; do
  [[ $f == *.md ]] || regressions+=("$f")
done
if [[ ${#regressions[@]} -gt 0 ]]; then
  echo "replaying ${#regressions[@]} regression input(s)"
  "$fuzzer" -timeout=10 -rss_limit_mb=2048 "${regressions[@]}" >"$build_dir/regressions.log" 2>&1 || {
    cat "$build_dir/regressions.log" >&2
    echo "fuzz: a regression input fails again" >&2
    exit 1
  }
fi

echo "fuzzing for ${seconds}s (log: $log, corpus: $corpus, artifacts: $artifacts)"
status=0
"$fuzzer" \
  -dict=tests/fuzz/tex.dict \
  -max_total_time="$seconds" \
  -timeout=10 \
  -rss_limit_mb=2048 \
  -max_len=65536 \
  -print_final_stats=1 \
  -artifact_prefix="$artifacts/" \
  "$@" \
  "$corpus" "$seeds" >"$log" 2>&1 || status=$?

grep -E '^(stat::|Done|INFO: Running with|==[0-9]+==ERROR|SUMMARY)' "$log" || true
if [[ $status -ne 0 ]]; then
  echo "fuzz: FAILED (exit $status); see $log and $artifacts/" >&2
  tail -n 60 "$log" >&2
  exit 1
fi
echo "fuzz: no crash, leak or timeout in ${seconds}s"
