// fuse-pool-into-gemm (CUDA target): a max or min pool over a tiled contraction's result runs in
// the contraction's epilogue, so that the result is never stored (docs/cuda.md, "The pool in the
// tile's epilogue"). After implicit-gemm, conv + scale/bias + 2x2 max pool is
//
//   kernel P: for n { for k { for yx {
//               acc = 0; for crs { .. }; sb[n, k, yx / 56, yx % 56] = acc * scale[k] + bias[k] } } }
//   kernel C: for n { for k { for y { for x {
//               m = -inf; for dy { for dx { m = max(m, sb[n, k, 2 * y + dy, 2 * x + dx]) } }
//               pool[n, k, y, x] = m } } } }
//
// and becomes one kernel, the pool's loops outside (y and x merged into one pixel loop, the
// output channels just outside it) and the window's loops one loop w inside, around P's body:
//
//   for n { for k { for yx2 < 784 {
//     m = -inf
//     for w < 4 { acc = 0; for crs { .. at y = 2 * (yx2 / 28) + w / 2, x = 2 * (yx2 % 28) + w % 2 .. }
//                 m = max(m, acc * scale[k] + bias[k]) }
//     pool[n, k, yx2 / 28, yx2 % 28] = m } } }
//
// which map-gpu's tiled contraction takes with (yx2, w) as its columns (GpuLegality.h): a window's
// elements are neighbouring lanes of a warp, combined by shuffles after the k loop.
//
// When: C is the kernel after P; P is a tiled contraction as it stands whose one store writes T,
// a temporary of the compute type that no other kernel touches; C reads T only in one max or min
// window nest (its innermost update `m = max(m, T[..])`, nothing else inside); every loop of C
// indexes C's store directly; the windows do not overlap (every element of T is read at most
// once, so nothing is computed twice: each index of T is a sum of C's variables whose
// coefficients make it one-to-one); the window has 2, 4 or 8 elements; and the tiled contraction
// takes the result. Max and min give the same value in any order, so the result is P's stored
// values pooled, bit for bit.
#pragma once

#include <string>
#include <vector>

#include "compiler/loops/LoopIR.h"

namespace texc::loops::gpu {

struct PoolFusion {
  std::string producer;  // T
  std::string consumer;  // the pool's result
  std::string columns;   // "yx x w, 4 max per window"
};

// Fuses every such pair of kernels of `p`; returns what it fused.
std::vector<PoolFusion> fusePoolsIntoGemms(LoopProgram& p);

}  // namespace texc::loops::gpu
