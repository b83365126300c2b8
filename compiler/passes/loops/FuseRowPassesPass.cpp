// fuse-row-passes: a row reduction and the row's store that recomputes its term share one
// evaluation of the term (FuseRowPasses.h). The pipeline runs it with --fuse=all (Pipeline.cpp).
#include "compiler/loops/FuseRowPasses.h"
#include "compiler/passes/Pass.h"

namespace texc {

bool runFuseRowPasses(CompileState& s) {
  return loops::fuseRowPasses(*s.loops) > 0;
}

}  // namespace texc
