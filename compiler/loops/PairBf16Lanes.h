// PairBf16Lanes: innermost loops over bf16 rows read and write two elements per lane.
//
// A bf16 value is the high half of an f32. Widening 16 of them the usual way takes a zero
// extension (a shuffle) and a shift per vector, and narrowing takes a shift, a truncation and a
// merge of halves: shuffles and shifts, which on the cores we measured share two pipes, and
// which in a memory-bound bf16 kernel (layer norm's last pass) are the bottleneck. Read as one
// 32-bit word instead, a pair of neighbours (2k, 2k+1) gives both as f32 with one instruction
// each: `word << 16` is element 2k, `word & 0xFFFF0000` is element 2k+1. The loop then runs over
// pairs, computes its body once for the even and once for the odd element of each pair, and
// stores the rounded pair as one word again (`even >> 16 | odd & 0xFFFF0000`). Every element is
// computed from the same operands as before, so a store gives the same bits; only reductions
// (sums, max) combine in another order, which the language allows (spec 5.5).
//
// A loop is paired when all of these hold:
//   * it is innermost, not parallel, not marked scalar, with an even extent;
//   * its body is stores and reduction updates only;
//   * every store is to a bf16 tensor and walks the loop's variable along its last dimension
//     at step 1 (index `j + c`), and so does every load that depends on the variable;
//   * no value reads the variable itself (a mask `j <= i` would differ between the halves);
//   * a tensor both stored and loaded in the loop is accessed at one index only (each element
//     is read before or after its own store, never a neighbour's);
//   * no update's term reads an accumulator that the loop itself updates.
// Every value of a paired loop is two vectors, the pair's halves, and each carries the extra
// work of its widening and rounding. On a target with 16 vector registers an interleaved loop
// (InterleaveLoops.h) that only stores doubles its count: bf16 GELU 2^24 on a Zen 3 (AVX2),
// 1 thread, ran 22.3 -> 20.0 ms with 8 interleaved vectors of pairs (16 f32 vectors in flight)
// instead of 4, though many of its values then live on the stack; halving the count instead
// (4 f32 vectors, fewer spills) made it 26 ms.
// Loops that also sum (softmax's exponentials) keep the count: sum-lanes runs them in rounds of
// their own, and bf16 softmax measured the same either way (docs/performance.md).
// Loops split into phases (SplitChains.h) keep the count too: the phases put more elements in
// flight than doubling did, and 4 vectors of pairs spill less (bf16 GELU over 128 K elements on
// the Zen 3, in cache: 0.124 ms split with 4, 0.138 split with 8, 0.138 with 8 in one loop).
// Printed `bf16 pairs` on the loop (--emit loops); the verifier checks the rule again.
#pragma once

#include <string>

#include "compiler/loops/LoopIR.h"

namespace texc::loops {

// Whether loop `l` of `p` may run over bf16 pairs; if not and `why` is given, the first rule it
// breaks.
bool canPairBf16Lanes(const LoopProgram& p, const Loop& l, std::string* why = nullptr);

// Marks every loop of `p` that canPairBf16Lanes allows, for a target with `vectorRegisters`
// vector registers. Returns the number of loops marked.
int pairBf16Lanes(LoopProgram& p, int vectorRegisters);

}  // namespace texc::loops
