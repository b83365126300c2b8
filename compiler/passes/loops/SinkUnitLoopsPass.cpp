// sink-unit-loops: outer loops of extent 1 move inside the first longer loop, which the runtime
// then shares out between threads (SinkUnitLoops.h).
#include "compiler/loops/SinkUnitLoops.h"
#include "compiler/passes/Pass.h"

namespace texc {

bool runSinkUnitLoops(CompileState& s) {
  // The CUDA backend maps the lowered nests to its grid by their shape, all loops at once.
  if (s.options.target == Target::Cuda) return false;
  return loops::sinkUnitLoops(*s.loops) > 0;
}

}  // namespace texc
