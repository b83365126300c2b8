// lower-to-loops: the dataflow graph becomes loop nests, one kernel per node (LowerToLoops.h).
#include "compiler/loops/LowerToLoops.h"
#include "compiler/passes/Pass.h"

namespace texc {

bool runLowerToLoops(CompileState& s) {
  s.loops = loops::lowerToLoops(*s.graph);
  return true;
}

}  // namespace texc
