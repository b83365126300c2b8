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
// Only a chain of single-statement loops moves (nothing hoisted between them). When the longer
// loop is the innermost one ([1, N] elementwise), which the vectorizer widens, the unit loops go
// instead (their variables become 0) and it is both the parallel and the vector loop, as a
// rank-1 kernel's only loop is:
//
//   for n < 1 parallel                for j < N parallel vector
//     for j < N vector         =>       y[0, j] = x[0, j] * 2
//       y[n, j] = x[n, j] * 2
#pragma once

#include "compiler/loops/LoopIR.h"

namespace texc::loops {

// Rewrites every such kernel of `p`; returns how many it rewrote.
int sinkUnitLoops(LoopProgram& p);

}  // namespace texc::loops
