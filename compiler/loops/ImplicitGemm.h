// Convolution read as a matrix product (implicit GEMM), in both backends: the tile pass's
// packed CPU nest and the CUDA target's `implicit-gemm` pass match the same nest here.
//
//   for n { for k { for y { for x {
//     acc = 0; for c { for r { for s { [if padding] acc += W[k, c, r, s] * I[n, c, y + r - 1, x + s - 1] } } }
//     out[n, k, y, x] = f(acc) } } } }
//
// is a sum over one flattened variable crs (c = crs / (R*S), r = crs / S % R, s = crs % S) of a
// row operand that reads the rows k (the weights) and a column operand that reads the columns
// x (the input, with the padding guard over crs and the columns); y and x may merge into one
// pixel variable yx (y = yx / W, x = yx % W) where the store allows it.
#pragma once

#include <vector>

#include "compiler/loops/Contraction.h"
#include "compiler/loops/LoopIR.h"

namespace texc::loops {

struct ImplicitGemm {
  Contraction c;                     // i: the rows, j: the columns, k: the flattened reduction
  std::vector<Loop*> chain;          // the perfectly nested output loops, outermost first
  std::vector<GuardCond> padding;    // over the flattened variable and the columns
};

// Whether kernel `k` is one such nest; fills `g` (the operands, padding and store rewritten over
// the flattened variable, which is added to k.varNames). `g.chain` still holds every output loop.
bool matchImplicitGemm(const LoopProgram& p, Kernel& k, ImplicitGemm& g);

// When the pixels of an image row may merge into one column variable.
enum class PixelMerge {
  // Where the store allows, unless the input is contiguous in x but not in the merged pixel
  // (a valid convolution: the CPU reads its rows with vector loads).
  KeepContiguousInput,
  // Wherever the store and the column operand allow it (the GPU gathers its operands anyway).
  WhereTheStoreAllows,
};

// Merges the column loop with the output loop just outside it (y, x -> yx = y * W + x), when
// `rule` and the store allow: W is often not a multiple of the tile's columns (56, 28), and the
// tail of every image row would waste a part of a tile. Rewrites the operands, the padding and
// the store; the two loops leave `g.chain` (the pixel variable is added to k.varNames).
void mergeRowIntoColumns(const LoopProgram& p, Kernel& k, ImplicitGemm& g, PixelMerge rule);

}  // namespace texc::loops
