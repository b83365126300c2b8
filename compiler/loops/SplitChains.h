// SplitChains: a vector loop whose body is one long chain of dependent arithmetic per element
// runs in blocks, each block as two or three loops that each do one stretch of the chain.
//
// A precise tanh is some 60 cycles of dependent latency, GELU around it 80. Interleaving
// (InterleaveLoops.h) puts 4 such chains side by side, but the core still overlaps an iteration
// with the next only as far as its schedulers reach (about 64 waiting vector operations on a
// Zen 3), and a GELU iteration of 4 vectors holds some 160: the loop runs at its chain's
// latency, 19 cycles per 8 floats where the multiply pipes need 9. Cutting the chain in two
// halves the latency each stretch waits on and halves the operations per element each stretch
// holds in the schedulers, so twice as many elements are in flight; in three, three times, until
// the pipes are the limit. The values that cross a cut (for GELU, 2 at each of its 2 cuts) go
// through arrays of one block in L1, stored by one loop and loaded by the next; the loads of the
// inputs are repeated by the loop that needs them instead.
// Measured on a Zen 3 (AVX2) with a C++ model of texc's GELU over 32 K floats in L2: 0.75 ns an
// element in one loop, 0.59 in two stretches and 0.53 in three; texc's own loop, 0.73 -> 0.55.
//
// The backend (codegen-llvm) makes the cut (compiler/backend/llvm/SplitPhases.h): it emits the
// body once per phase, gives each operation a start time from a latency table, and cuts near each
// k/N of the longest chain where the fewest values cross; everything is computed from the same
// operands in the same order, so the results are the same bits as one loop's.
//
// A loop is split when all of these hold:
//   * the target has 16 vector registers (AVX2 and older): with AVX-512's 32, 4 interleaved
//     chains keep their constants in registers and the loop runs near its pipes' throughput
//     already; llvm-mca puts GELU split in 3 at 84.7 cycles per 64 floats against 82.7 in one
//     loop for skylake-avx512 (94.9 against 91.4 for znver4), and on a Zen 4 (AVX-512, 1
//     thread) GELU in 3 phases ran level in cache and 11 % slower on 2^24 floats (7.91 against
//     7.13 ms; docs/performance.md);
//   * it is marked `vector` and innermost, outside any tile (a parallel one is split within each
//     thread's chunk);
//   * its body is stores only (no reduction, guard or loop), and calls transcendental functions,
//     all of them exp, log, tanh, sin or cos: the ones measured faster in phases. On the Zen 3,
//     AVX2, 1 thread, 128 K floats (32 rows) in cache, medians of 4-5 alternations (ms, one
//     loop -> phases):
//     GELU (tanh) 0.0946 -> 0.0722, log(|x| + 1) 0.0969 -> 0.0782, sin(x) x + 1 0.088 -> 0.068,
//     exp(x^2/2 - x) x + 1 0.069 -> 0.057. Not split: GELU by erf 0.149 -> 0.181 and
//     sigmoid(x)(1 - sigmoid(x)) 0.069 -> 0.084 (wide bodies: two polynomials or two sigmoids
//     side by side, whose crossing values cost more than the latency they hide), x sigmoid(x)
//     0.0648 -> 0.0628 and pow 0.65 -> 0.64 (no gain worth the arrays);
//   * no tensor is both stored and loaded in it (each phase reads or writes a block of elements
//     before the next phase touches them);
//   * its estimated chain (the latency of the longest path through a store's value) is at least
//     kMinSplitChain cycles, and its extent at least one block.
// Two phases, or three where the estimated chain is at least kThreePhaseChain cycles. Blocks are
// kPhaseBlock iterations (256 elements, or 256 bf16 pairs): arrays of 1 KiB per crossing value.
// Printed `in N phases of B` on the loop (--emit loops).
#pragma once

#include <cstdint>

#include "compiler/loops/LoopIR.h"

namespace texc::loops {

inline constexpr int64_t kPhaseBlock = 256;
inline constexpr int kMinSplitChain = 60;
inline constexpr int kThreePhaseChain = 90;
inline constexpr int kMaxSplitRegisters = 16;

// The estimated latency in cycles of the longest chain of dependent operations in `e` (a
// precise transcendental counts as its whole chain).
int chainLatency(const Expr& e);

// Sets `phases` and `phaseBlock` on the loops of `p` the rule above picks, for a target with
// `vectorRegisters` vector registers. Returns the number of loops marked.
// `block` is the block in iterations (tests use short ones).
int splitChains(LoopProgram& p, int vectorRegisters, int64_t block = kPhaseBlock);

}  // namespace texc::loops
