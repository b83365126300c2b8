// fuse-pool-into-gemm: a max or min pool over a tiled contraction's result runs in the
// contraction's epilogue (compiler/loops/gpu/FusePoolIntoGemm.h). The graph's fusion decision for
// the pair is updated to say so, for `texc explain`. The pipeline runs it on the cuda target with
// --fuse=all and tiling on (Pipeline.cpp).
#include <fmt/format.h>

#include "compiler/loops/gpu/FusePoolIntoGemm.h"
#include "compiler/passes/Pass.h"

namespace texc {

bool runFusePoolIntoGemm(CompileState& s) {
  std::vector<loops::gpu::PoolFusion> fused = loops::gpu::fusePoolsIntoGemms(*s.loops);
  for (const loops::gpu::PoolFusion& f : fused) {
    std::string reason = fmt::format("fused after tiling (fuse-pool-into-gemm): {} runs in the epilogue of the tiled contraction that "
                                     "computes {} (columns {}), which is never stored; one loop kernel, where the tables above count two",
                                     f.consumer, f.producer, f.columns);
    s.recordLoopFusion(f.producer, f.consumer, reason);
  }
  return !fused.empty();
}

}  // namespace texc
