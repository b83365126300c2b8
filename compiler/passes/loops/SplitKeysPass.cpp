// split-keys: an online-softmax kernel with too few query rows for the GPU runs its pass over the
// keys in slices, and a kernel combines the slices' max, sum and output rows
// (compiler/loops/gpu/SplitKeys.h). The pipeline runs it on the cuda target (Pipeline.cpp),
// before plan-memory, which places the partial results.
#include "compiler/loops/gpu/SplitKeys.h"
#include "compiler/passes/Pass.h"

namespace texc {

bool runSplitKeys(CompileState& s) {
  if (s.options.target != Target::Cuda) return false;
  return !loops::gpu::splitKeys(*s.loops).empty();
}

}  // namespace texc
