// SinkUnitLoops: a kernel whose outermost loops have extent 1 (a batch of one image, a
// leading dimension of size 1) would run on one thread, since the runtime shares out only the
// top-level loop. Those loops move just inside the first longer loop, which becomes the
// parallel one:
//
//   for n < 1 parallel                for k < 64 parallel
//     for k < 64               =>       for n < 1
//       for y < 28 ...                    for y < 28 ...
//
// Always legal: a loop of one iteration commutes with the loops it is perfectly nested with.
// Only a chain of single-statement loops moves (nothing hoisted between them), and only when the
// longer loop is not the innermost, vectorised one (moving it outward would leave the store's
// loop of extent 1 for the vectorizer), so [1, N] elementwise kernels stay as they are.
#pragma once

#include "compiler/loops/LoopIR.h"

namespace texc::loops {

// Rewrites every such kernel of `p`; returns how many it rewrote.
int sinkUnitLoops(LoopProgram& p);

}  // namespace texc::loops
