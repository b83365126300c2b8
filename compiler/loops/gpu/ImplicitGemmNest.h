// implicit-gemm (CUDA target): every convolution nest becomes the nest of a matrix product, so
// that map-gpu's tiled contraction takes it (docs/cuda.md, "Convolution as implicit GEMM"):
//
//   for n { for k { for yx {                                  (batch, rows, columns)
//     acc = 0
//     for crs { if padding(crs, yx) { acc += W[k, crs / 9, crs / 3 % 3, crs % 3] * I[n, crs / 9, yx / 56 + crs / 3 % 3 - 1, ..] } }
//     out[n, k, yx / 56, yx % 56] = f(acc) } } }
//
// The reduction loops become one (crs), an image's rows and columns one pixel loop (yx) where
// the store allows, and the loop the weights read (the output channels) goes just outside the
// pixels. The terms and their order are unchanged, so the nest computes what it computed.
#pragma once

#include "compiler/loops/LoopIR.h"

namespace texc::loops::gpu {

// Rewrites every convolution-like kernel of `p` (ImplicitGemm.h) that map-gpu's tiled
// contraction would not take as lowered. Returns how many were rewritten; each says so in its
// `schedule` note.
int rewriteImplicitGemms(LoopProgram& p);

}  // namespace texc::loops::gpu
