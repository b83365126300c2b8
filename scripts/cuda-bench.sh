#!/usr/bin/env bash
# cuda-bench.sh — on a machine with an NVIDIA GPU: build texc, run the CUDA tests, build the
# vendor baselines (bench/cuda/peers.cu: cuBLAS, cuDNN) and print one table comparing texc's
# generated kernels with them. Under 5 minutes on an H100/H200 (docs/cuda.md).
#
#   scripts/cuda-bench.sh                 everything
#   CUDA_BENCH_SKIP_TESTS=1 scripts/...   skip the ctest step
#   BUILD_DIR=build-cuda scripts/...      another build tree (default build)
#
# Rows: fused GELU over 2^26 floats as a fraction of device-to-device copy bandwidth; SGEMM 4096
# against cuBLAS; conv 3x3 + scale/bias + 2x2 max pool (N=32, C=K=64, 56x56) against cuDNN conv
# + pool; row softmax 4096x4096 against cuDNN; attention N=4096 d=64 (causal and not, online-tile)
# against texc's materialized program. Targets: GELU >= 90% of copy, SGEMM >= 80% of cuBLAS.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build_dir=${BUILD_DIR:-build}
cuda_home=${CUDA_HOME:-/usr/local/cuda}
repeat=${CUDA_BENCH_REPEAT:-20}

die() { echo "cuda-bench: $*" >&2; exit 1; }

# ---- what the run needs, checked first so a missing piece is named at once -------------------
[[ -x "$cuda_home/bin/nvcc" ]] || die "nvcc not found in $cuda_home/bin (set CUDA_HOME to the CUDA toolkit)"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi -L >/dev/null 2>&1 || die "nvidia-smi finds no GPU"
  gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.')
else
  ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1' || die "no NVIDIA driver (libcuda.so.1 is not on the loader path): this script needs a GPU"
  gpu_name="(unknown GPU)"
  cc=""
fi
arch="sm_${cc:-90}"
export CUDA_HOME="$cuda_home"
echo "cuda-bench: $gpu_name, $arch, CUDA toolkit $cuda_home" >&2

# ---- build --------------------------------------------------------------------------------------
echo "cuda-bench: building texc ($build_dir)" >&2
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null || die "cmake configure failed (run scripts/setup.sh first?)"
cmake --build "$build_dir" -j "$(nproc)" --target texc test_cuda >/dev/null || die "build failed: cmake --build $build_dir --target texc test_cuda"
texc="$root/$build_dir/texc"

if [[ -z "${CUDA_BENCH_SKIP_TESTS:-}" ]]; then
  echo "cuda-bench: ctest -L cuda" >&2
  ctest --test-dir "$build_dir" -L cuda --output-on-failure -j 4 >&2 || die "CUDA tests failed (see above)"
fi

echo "cuda-bench: building the cuBLAS/cuDNN peers" >&2
peers="$root/$build_dir/cuda-peers"
"$cuda_home/bin/nvcc" -O3 -arch="$arch" bench/cuda/peers.cu -lcublas -lcudnn -o "$peers" \
  || die "nvcc could not build bench/cuda/peers.cu (cuBLAS and cuDNN headers and libraries are needed)"

# ---- measure ------------------------------------------------------------------------------------
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "cuda-bench: running the peers" >&2
"$peers" >"$tmp/peers.txt" || die "bench/cuda/peers.cu failed: $(cat "$tmp/peers.txt")"
peer() { awk -v k="$1" -v f="${2:-2}" '$1 == k { print $f }' "$tmp/peers.txt"; }

