// PipelineRowStores: a row kernel whose last pass only streams the finished row out (softmax's
// normalisation) stores row i - 1 inside row i's heaviest pass, so that the stores overlap the
// arithmetic instead of following it.
//
//   for i < R parallel                     for b < R/B parallel
//     <row i's passes>                         <row B*b's passes>; prev = acc
//     for j < W vector            =>           for r < B - 1
//       P: s[j] = f(x[i, j]); acc += s[j]        <row B*b+r+1's passes, P with
//     for j' < W vector                             stream y[B*b+r, j] = g(s[r%2, j], prev)>; prev = acc
//       stream y[i, j'] = g(s[j'], acc)          stream y[B*b+B-1, j] = g(s[(B-1)%2, j], prev)
//
// Non-temporal stores go to memory at its write rate whatever the core does: a row's 16 KB
// burst after its exponentials leaves the arithmetic idle, spread over the next row's
// exponentials it runs beside them. The row's staged copy (`s`, the local buffer fuse-row-passes
// made) gets two halves, the row being computed writing one while the previous row's stores
// read the other, and the accumulators the stores read are copied once a row is done (`prev`).
// Rows go in blocks of B (at least 4, the blocks at least 64: the parallel loop), each block a
// pipeline of its own with one unoverlapped row at its end. Legal when the kernel is one
// parallel row loop whose last statement is such a store loop: one streaming store per element,
// reading the row's staged buffers (written only by the pass before, P: a vector loop of the same
// extent with no nested loops), accumulators and buffers the row does not write.
#pragma once

#include "compiler/loops/LoopIR.h"

namespace texc::loops {

// Pipelines every such kernel of `p` (cpu target, after stream-stores); returns how many.
int pipelineRowStores(LoopProgram& p);

}  // namespace texc::loops
