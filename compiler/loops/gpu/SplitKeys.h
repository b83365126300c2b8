// split-keys (CUDA target): an online-softmax kernel (attention, a logsumexp) with too few query
// rows to fill the GPU runs its pass over the keys in S slices, each slice's running max, sum and
// unnormalised output row stored as partial results, and a second kernel combines them
// (docs/cuda.md, "Keys split over blocks"; flash-decoding's split of the keys):
//
//   kernel O:         for i { m = -inf; l = 0; ..; for c { O[i, c] = 0 }
//                             for j < 4096 { .. l = l * a + e; for c { O[i, c] = O[i, c] * a + e * V[j, c] }; m = m' }
//                             for c { O[i, c] = O[i, c] / l } }
//
// becomes
//
//   kernel O_keys:    for kslice < 4 { for i { m = -inf; l = 0; ..; for c { O_part[kslice, i, c] = 0 }
//                       for j < 1024 { .. the same at key 1024 * kslice + j, into O_part .. }
//                       O_max[kslice, i] = m; O_sum[kslice, i] = l } }
//   kernel O:         for i { m = max over kslice of O_max[kslice, i]
//                             l = sum over kslice of w(kslice) * O_sum[kslice, i]     w = O_max == -inf ? 0 : exp(O_max - m)
//                             for c { O[i, c] = sum over kslice of w(kslice) * O_part[kslice, i, c] }
//                             for c { O[i, c] = O[i, c] / l } }          (the kernel's own last statements, as they were)
//
// The first kernel is the online-tile kernel with the slices as one more batch loop; the second
// rescales each slice's results to the overall max, as the recurrence rescales at every key. A
// slice that the mask empties has m = -inf, l = 0 and contributes nothing, and the combined
// values are those of the recurrence up to rounding (the sums add in another order).
//
// When: the kernel has the shape lowering gives an online-softmax node (LowerToLoops.cpp,
// runOnline), it computes in f32 or f64 and its output is of the compute type, it has fewer than
// kWantedRows query rows, and its keys divide into S slices (2 <= S <= 16) of at least
// kMinSliceKeys keys; S is the smallest that gives kWantedRows rows times slices, else the largest
// allowed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/loops/LoopIR.h"

namespace texc::loops::gpu {

// Query rows (times slices) that keep a GPU of 132 SMs busy: at 16 lanes per row, 16384 rows are
// 8192 warps, 62 per SM, where online-tile at N = 4096 had 15 (Nsight: 12 % occupancy).
inline constexpr int64_t kWantedRows = 16384;
// The fewest keys a slice keeps: 8 stages of 32, so that loading the row and storing the partial
// results stay small beside the pass over the keys.
inline constexpr int64_t kMinSliceKeys = 256;

// The number of slices for `rows` query rows (batch included) and `keys` keys; 0: no split.
int64_t splitKeysSlices(int64_t rows, int64_t keys);

struct SplitKeysRewrite {
  std::string kernel;
  int64_t slices = 0, sliceKeys = 0, rows = 0;
};

// Splits every such kernel of `p`; returns what it split. Both kernels say why in their
// `schedule` notes.
std::vector<SplitKeysRewrite> splitKeys(LoopProgram& p);

}  // namespace texc::loops::gpu
