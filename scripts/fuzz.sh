#!/usr/bin/env bash
# Fuzzes the front end (lexer, parser, sema, printers) with libFuzzer under ASan and UBSan.
#
#   scripts/fuzz.sh [SECONDS] [LIBFUZZER_FLAGS...]     (default 60 seconds)
#
# Configures build-fuzz (BUILD_DIR overrides) with clang-19 and TEXC_FUZZ=ON at -O1 -g, builds
# frontend_fuzzer, replays tests/fuzz/regressions/, then fuzzes for SECONDS starting from a seed
# corpus of examples/*.tex and tests/errors/*.tex (copied at run time). The corpus grown so far
# lives in build-fuzz/corpus and is reused by the next run; crashing inputs land in
# build-fuzz/artifacts/. Exits non-zero on any crash, leak, timeout, out-of-memory or
# undefined behaviour.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
if [[ $# -gt 0 ]]; then shift; fi
if ! [[ $seconds =~ ^[0-9]+$ ]] || [[ $seconds -eq 0 ]]; then
  echo "usage: scripts/fuzz.sh [SECONDS] [LIBFUZZER_FLAGS...]" >&2
  exit 2
fi

build_dir=${BUILD_DIR:-build-fuzz}
cxx=${FUZZ_CXX:-clang++-19}
cc=${FUZZ_CC:-clang-19}

cmake -S . -B "$build_dir" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" \
  -DCMAKE_CXX_FLAGS="-fno-sanitize-recover=all" \
  -DTEXC_FUZZ=ON >/dev/null
ninja -C "$build_dir" frontend_fuzzer >"$build_dir/build.log" 2>&1 || {
  cat "$build_dir/build.log" >&2
  echo "fuzz: building frontend_fuzzer failed" >&2
  exit 1
}

fuzzer="$build_dir/tests/fuzz/frontend_fuzzer"
corpus="$build_dir/corpus"
seeds="$build_dir/seeds"
artifacts="$build_dir/artifacts"
log="$build_dir/fuzz.log"
mkdir -p "$corpus" "$artifacts"
rm -rf "$seeds"
mkdir -p "$seeds"
shopt -s nullglob
for f in examples/*.tex tests/errors/*.tex; do
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
