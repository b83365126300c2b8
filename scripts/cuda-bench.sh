#!/usr/bin/env bash
# cuda-bench.sh — on a machine with an NVIDIA GPU: build texc, run the CUDA tests, build the
# vendor baselines (bench/cuda/peers.cu: cuBLAS, cuDNN) and print one table comparing texc's
# generated kernels with them. Under 5 minutes on an H100/H200 (docs/cuda.md).
#
#   scripts/cuda-bench.sh                 everything
#   CUDA_BENCH_SKIP_TESTS=1 scripts/...   skip the ctest step
#   BUILD_DIR=build-cuda scripts/...      another build tree (default build)
#   TEXC=path/to/texc scripts/...         a texc built elsewhere: no build, no ctest step
#
# Rows: fused GELU over 2^26 floats as a fraction of device-to-device copy bandwidth; SGEMM 4096
# against cuBLAS, in fp32 and with TF32 tensor cores (texc --math=fast, cuBLAS TF32 math); conv 3x3 + scale/bias + 2x2 max pool (N=32, C=K=64, 56x56) against cuDNN conv
# + pool, and against texc with the pool in a kernel of its own (--disable-pass=fuse-pool-into-gemm); a 128x4096x4096
# product split over its reduction (split-k) against texc without the split; row softmax 4096x4096 against cuDNN; attention N=4096 d=64 (causal and not, online-tile)
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
if [[ -n "${TEXC:-}" ]]; then
  texc=$(realpath "$TEXC")
  [[ -x "$texc" ]] || die "TEXC=$TEXC is not an executable"
  echo "cuda-bench: using $texc (no build, no ctest step)" >&2
  CUDA_BENCH_SKIP_TESTS=1
  mkdir -p "$build_dir"
else
  echo "cuda-bench: building texc ($build_dir)" >&2
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null || die "cmake configure failed (run scripts/setup.sh first?)"
  cmake --build "$build_dir" -j "$(nproc)" --target texc test_cuda >/dev/null || die "build failed: cmake --build $build_dir --target texc test_cuda"
  texc="$root/$build_dir/texc"
fi

if [[ -z "${CUDA_BENCH_SKIP_TESTS:-}" ]]; then
  echo "cuda-bench: ctest -L cuda" >&2
  ctest --test-dir "$build_dir" -L cuda --output-on-failure -j 4 >&2 || die "CUDA tests failed (see above)"
fi

# cuDNN's headers come with the toolkit on some installs and only in the nvidia-cudnn Python wheel on
# others; where neither builds, the same four figures come from PyTorch (bench/cuda/peers.py).
echo "cuda-bench: building the cuBLAS/cuDNN peers" >&2
peers="$root/$build_dir/cuda-peers"
cudnn_flags=()
if [[ ! -e "$cuda_home/include/cudnn.h" ]]; then
  wheel=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__))' 2>/dev/null || true)
  [[ -n "$wheel" && -e "$wheel/include/cudnn.h" ]] && cudnn_flags=(-I"$wheel/include" -L"$wheel/lib" -Xlinker -rpath="$wheel/lib")
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if "$cuda_home/bin/nvcc" -O3 -arch="$arch" bench/cuda/peers.cu "${cudnn_flags[@]}" -lcublas -lcudnn -o "$peers" 2>"$tmp/peers-build.txt"; then
  echo "cuda-bench: running the peers (cuBLAS/cuDNN)" >&2
  "$peers" >"$tmp/peers.txt" || die "bench/cuda/peers.cu failed: $(cat "$tmp/peers.txt")"
  peer_source="cuBLAS/cuDNN called directly"
else
  echo "cuda-bench: nvcc could not build bench/cuda/peers.cu ($(head -c 300 "$tmp/peers-build.txt")); using PyTorch" >&2
  python3 bench/cuda/peers.py >"$tmp/peers.txt" || die "neither bench/cuda/peers.cu nor bench/cuda/peers.py ran (cuBLAS/cuDNN or PyTorch is needed)"
  peer_source="cuBLAS/cuDNN through PyTorch"
fi
cat "$tmp/peers.txt" >&2
peer() { awk -v k="$1" -v f="${2:-2}" '$1 == k { print $f }' "$tmp/peers.txt"; }

# A workload that fails is named and counted, and the others still run: the script exits 1 at the
# end, and the table shows n/a for what did not run.
# (texc_ms runs in a command substitution's subshell, so failures are counted in a file.)
fail() { echo "cuda-bench: FAILED: $*" >&2; echo "$*" >>"$tmp/failures"; }

