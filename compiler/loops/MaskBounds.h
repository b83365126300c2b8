// The interval analysis that skips whole tiles of a mask: for a condition 0 <= e(i, j) < E that
// is affine in i and j, where over a block of rows i in [i0, i0 + rows) and keys
// j in [j0, j0 + keys) e is largest and where it is smallest (the corners its coefficients' signs
// pick). The block holds a pair passing the condition only if e's largest value there is >= 0 and
// its smallest < E. The CPU's tile-online-softmax guards its key tiles with it, the CUDA
// online-tile kernel its key stages.
#pragma once

#include <cstdint>
#include <optional>

#include "compiler/loops/LoopIR.h"

namespace texc::loops {

// Offsets from (i0, j0) of the two corners.
struct MaskCorners {
  int64_t rowOfLargest = 0, keyOfLargest = 0;
  int64_t rowOfSmallest = 0, keyOfSmallest = 0;
};

// Empty when e is not affine in i and j (a floor division or modulo of them, an overflow).
std::optional<MaskCorners> maskCorners(const GuardCond& c, int i, int j, int64_t rows, int64_t keys);

}  // namespace texc::loops
