// Memory planning: where every intermediate (a Temp buffer of the loop IR) lives at run time.
//
// Kernels run in program order, one after the other. A temp is live from the kernel that writes
// it to the last kernel that reads it: its live interval [def, last]. planMemory assigns every
// temp to a block of one arena so that temps whose intervals overlap never share a byte:
//
//   - a temp takes over the block of a dead temp when one is free (best fit: the smallest free
//     block at least as large; when none is large enough, the largest free one, which grows);
//   - an elementwise kernel may write its output over an input that dies in that kernel (in
//     place) when both have the same shape and dtype and every read of that input is at exactly
//     the index being stored, so each element is read before the same iteration overwrites it;
//   - blocks are laid out one after the other, each at a multiple of 64 bytes;
//   - program inputs and outputs are never in the arena (they are the caller's memory).
//
// Blocks are reused by whole temps only (no splitting), so the number of blocks equals the
// largest number of temps live at once (an in-place pair counted once): interval graphs are
// coloured optimally by this greedy walk in order of definition. docs/memory-planning.md describes the printed forms.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/loops/LoopIR.h"

namespace texc::loops {

inline constexpr int64_t kArenaAlignment = 64;

struct PlannedTemp {
  int buffer = -1;       // the Temp buffer of the loop program
  int64_t bytes = 0;     // its logical size (elements times element size)
  int defKernel = -1;    // the kernel that writes it
  int lastKernel = -1;   // the last kernel that reads it (defKernel when nothing reads it)
  int block = -1;        // the arena block it lives in
  int64_t offset = 0;    // byte offset of its block in the arena
  int reusedFrom = -1;   // the temp (buffer id) that held the block before it; -1: a fresh block
  bool inPlace = false;  // written over reusedFrom by the kernel in which reusedFrom dies
};

struct MemoryPlan {
  std::vector<PlannedTemp> temps;     // in order of definition
  std::vector<int64_t> blockOffsets;  // by block
  std::vector<int64_t> blockBytes;    // by block, multiples of kArenaAlignment
  int64_t arenaBytes = 0;             // the sum of the block sizes
  int64_t naiveBytes = 0;             // one 64-byte-aligned buffer per temp, summed
  int maxLive = 0;                    // the most temps live during one kernel
  // The same, counting a temp written in place and the input it overwrites as one: what must be
  // held at once, and so the number of blocks the greedy walk needs (blockBytes.size()).
  int maxLiveSharing = 0;

  // The planned temp of loop-IR buffer `buffer`, or null when it is not in the arena.
  const PlannedTemp* find(int buffer) const;
  // The input buffer that kernel `kernel` overwrites in place, or -1.
  int inPlaceInputOf(const LoopProgram& p, int kernel) const;
};

struct PlanOptions {
  // false: never write in place (then the block count equals maxLive); for tests and comparisons.
  bool inPlace = true;
};

// Plans every temp of `p` that a kernel writes. Temps no kernel writes are left out.
MemoryPlan planMemory(const LoopProgram& p, const PlanOptions& options = {});

// Whether kernel `kernel` may write its output over `input` (the reading rule above; liveness
// and buffer kinds are checked by the planner).
bool mayWriteInPlace(const LoopProgram& p, int kernel, int input);

// The plan as a table (value, bytes, live interval, offset, reused from), the naive and planned
// totals, and a timeline: kernels across, temps down, '#' where a temp is live.
std::string printMemoryPlan(const LoopProgram& p, const MemoryPlan& plan);

// Checks the plan against the program: every written temp planned, offsets aligned and inside
// the arena, no input or output planned, and no two temps with overlapping live intervals sharing
// a byte (except a temp written in place over the input that dies in its defining kernel).
// Returns the problems found, empty when valid.
std::vector<std::string> verifyMemoryPlan(const LoopProgram& p, const MemoryPlan& plan);

}  // namespace texc::loops
