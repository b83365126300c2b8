// FuseSiblingReductions: reduction loops over the same range, next to each other and independent,
// become one loop.
//
//   acc0 = 0                                    acc0 = 0
//   for c < C                                   acc1 = 0
//     acc0 += exp(x[r, c] - m[r]) * w[c]   =>   for c < C
//   acc1 = 0                                      acc0 += exp(x[r, c] - m[r]) * w[c]
//   for c' < C                                    acc1 += exp(x[r, c] - m[r])
//     acc1 += exp(x[r, c'] - m[r])
//
// Fusion (the graph's `fuse`) puts each reduction a statement reads into its reader as a loop of
// its own: a weighted average `sum(c: p * w) / sum(c: p)` gets two. Merged, the row is read once
// and what the terms share (the exponential) is computed once. Legal when the loops have the
// same extent, hold only reduction updates (no stores, no nested loops, no guards), and neither
// reads an accumulator the other updates (layer norm's variance reads the mean: it stays after
// it); the accumulator starts of the second move up with it.
#pragma once

#include "compiler/loops/LoopIR.h"

namespace texc::loops {

// Merges every such run of loops in `p`; returns the number of loops merged away.
int fuseSiblingReductions(LoopProgram& p);

}  // namespace texc::loops
