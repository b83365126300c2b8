// plan-memory: places the loop program's intermediates in one arena (MemoryPlan.h). It changes
// no loop nest; codegen-llvm reads the plan (in-place kernels) and the runtime binds temps by it.
// With --no-plan it records no plan, and every intermediate gets a buffer of its own.
#include "compiler/loops/MemoryPlan.h"
#include "compiler/passes/Pass.h"

namespace texc {

bool runPlanMemory(CompileState& s) {
  s.memoryPlan.reset();
  if (!s.options.planMemory) return false;
  s.memoryPlan = loops::planMemory(*s.loops);
  return true;
}

}  // namespace texc
