#!/usr/bin/env python3
"""peers.py — the vendor baselines of bench/cuda/peers.cu through PyTorch, for a machine whose
toolkit lacks cuDNN's headers (scripts/cuda-bench.sh falls back to it). Same lines, same sizes:

  copy_gbs <GB/s>          device-to-device copy of 2^26 floats (read + write bytes / time)
  sgemm_ms <ms> <TFLOP/s>  torch.mm 4096^3 fp32 with TF32 off (cuBLAS SGEMM)
  bf16gemm_ms <ms> <TFLOP/s>  torch.mm 4096^3 in bf16 (cuBLAS, f32 accumulation)
  tf32gemm_ms <ms> <TFLOP/s>  torch.mm 4096^3 fp32 with TF32 allowed
  convpool_ms <ms>         conv 3x3 pad 1 (N=32, C=K=64, 56x56) + 2x2 max pool (cuDNN, TF32 off)
  softmax_ms <ms>          softmax over 4096 rows of 4096

Every time is the median of 20 runs after warm-up, measured with CUDA events."""
import sys

try:
    import torch
except ImportError:
    sys.exit("cuda-peers: PyTorch is not installed")

if not torch.cuda.is_available():
    sys.exit("cuda-peers: no CUDA device")
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = True


def median_ms(fn, runs=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    return times[len(times) // 2]


dev = "cuda"
n = 1 << 26
src, dst = torch.full((n,), 0.5, device=dev), torch.empty(n, device=dev)
ms = median_ms(lambda: dst.copy_(src))
print("copy_gbs %.1f" % (2.0 * n * 4 / (ms * 1e-3) / 1e9))

s = 4096
a, b = torch.rand(s, s, device=dev), torch.rand(s, s, device=dev)
c = torch.empty(s, s, device=dev)
ms = median_ms(lambda: torch.mm(a, b, out=c))
print("sgemm_ms %.4f %.2f" % (ms, 2.0 * s ** 3 / (ms * 1e-3) / 1e12))
torch.backends.cuda.matmul.allow_tf32 = True  # the peer of texc --math=fast, then off again
ms = median_ms(lambda: torch.mm(a, b, out=c))
torch.backends.cuda.matmul.allow_tf32 = False
print("tf32gemm_ms %.4f %.2f" % (ms, 2.0 * s ** 3 / (ms * 1e-3) / 1e12))
ah, bh, ch = a.bfloat16(), b.bfloat16(), c.bfloat16()
ms = median_ms(lambda: torch.mm(ah, bh, out=ch))
print("bf16gemm_ms %.4f %.2f" % (ms, 2.0 * s ** 3 / (ms * 1e-3) / 1e12))

x = torch.full((32, 64, 56, 56), 0.5, device=dev)
w = torch.full((64, 64, 3, 3), 0.01, device=dev)
conv = torch.nn.functional.conv2d
pool = torch.nn.functional.max_pool2d
ms = median_ms(lambda: pool(conv(x, w, padding=1), 2))
print("convpool_ms %.4f" % ms)

r = torch.full((4096, 4096), 0.5, device=dev)
ms = median_ms(lambda: torch.softmax(r, dim=1))
print("softmax_ms %.4f" % ms)
