// Running a compiled program from the driver: tensors for every buffer, reproducible random
// inputs, and reading results back as doubles for comparisons.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/loops/MemoryPlan.h"
#include "frontend/Program.h"
#include "runtime/Buffer.h"

namespace texc {

ElemType elemTypeOf(DType t);

// Element i of `t` as a double (f16/bf16 converted exactly).
double loadElement(const Tensor& t, int64_t i);
std::vector<double> toDoubles(const Tensor& t);

// Fills `t` with values in [-1, 1) from splitmix64 seeded by `seed` and the input's position
// `inputIndex`, so --random SEED gives the same inputs on every machine.
void fillRandom(Tensor& t, uint64_t seed, size_t inputIndex);

// Allocates a zeroed tensor for every computed tensor of `p` (inputs already set in `tensors`)
// and returns the pointer table the kernels take. Throws std::bad_alloc.
std::vector<void*> bindTensors(const Program& p, std::vector<Tensor>& tensors);

// The resident set size of this process now (Linux /proc/self/statm), or -1 when unknown.
int64_t residentBytes();

// The memory of the computed tensors of a compiled program, run after run. Outputs are tensors
// of their own (in `tensors`, which must outlive this), allocated once. With a memory plan the
// intermediates live in one 64-byte-aligned arena, allocated once and reused by every run; without
// one (--no-plan) every run allocates a fresh buffer per intermediate and frees it after the run,
// as a runtime without a planner would. The program's tensor ids are its loop-IR buffer ids.
class ProgramMemory {
 public:
  // Allocates the outputs and the arena. Inputs must already be set in `tensors`. Throws
  // std::bad_alloc, or CommandError naming the tensor that could not be allocated.
  ProgramMemory(const Program& p, const loops::MemoryPlan* plan, std::vector<Tensor>& tensors);
  // The pointer table for the next run (without a plan: fresh intermediates).
  void** prepareRun();
  // Frees the intermediates of an unplanned run; the arena stays.
  void finishRun();
  // Bytes held for intermediates during a run: the arena, or the unplanned buffers summed.
  int64_t intermediateBytes() const;

 private:
  const Program& program_;
  const loops::MemoryPlan* plan_;
  std::vector<Tensor>& tensors_;
  Buffer arena_;
  std::vector<Buffer> unplanned_;  // by tensor id; only intermediates, only during a run
  std::vector<void*> ptrs_;
};

}  // namespace texc