# texc's kernel time: the median that `texc run --repeat` prints (GPU events around the kernels).
texc_ms() {
  local name=$1; shift
  echo "cuda-bench: texc $name" >&2
  if "$texc" run "$@" --target cuda --random 1 --repeat "$repeat" --output-dir "$tmp/out-$name" 2>"$tmp/$name.err" >/dev/null; then
    sed -n 's/^time: median \([0-9.]*\) ms.*/\1/p' "$tmp/$name.err"
  else
    fail "texc run $* --target cuda: $(tail -3 "$tmp/$name.err")"
  fi
}
# Each workload's kernels checked against the float64 reference first (--check, one run), at the
# benchmark's size where the reference takes seconds and at a smaller one where it would take
# minutes (SGEMM 4096, conv at N=32); attention at N = 4096, d = 64, causal and not: the
# online-tile kernel and the materialized program (--disable-pass=online-softmax: four kernels,
# the N x N scores stored).
texc_check() {
  echo "cuda-bench: texc $1 --check" >&2
  "$texc" run "${@:2}" --target cuda --random 1 --check --output-dir "$tmp/check-$1" >"$tmp/$1.check" 2>&1 \
    || fail "texc run ${*:2} --target cuda --check: $(tail -3 "$tmp/$1.check")"
}
texc_check gelu bench/cuda/gelu.tex
texc_check sgemm examples/matmul.tex -D M=1024 -D K=1024 -D N=1024
texc_check tf32gemm examples/matmul.tex -D M=1024 -D K=1024 -D N=1024 --math fast
texc_check bf16gemm bench/workloads/matmul_bf16.tex -D M=1024 -D K=1024 -D N=1024
texc_check convpool examples/conv_pool.tex -D N=2 -D C=64 -D K=64 -D H=56 -D W=56
texc_check convapart examples/conv_pool.tex -D N=2 -D C=64 -D K=64 -D H=56 -D W=56 --disable-pass=fuse-pool-into-gemm
texc_check splitk examples/matmul.tex -D M=64 -D K=2048 -D N=1024
texc_check softmax examples/softmax.tex -D R=4096 -D D=4096
texc_check layernorm examples/layernorm.tex -D R=4096 -D D=4096
texc_check attn examples/attention.tex -D N=4096
texc_check attnfull bench/workloads/attention_full.tex -D N=4096
texc_check attnmat examples/attention.tex -D N=4096 --disable-pass=online-softmax

gelu_ms=$(texc_ms gelu bench/cuda/gelu.tex)
sgemm_ms=$(texc_ms sgemm examples/matmul.tex -D M=4096 -D K=4096 -D N=4096)
tf32gemm_ms=$(texc_ms tf32gemm examples/matmul.tex -D M=4096 -D K=4096 -D N=4096 --math fast)
bf16gemm_ms=$(texc_ms bf16gemm bench/workloads/matmul_bf16.tex -D M=4096 -D K=4096 -D N=4096)
conv_ms=$(texc_ms convpool examples/conv_pool.tex -D N=32 -D C=64 -D K=64 -D H=56 -D W=56)
conv_apart_ms=$(texc_ms convapart examples/conv_pool.tex -D N=32 -D C=64 -D K=64 -D H=56 -D W=56 --disable-pass=fuse-pool-into-gemm)
splitk_ms=$(texc_ms splitk examples/matmul.tex -D M=128 -D K=4096 -D N=4096)
unsplit_ms=$(texc_ms unsplit examples/matmul.tex -D M=128 -D K=4096 -D N=4096 --disable-pass=split-k)
softmax_ms=$(texc_ms softmax examples/softmax.tex -D R=4096 -D D=4096)
layernorm_ms=$(texc_ms layernorm examples/layernorm.tex -D R=4096 -D D=4096)
attn_ms=$(texc_ms attn examples/attention.tex -D N=4096)
attn_whole_ms=$(texc_ms attnwhole examples/attention.tex -D N=4096 --disable-pass=split-keys)
attn_mat_ms=$(texc_ms attnmat examples/attention.tex -D N=4096 --disable-pass=online-softmax)
attn_full_ms=$(texc_ms attnfull bench/workloads/attention_full.tex -D N=4096)
attn_full_mat_ms=$(texc_ms attnfullmat bench/workloads/attention_full.tex -D N=4096 --disable-pass=online-softmax)

copy_gbs=$(peer copy_gbs)
cublas_ms=$(peer sgemm_ms)
cublas_tf32_ms=$(peer tf32gemm_ms)
cublas_bf16_ms=$(peer bf16gemm_ms)
cudnn_conv_ms=$(peer convpool_ms)
cudnn_softmax_ms=$(peer softmax_ms)

