// FuseRowPasses: a reduction over a row whose term the row's store also computes.
//
//   acc1 = 0                                 acc1 = 0
//   for j' < D                               for j' < D
//     acc1 += exp(x[i, j'] - acc0)     =>      y[i, j'] = exp(x[i, j'] - acc0)
//   for j < D                                  acc1 += y[i, j']
//     y[i, j] = exp(x[i, j] - acc0) / acc1   for j < D
//                                              y[i, j] = y[i, j] / acc1
//
// The term is computed once and written to the output row while it is reduced; the last pass
// finishes the row in place, reading the row it wrote (from cache) instead of the input. Fused
// softmax then reads x twice (max, then exp-and-sum) and evaluates exp once per element.
// Legal when the output is stored in the compute type (storing the term is then exact), the
// store's index is the loop nest's own variables, and nothing between the two loops touches
// the output.
#pragma once

#include "compiler/loops/LoopIR.h"

namespace texc::loops {

// Rewrites every such pair of loops in `p`; returns how many it rewrote.
int fuseRowPasses(LoopProgram& p);

}  // namespace texc::loops
