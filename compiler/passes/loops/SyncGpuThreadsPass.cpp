// sync-gpu-threads: the cross-thread combines and the barriers of the row-block kernels that
// map-gpu chose (compiler/loops/gpu/SyncGpuThreads.h). CUDA pipeline only.
#include "compiler/loops/gpu/SyncGpuThreads.h"
#include "compiler/passes/Pass.h"

namespace texc {

bool runSyncGpuThreads(CompileState& s) {
  if (s.options.target != Target::Cuda) return false;
  return loops::gpu::syncGpuThreads(*s.loops) > 0;
}

}  // namespace texc
