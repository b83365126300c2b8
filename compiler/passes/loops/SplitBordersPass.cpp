// split-borders: padding guards run only on border iterations (SplitBorders.h). CPU only: the
// CUDA backend maps loops to threads, and a guard there costs a predicated instruction.
#include "compiler/loops/SplitBorders.h"
#include "compiler/passes/Pass.h"

namespace texc {

bool runSplitBorders(CompileState& s) {
  if (!s.options.splitBorders || s.options.target == Target::Cuda) return false;
  return loops::splitBorders(*s.loops) > 0;
}

}  // namespace texc
