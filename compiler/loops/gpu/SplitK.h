// split-k (CUDA target): a tiled contraction whose output has too few tiles to give every SM a
// block, and whose reduction is long, runs as two kernels (docs/cuda.md, "Split-K"):
//
//   kernel C:          for i { for j { acc = 0; for k < 4096 { acc += A[i, k] * B[k, j] }; C[i, j] = f(acc) } }
//
// becomes
//
//   kernel C_partial:  for kslice < 4 { for i { for j {
//                        acc = 0; for k < 1024 { acc += A[i, 1024 * kslice + k] * B[1024 * kslice + k, j] }
//                        C_partials[kslice, i, j] = acc } } }
//   kernel C:          for i { for j { acc = 0; for kslice < 4 { acc += C_partials[kslice, i, j] }; C[i, j] = f(acc) } }
//
// The first is a batched tiled contraction (the slices are its batch: 4x the blocks), the second
// an elementwise-shaped kernel that adds the slices' sums in order and applies the epilogue.
// C_partials is a temporary of the loop program that no tensor of the graph backs (LoopIR.h,
// BufferKind): the memory plan places it in the arena like the others. The sum's terms are added
// in another order (the spec lets a reduction reassociate; the error bound holds for any order),
// and the same way on every run.
//
// When: map-gpu's tiled contraction takes the kernel as it stands (not a pool in its epilogue,
// one reduction, a sum) and leaves some of o.multiprocessors SMs without a tile even at its
// smallest tiles; the reduction's extent K is at least kMinSplitK and divides into S slices
// (2 <= S <= 16) of at least kMinSliceK terms each. S is the smallest that gives two blocks per SM, else the largest allowed.
#pragma once

#include <string>
#include <vector>

#include "compiler/loops/LoopIR.h"
#include "compiler/loops/gpu/GpuLegality.h"

namespace texc::loops::gpu {

// The fewest terms a slice keeps: 16 k-steps of the tile, so the pipeline's prologue and the
// partial sums' store stay small beside the slice's arithmetic.
inline constexpr int64_t kMinSliceK = 256;
// The shortest reduction worth splitting: a 64x64 tile of 1024 terms is about 4 million FMAs,
// some 16 us of one SM at the fp32 rate, where the sum's kernel costs a launch of a few us.
inline constexpr int64_t kMinSplitK = 1024;

// How many slices to cut a loop of `extent` iterations into, for work that runs `have` units in
// parallel and wants `want`: the smallest S in 2..16 dividing `extent` into slices of at least
// `minSlice` with have * S >= want, else the largest such S; 0 when none is (split-k, split-keys).
int64_t sliceCount(int64_t have, int64_t want, int64_t extent, int64_t minSlice);

// The number of slices for a contraction of `tiles` tiles (at map-gpu's tile sizes) and a
// reduction of K terms on a GPU of `multiprocessors` SMs; 0: no split.
int64_t splitKSlices(int64_t tiles, int64_t K, int64_t multiprocessors);

struct SplitKRewrite {
  std::string kernel;    // the contraction's kernel (now the sum of the slices)
  std::string partials;  // the new temporary
  int64_t slices = 0, sliceK = 0;
  int64_t tilesBefore = 0, blocksAfter = 0;
};

// Splits every such kernel of `p`; returns what it split. Each of the two kernels says why in its
// `schedule` note.
std::vector<SplitKRewrite> splitKs(LoopProgram& p, const GpuMapOptions& o);

}  // namespace texc::loops::gpu
