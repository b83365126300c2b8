#!/usr/bin/env bash
# The float64 reference interpreter's own speed, on the bench's matmul 1024 and GELU 2^24
# (build/refbench, which scripts/build.sh builds): the best of REPEAT evaluations (default 3),
# inputs generated before the clock starts.
#   matmul: GFLOP/s = 2*M*N*K / time
#   GELU:   GB/s = 4*(3*N*D + D) / time, the bytes bench/run.py counts for its f32 rows, so the
#           figure reads against the bench table (the reference itself reads and writes float64,
#           twice those bytes, and also stores the intermediates h and g)
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=${REPEAT:-3}
refbench=build/refbench
[ -x "$refbench" ] || { echo "build/refbench is missing: run scripts/build.sh" >&2; exit 1; }

# The minimum wall time, and the CPU time of that kind of run, from refbench's line.
secs() { sed -n 's/.*reference min \([0-9.]*\) s.*CPU min \([0-9.]*\) s.*/\1 \2/p'; }

read -r wall cpu < <("$refbench" bench/workloads/matmul.tex -D M=1024 -D N=1024 -D K=1024 --repeat "$repeat" | secs)
awk -v w="$wall" -v c="$cpu" 'BEGIN { f = 2 * 1024^3; printf "matmul 1024:    %.3f s, %.2f GFLOP/s (CPU time %.3f s, %.2f GFLOP/s)\n", w, f / w / 1e9, c, f / c / 1e9 }'

read -r wall cpu < <("$refbench" bench/workloads/gelu.tex -D N=4096 -D D=4096 --repeat "$repeat" | secs)
awk -v w="$wall" -v c="$cpu" 'BEGIN { n = 4096 * 4096; b = 4 * (3 * n + 4096); printf "GELU 4096x4096: %.3f s, %.2f GB/s, %.0f M elements/s (CPU time %.3f s, %.2f GB/s)\n", w, b / w / 1e9, n / w / 1e6, c, b / c / 1e9 }'