# ---- the table ----------------------------------------------------------------------------------
awk -v gpu="$gpu_name" -v gelu="$gelu_ms" -v copy="$copy_gbs" -v sg="$sgemm_ms" -v cb="$cublas_ms" \
    -v bg="$bf16gemm_ms" -v cbb="$cublas_bf16_ms" -v tg="$tf32gemm_ms" -v ctg="$cublas_tf32_ms" \
    -v cv="$conv_ms" -v cd="$cudnn_conv_ms" -v cva="$conv_apart_ms" -v sk="$splitk_ms" -v usk="$unsplit_ms" -v sm="$softmax_ms" -v cs="$cudnn_softmax_ms" -v ln="$layernorm_ms" \
    -v at="$attn_ms" -v aw="$attn_whole_ms" -v am="$attn_mat_ms" -v af="$attn_full_ms" -v afm="$attn_full_mat_ms" \
    -v peers="$peer_source" '
function row(name, t, p, unit, target) {
  if (t == "" || p == "" || t + 0 == 0 || p + 0 == 0) printf "| %-34s | %12s | %12s | %9s | %-7s |\n", name, t == "" ? "n/a" : t, p == "" ? "n/a" : p, "n/a", target
  else if (unit == "ms") printf "| %-34s | %9.3f ms | %9.3f ms | %8.1f%% | %-7s |\n", name, t, p, 100 * p / t, target
  else printf "| %-34s | %7.2f %s | %7.2f %s | %8.1f%% | %-7s |\n", name, t, unit, p, unit, 100 * t / p, target
}
BEGIN {
  n = 2^26; bytes = 2 * 4 * n; flops = 2 * 4096^3
  printf "texc CUDA backend on %s (medians; texc: GPU events around its kernels; peers: %s)\n\n", gpu, peers
  printf "| %-34s | %12s | %12s | %9s | %-7s |\n", "workload", "texc", "peer", "texc/peer", "target"
  printf "|%s|%s|%s|%s|%s|\n", "------------------------------------", "--------------", "--------------", "-----------", "---------"
  row("fused GELU 2^26 vs D2D copy", gelu == "" ? "" : bytes / (gelu * 1e-3) / 1e9, copy, "GB/s", ">= 90%")
  row("SGEMM 4096 fp32 vs cuBLAS", sg == "" ? "" : flops / (sg * 1e-3) / 1e12, cb == "" ? "" : flops / (cb * 1e-3) / 1e12, "TF/s", ">= 80%")
  row("SGEMM 4096 TF32 (--math=fast) vs cuBLAS", tg == "" ? "" : flops / (tg * 1e-3) / 1e12, ctg == "" ? "" : flops / (ctg * 1e-3) / 1e12, "TF/s", "-")
  row("bf16 GEMM 4096 (tensor cores) vs cuBLAS", bg == "" ? "" : flops / (bg * 1e-3) / 1e12, cbb == "" ? "" : flops / (cbb * 1e-3) / 1e12, "TF/s", "-")
  row("conv3x3+bias+maxpool vs cuDNN", cv, cd, "ms", "-")
  row("conv+pool: pool in epilogue vs apart", cv, cva, "ms", "-")
  row("128x4096x4096: split-K vs one kernel", sk, usk, "ms", "-")
  row("softmax 4096x4096 vs cuDNN", sm, cs, "ms", "-")
  rows = 4096 * 4096 * 4 * 2
  row("softmax 4096x4096 vs D2D copy", sm == "" ? "" : rows / (sm * 1e-3) / 1e9, copy, "GB/s", ">= 90%")
  row("layernorm 4096x4096 vs D2D copy", ln == "" ? "" : rows / (ln * 1e-3) / 1e9, copy, "GB/s", ">= 90%")
  row("attention causal 4096 vs materialized", at, am, "ms", "-")
  row("attention causal 4096: split keys vs not", at, aw, "ms", "-")
  row("attention 4096 vs materialized", af, afm, "ms", "-")
  printf "\n(texc/peer: texc speed as a fraction of the peer; conv row: cuDNN runs conv + pool without the scale/bias;\n"
  printf " second conv row: the peer is texc --disable-pass=fuse-pool-into-gemm, the pool in a kernel of its own;\n"
  printf " split-K row: the peer is texc --disable-pass=split-k, 128 tiles of 64x64 for the whole reduction;\n"
  printf " split-keys row: the peer is texc --disable-pass=split-keys, one pass over all keys per row;\n"
  printf " attention rows: the peer is texc --disable-pass=online-softmax, all three checked against the float64 reference)\n"
}'
[[ ! -s "$tmp/failures" ]] || die "$(wc -l <"$tmp/failures") workload(s) failed (see above)"
