// The phases of a split loop (split-chains, loops/SplitChains.h) in LLVM IR.
//
// Code generation emits one block of a split loop as N copies of the same loop, one after the
// other, each body a single basic block emitted by the same code, so that the copies hold the
// same instructions in the same order. splitPhases then gives every instruction a start time
// from a latency table (the longest chain of latencies from the iteration's start) and a phase:
// N - 1 cuts, cut k at the start time within a sixth of a phase's length of k/N of the longest
// chain that leaves the fewest values to carry (ties: the nearest to k/N); phase p takes the
// instructions that start between cuts p and p + 1. Copy p keeps phase p's instructions; a value
// that a later phase uses is stored by copy p into an array of one block (an alloca in the
// function's entry, indexed by the iteration's offset in the block) and loaded by the later copy
// in place of its own instance. Not carried but repeated by the copy that uses them: loads of the
// kernel's buffers with their addresses and the integer operations and casts on them, and
// operations of latency 1 (comparisons, selects, logic) whose operands that copy has. Stores stay
// in the copy of their phase; whatever a copy no longer needs is deleted. Every value is computed
// by the same instructions from the same operands: the same bits, provided that the body reads
// no memory it writes (split-chains' rule), since a phase may repeat a load after an earlier
// phase's stores.
#pragma once

#include <cstdint>
#include <vector>

namespace llvm {
class BasicBlock;
class Function;
class PHINode;
class Value;
}  // namespace llvm

namespace texc {

struct PhaseCopy {
  llvm::BasicBlock* body = nullptr;  // the copy's loop body: one block ending in the latch
  llvm::PHINode* iv = nullptr;       // its induction variable (i64, from blockStart up)
};

// Splits `copies` (N >= 2, in order) as above, for iterations blockStart .. blockStart + block - 1.
// Returns false, changing nothing, when the copies are not alike or a body does what the split
// cannot move (a call with side effects, a phi); the caller then keeps one copy whole.
bool splitPhases(llvm::Function& fn, const std::vector<PhaseCopy>& copies, llvm::Value* blockStart, int64_t block);

// Deletes every store of `body` and what only they used: a copy that keeps no phase.
void emptyLoopBody(llvm::BasicBlock& body, llvm::PHINode* iv);

}  // namespace texc
