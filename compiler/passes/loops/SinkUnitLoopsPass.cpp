// sink-unit-loops: outer loops of extent 1 move inside the first longer loop, which the runtime
// then shares out between threads (SinkUnitLoops.h). CPU target only (Pipeline.cpp): the CUDA
// backend maps the lowered nests to its grid by their shape, all loops at once.
#include "compiler/loops/SinkUnitLoops.h"
#include "compiler/passes/Pass.h"

namespace texc {

bool runSinkUnitLoops(CompileState& s) {
  return loops::sinkUnitLoops(*s.loops) > 0;
}

}  // namespace texc
