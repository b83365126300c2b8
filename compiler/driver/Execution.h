// Running a compiled program from the driver: tensors for every buffer, reproducible random
// inputs, and reading results back as doubles for comparisons.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/loops/MemoryPlan.h"
#include "compiler/reference/Reference.h"
#include "compiler/reference/Tolerance.h"
#include "core/MathMode.h"
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

// Test-only (docs/testing.md, "Poisoned memory"): TEXC_POISON=1 in the environment makes every
// ProgramMemory poisoned, and `texc run` runs the kernels twice on it.
bool poisonRequested();
// Sets every byte of `bytes` bytes at `data` to 0xFF: a NaN in every floating dtype.
void poisonBytes(void* data, size_t bytes);

// Test-only: TEXC_TEST_DAMAGE_OUTPUT=NAME[@VARIANT] adds 1 + |v| to element 0 of output NAME after
// the kernels ran, so that the checks against the reference have a wrong result to find. Without
// @VARIANT every run is damaged; with it, only runs whose `variant` label is VARIANT or has it as
// one of its ", "-separated items (a compare variant, a tune candidate's settings). Returns
// whether it damaged anything.
bool applyTestDamage(const Program& p, std::vector<Tensor>& tensors, const std::string& variant);

// The float64 reference of an analysed program on given inputs, with every element's error bound
// (compiler/reference/ErrorBound.h), both indexed by tensor id.
struct CheckedReference {
  std::vector<RefTensor> values;
  std::vector<std::vector<double>> bounds;
};
// `math`: the elementary functions' mode of the code checked (--math); fast forms get wider bounds.
CheckedReference referenceWithBounds(const Program& analysed, const std::vector<RefTensor>& inputs,
                                     MathMode math = MathMode::Precise);

// One output of a run against the reference: errors, and the tolerance rule's verdict.
struct OutputCheck {
  std::string name;
  std::vector<int64_t> shape;
  ErrorStats error;
  Comparison comparison;
  bool beyond() const { return comparison.mismatches > 0; }
};
// Checks every output of `compiled` (values in `tensors`, by its tensor ids) against `ref`, which
// belongs to `analysed` (outputs keep their order through the pipeline).
std::vector<OutputCheck> checkOutputs(const Program& compiled, const std::vector<Tensor>& tensors, const Program& analysed,
                                      const CheckedReference& ref);
bool anyBeyond(const std::vector<OutputCheck>& checks);
// "C[3, 1] = 0.25, reference 1.25, bound 3.6e-07 (2 of 64 elements beyond)": the worst element.
std::string describeWorst(const OutputCheck& check);

// Allocates a zeroed tensor for every computed tensor of `p` (inputs already set in `tensors`)
// and returns the pointer table the kernels take. Throws std::bad_alloc.
std::vector<void*> bindTensors(const Program& p, std::vector<Tensor>& tensors);

// The resident set size of this process now (Linux /proc/self/statm), or -1 when unknown.
int64_t residentBytes();

// Gives the heap pages the compiler freed back to the operating system (glibc's malloc_trim;
// nothing elsewhere), so that they do not stay resident under the tensors of the run.
void releaseFreedMemory();

// The memory of the computed tensors of a compiled program, run after run. Outputs are tensors
// of their own (in `tensors`, which must outlive this), allocated once. With a memory plan the
// intermediates live in one 64-byte-aligned arena, allocated once and reused by every run; without
// one (--no-plan) every run allocates a fresh buffer per intermediate and frees it after the run,
// as a runtime without a planner would. The program's tensor ids are its loop-IR buffer ids.
class ProgramMemory {
 public:
  // Allocates the outputs and the arena. Inputs must already be set in `tensors`. Throws
  // std::bad_alloc, or CommandError naming the tensor that could not be allocated. Poisoned
  // (`poison`, or TEXC_POISON=1): the outputs and the arena start as NaN instead of zero, and so
  // does every run's unplanned intermediates; a later run sees what the earlier one left.
  ProgramMemory(const Program& p, const loops::MemoryPlan* plan, std::vector<Tensor>& tensors, bool poison = false);
  // The pointer table for the next run (without a plan: fresh intermediates).
  void** prepareRun();
  // Frees the intermediates of an unplanned run; the arena stays.
  void finishRun();
  // Bytes held for intermediates during a run: the arena, or the unplanned buffers summed.
  int64_t intermediateBytes() const;
  bool poisoned() const { return poison_; }

 private:
  const Program& program_;
  const loops::MemoryPlan* plan_;
  std::vector<Tensor>& tensors_;
  Buffer arena_;
  std::vector<Buffer> unplanned_;  // by tensor id; only intermediates, only during a run
  std::vector<void*> ptrs_;
  bool poison_ = false;
};

}  // namespace texc
