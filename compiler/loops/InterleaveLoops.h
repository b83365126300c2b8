// InterleaveLoops: vector loops whose bodies are long chains of dependent arithmetic keep several
// vectors in flight per iteration.
//
// A precise tanh or exp is some 25 dependent vector operations, a latency of 100 cycles and more
// per element group. The core overlaps one loop iteration with the next only as far as its
// scheduler reaches, and with 60 or so vector operations per iteration that is about one
// iteration: the loop runs at the chain's latency, not at the pipes' throughput. LLVM's
// vectorizer interleaves small loop bodies on its own, but not long ones. Interleaving
// (llvm.loop.interleave.count) puts the chains of several vectors side by side in one iteration,
// so the scheduler always holds independent work.
//
// A loop is interleaved when all of these hold:
//   * it is marked `vector` and holds no loop (the loop LLVM widens), outside any tile;
//   * its body calls a transcendental function (exp, log, tanh, sigmoid, erf, sin, cos, pow);
//   * it runs at least two interleaved iterations (extent >= 2 * kInterleaveVectors * the
//     target's f32 lanes), so that the scalar remainder stays short.
// The count is kInterleaveVectors on every target: measured on a Zen 4 host, GELU in cache ran
// 1.19x faster with 4 vectors than with LLVM's 1 as 16-float code and 1.29x as 8-float code
// (where 2 gave 1.15x); docs/performance.md has the figures.
#pragma once

#include "compiler/loops/LoopIR.h"

namespace texc::loops {

inline constexpr int kInterleaveVectors = 4;

// Sets `interleave` on the loops of `p` the rule above picks, for a target with `vectorFloats`
// f32 lanes per vector. Returns the number of loops marked.
int interleaveVectorLoops(LoopProgram& p, int vectorFloats);

}  // namespace texc::loops
