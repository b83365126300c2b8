// split-borders: padding guards run only on border iterations (SplitBorders.h). The pipeline runs
// it on the cpu target only (Pipeline.cpp): the CUDA backend maps loops to threads, and a guard
// there costs a predicated instruction.
#include "compiler/loops/SplitBorders.h"
#include "compiler/passes/Pass.h"

namespace texc {

bool runSplitBorders(CompileState& s) {
  return loops::splitBorders(*s.loops) > 0;
}

}  // namespace texc
