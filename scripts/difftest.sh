#!/usr/bin/env bash
# Long differential runs: random programs under every pipeline variant against the float64
# reference (docs/testing.md, "Random programs").
#
#   scripts/difftest.sh [COUNT] [JOBS]          (default 10000 programs, 2 jobs)
#
# Environment: SEED (first seed, default 1), TIME_LIMIT (seconds per job, default none),
# SAVE_DIR (failing programs and their shrunk forms, default BUILD_DIR/difftest-failures),
# CPU (compile the CPU variants for this LLVM CPU, which the host must be able to run: haswell
# checks the AVX2 code on an AVX-512 host; default the host),
# BUILD_DIR (default build). Builds texc-difftest, then runs JOBS workers at nice 19 over
# disjoint seed ranges; each worker's log is BUILD_DIR/difftest-JOB.log. Exits 1 when any
# program failed.
set -euo pipefail
cd "$(dirname "$0")/.."

count=${1:-10000}
jobs=${2:-2}
if ! [[ $count =~ ^[0-9]+$ && $jobs =~ ^[0-9]+$ ]] || [[ $count -eq 0 || $jobs -eq 0 ]]; then
  echo "usage: scripts/difftest.sh [COUNT] [JOBS]" >&2
  exit 2
fi
build_dir=${BUILD_DIR:-build}
seed=${SEED:-1}
save_dir=${SAVE_DIR:-$build_dir/difftest-failures}
limit=()
if [[ -n ${TIME_LIMIT:-} ]]; then limit=(--time-limit "$TIME_LIMIT"); fi
if [[ -n ${CPU:-} ]]; then limit+=(--cpu "$CPU"); fi

if [[ ! -f $build_dir/build.ninja ]]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
ninja -C "$build_dir" texc-difftest >/dev/null

per_job=$(((count + jobs - 1) / jobs))
pids=()
for ((j = 0; j < jobs; ++j)); do
  first=$((seed + j * per_job))
  n=$((count - j * per_job < per_job ? count - j * per_job : per_job))
  [[ $n -gt 0 ]] || break
  nice -n 19 "$build_dir/texc-difftest" --seed "$first" --count "$n" --save-failures "$save_dir" "${limit[@]}" \
    >"$build_dir/difftest-$j.log" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
for ((j = 0; j < ${#pids[@]}; ++j)); do
  echo "job $j: $(tail -n 1 "$build_dir/difftest-$j.log")"
done
if [[ $status -ne 0 ]]; then
  echo "difftest: failures; see $build_dir/difftest-*.log and $save_dir/" >&2
fi
exit $status