# texc's kernel time: the median that `texc run --repeat` prints (GPU events around the kernels).
texc_ms() {
  local name=$1; shift
  echo "cuda-bench: texc $name" >&2
  "$texc" run "$@" --target cuda --random 1 --repeat "$repeat" --output-dir "$tmp/out-$name" 2>"$tmp/$name.err" >/dev/null \
    || die "texc run $* --target cuda failed: $(cat "$tmp/$name.err")"
  sed -n 's/^time: median \([0-9.]*\) ms.*/\1/p' "$tmp/$name.err"
}
gelu_ms=$(texc_ms gelu bench/cuda/gelu.tex)
sgemm_ms=$(texc_ms sgemm examples/matmul.tex -D M=4096 -D K=4096 -D N=4096)
conv_ms=$(texc_ms convpool examples/conv_pool.tex -D N=32 -D C=64 -D K=64 -D H=56 -D W=56)
softmax_ms=$(texc_ms softmax examples/softmax.tex -D R=4096 -D D=4096)
# Attention at N = 4096, d = 64, causal and not: the online-tile kernel against the materialized
# program (--disable-pass=online-softmax: four kernels, the N x N scores stored), each checked
# against the float64 reference first (--check, one run).
attention_check() {
  echo "cuda-bench: texc $1 --check" >&2
  "$texc" run "${@:2}" --target cuda --random 1 --check --output-dir "$tmp/check-$1" >"$tmp/$1.check" 2>&1 \
    || die "texc run ${*:2} --target cuda --check failed: $(tail -3 "$tmp/$1.check")"
}
attention_check attn examples/attention.tex -D N=4096
attention_check attnfull bench/workloads/attention_full.tex -D N=4096
attention_check attnmat examples/attention.tex -D N=4096 --disable-pass=online-softmax
attn_ms=$(texc_ms attn examples/attention.tex -D N=4096)
attn_mat_ms=$(texc_ms attnmat examples/attention.tex -D N=4096 --disable-pass=online-softmax)
attn_full_ms=$(texc_ms attnfull bench/workloads/attention_full.tex -D N=4096)
attn_full_mat_ms=$(texc_ms attnfullmat bench/workloads/attention_full.tex -D N=4096 --disable-pass=online-softmax)

copy_gbs=$(peer copy_gbs)
cublas_ms=$(peer sgemm_ms)
cudnn_conv_ms=$(peer convpool_ms)
cudnn_softmax_ms=$(peer softmax_ms)

# ---- the table ----------------------------------------------------------------------------------
awk -v gpu="$gpu_name" -v gelu="$gelu_ms" -v copy="$copy_gbs" -v sg="$sgemm_ms" -v cb="$cublas_ms" \
    -v cv="$conv_ms" -v cd="$cudnn_conv_ms" -v sm="$softmax_ms" -v cs="$cudnn_softmax_ms" \
    -v at="$attn_ms" -v am="$attn_mat_ms" -v af="$attn_full_ms" -v afm="$attn_full_mat_ms" 'BEGIN {
  n = 2^26; bytes = 2 * 4 * n; flops = 2 * 4096^3
  gelu_gbs = bytes / (gelu * 1e-3) / 1e9
  printf "texc CUDA backend on %s (medians; texc: GPU events around its kernels)\n\n", gpu
  printf "| %-34s | %12s | %12s | %9s | %-7s |\n", "workload", "texc", "peer", "texc/peer", "target"
  printf "|%s|%s|%s|%s|%s|\n", "------------------------------------", "--------------", "--------------", "-----------", "---------"
  printf "| %-34s | %7.1f GB/s | %7.1f GB/s | %8.1f%% | %-7s |\n", "fused GELU 2^26 vs D2D copy", gelu_gbs, copy, 100 * gelu_gbs / copy, ">= 90%"
  printf "| %-34s | %6.2f TF/s | %6.2f TF/s | %8.1f%% | %-7s |\n", "SGEMM 4096 fp32 vs cuBLAS", flops / (sg * 1e-3) / 1e12, flops / (cb * 1e-3) / 1e12, 100 * cb / sg, ">= 80%"
  printf "| %-34s | %9.3f ms | %9.3f ms | %8.1f%% | %-7s |\n", "conv3x3+bias+maxpool vs cuDNN", cv, cd, 100 * cd / cv, "-"
  printf "| %-34s | %9.3f ms | %9.3f ms | %8.1f%% | %-7s |\n", "softmax 4096x4096 vs cuDNN", sm, cs, 100 * cs / sm, "-"
  printf "| %-34s | %9.3f ms | %9.3f ms | %8.1f%% | %-7s |\n", "attention causal 4096 vs materialized", at, am, 100 * am / at, "-"
  printf "| %-34s | %9.3f ms | %9.3f ms | %8.1f%% | %-7s |\n", "attention 4096 vs materialized", af, afm, 100 * afm / af, "-"
  printf "\n(texc/peer: texc speed as a fraction of the peer; conv row: cuDNN runs conv + pool without the scale/bias;\n"
  printf " attention rows: the peer is texc --disable-pass=online-softmax, all three checked against the float64 reference)\n"
}'
