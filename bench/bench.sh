#!/usr/bin/env bash
# bench.sh — the one command: install missing peers, build texc in Release, run every workload
# for texc and its peers side by side, and print the tables.
#
#   bench/bench.sh                       full run (under 15 minutes), tables to stdout and
#                                        bench/results/latest.md
#   bench/bench.sh --quick               smaller sizes, under 3 minutes
#   bench/bench.sh --json out.json       also every row as JSON
#   bench/bench.sh --only softmax,gelu   a subset (substrings of workload names)
#   bench/bench.sh --rounds 5            every workload's rows 5 times, interleaved (noisy machines)
#   BENCH_SKIP_SETUP=1 bench/bench.sh    skip the install/build step
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [[ -z "${BENCH_SKIP_SETUP:-}" ]]; then
  "$here/setup.sh"
fi
exec /usr/bin/python3 "$here/run.py" "$@"
