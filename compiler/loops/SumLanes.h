// SumLanes: the order in which each sum adds up its terms, chosen by texc, not by LLVM, and the
// same on every CPU.
//
// The spec lets an optimisation reorder a reduction (5.5), and LLVM would, given `reassoc`: its
// loop vectorizer keeps partial sums. But how many, and whether a short loop is widened at all,
// follow cost models that see the rest of the kernel, so the same sum added up in its own kernel
// and fused into its reader came out in other last bits (random program 170191: 11 terms of
// exp(x - m)); and the vectorizer's partial sums follow the vector width, so AVX2 and AVX-512
// gave other bits too. This pass fixes the order instead, from the loop alone: an innermost loop
// that adds up a sum or product along its variable keeps `sumLanes` partial results, lane l
// taking terms l, l + sumLanes, l + 2 sumLanes, ... of the first sumLanes * n, which the lanes
// then give up in a fixed order (the backend's "lane groups", below), and adds the rest in order.
// No update carries `reassoc`: the backend keeps the lanes in an array that the loop updates
// element by element, so however LLVM widens or unrolls it, every lane adds its terms in order.
// Every other sum and product is added term by term, as written. Max and min are exact in any
// order and keep no lanes.
//
// A loop keeps lanes when all of these hold:
//   * it holds no loop, is not marked scalar, and updates a sum or product;
//   * no value in it reads an accumulator that it sums (the lanes hold the running value);
//   * it is marked `vector`, or reads and writes memory in order along its variable (every access
//     that uses it does so in its last dimension only, at step 1): a row sum, not a column sum;
//   * it has at least G terms (pairs for a loop over bf16 pairs: a lane adds a pair's even term,
//     then its odd one), G = 16 for f32 and 8 for f64 (one AVX-512 vector) on every target.
// The lanes are kInterleaveVectors groups of G when the loop has that many terms, one group when
// it has fewer. Their end is fixed too: the groups are added lane by lane, in order, then the G
// lanes of the result in a halving tree (lane j plus lane j + G/2, and so on down to one).
// Printed `sum lanes N` on the loop (--emit loops); the verifier checks the rule again.
#pragma once

#include <string>
#include <vector>

#include "compiler/loops/LoopIR.h"

namespace texc::loops {

// The lanes of one group for a kernel computing in `dtype` (f32 or f64): G above, the same on
// every target.
int64_t sumLaneGroup(DType dtype);

// Whether innermost loop `l` meets the rule's first three conditions; if not and `why` is given,
// the first it fails.
bool canKeepSumLanes(const Loop& l, std::string* why = nullptr);

// The lanes the rule gives `l` in a kernel computing in `dtype` (f32 or f64); 0 when it keeps
// none.
int64_t sumLanesFor(const Loop& l, DType dtype);

// Sets `sumLanes` on every loop of `p` that the rule gives lanes. Returns the number of loops.
// With `decisions`, appends a line per innermost loop that adds up a sum or product: its lanes
// (`k0_y, j < 4096, acc1 (sum): its first 4096 terms in 64 lanes, the other 0 in order`), or
// that it adds in order and why; a line repeated (a row pass of pipelined rows) once.
int pinSumLanes(LoopProgram& p, std::vector<std::string>* decisions = nullptr);

}  // namespace texc::loops
