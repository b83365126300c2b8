// SumLanes: the order in which each sum adds up its terms, chosen by texc, not by LLVM.
//
// The spec lets an optimisation reorder a reduction (5.5), and LLVM would, given `reassoc`: its
// loop vectorizer keeps partial sums. But how many, and whether a short loop is widened at all,
// follow cost models that see the rest of the kernel, so the same sum added up in its own kernel
// and fused into its reader came out in other last bits (random program 170191: 11 terms of
// exp(x - m)). This pass fixes the order instead, from the loop and the target alone: an innermost
// loop that adds up a sum or product along its variable keeps `sumLanes` partial results, lane
// l taking terms l, l + sumLanes, l + 2 sumLanes, ... of the first sumLanes * n, and then adds the
// rest in order. The backend widens that first part to exactly those lanes
// (llvm.loop.vectorize.width W, interleave.count sumLanes / W) and lets only its updates
// reassociate; every other sum and product is added term by term, as written. Max and min are
// exact in any order and keep no lanes.
//
// A loop keeps lanes when all of these hold:
//   * it holds no loop, is not marked scalar, and updates a sum or product;
//   * it is marked `vector`, or reads and writes memory in order along its variable (every access
//     that uses it does so in its last dimension only, at step 1): a row sum, not a column sum;
//   * it has at least W terms (pairs for a loop over bf16 pairs: a lane adds a pair's even term,
//     then its odd one), W the target's vector of the kernel's type (8 f32 with AVX2, 16 with
//     AVX-512; f64 half as many).
// The lanes are kInterleaveVectors vectors when the loop has that many terms, one vector when it
// has fewer. Printed `sum lanes N` on the loop (--emit loops); the verifier checks the rule again.
#pragma once

#include <string>
#include <vector>

#include "compiler/loops/LoopIR.h"

namespace texc::loops {

// The lanes of one vector of the target for a kernel computing in `dtype` (f32 or f64), with
// `vectorFloats` f32 lanes per vector: W above.
int64_t sumLaneWidth(DType dtype, int vectorFloats);

// Whether innermost loop `l` meets the rule's first two conditions; if not and `why` is given,
// the first it fails.
bool canKeepSumLanes(const Loop& l, std::string* why = nullptr);

// The lanes the rule gives `l` in a kernel computing in `dtype` (f32 or f64), for a target with
// `vectorFloats` f32 lanes per vector; 0 when it keeps none.
int64_t sumLanesFor(const Loop& l, DType dtype, int vectorFloats);

// Sets `sumLanes` on every loop of `p` that the rule gives lanes. Returns the number of loops.
// With `decisions`, appends a line per innermost loop that adds up a sum or product: its lanes
// (`k0_y, j < 4096, acc1 (sum): its first 4096 terms in 64 lanes, the other 0 in order`), or
// that it adds in order and why; a line repeated (a row pass of pipelined rows) once.
int pinSumLanes(LoopProgram& p, int vectorFloats, std::vector<std::string>* decisions = nullptr);

}  // namespace texc::loops
