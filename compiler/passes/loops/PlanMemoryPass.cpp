// plan-memory: places the loop program's intermediates in one arena (MemoryPlan.h). It changes
// no loop nest; codegen-llvm reads the plan (in-place kernels) and the runtime binds temps by it.
// With --no-plan the pipeline leaves it out (Pipeline.cpp): no plan, and every intermediate gets
// a buffer of its own. The CUDA backend lays out its device arena by the same plan
// (CudaExecutable.h), without in-place writes.
#include "compiler/loops/MemoryPlan.h"
#include "compiler/passes/Pass.h"

namespace texc {

bool runPlanMemory(CompileState& s) {
  // The CUDA kernels take every buffer as a __restrict__ pointer, so two parameters must never
  // share memory: on that target temps reuse dead blocks but are never written in place.
  loops::PlanOptions options;
  options.inPlace = s.options.target != Target::Cuda;
  s.memoryPlan = loops::planMemory(*s.loops, options);
  return true;
}

}  // namespace texc
