// split-k: a tiled contraction with too few tiles for the GPU's SMs and a long reduction runs as
// its reduction's slices (a batch of partial sums) and a kernel that adds them
// (compiler/loops/gpu/SplitK.h). The pipeline runs it on the cuda target with tiling on
// (Pipeline.cpp), before plan-memory, which places the partial sums.
#include "compiler/loops/gpu/SplitK.h"
#include "compiler/passes/Pass.h"

namespace texc {

bool runSplitK(CompileState& s) {
  if (s.options.target != Target::Cuda) return false;
  loops::gpu::GpuMapOptions o;
  o.tf32 = s.options.math == MathMode::Fast;  // as map-gpu will map the kernel
  return !loops::gpu::splitKs(*s.loops, o).empty();
}

}  // namespace texc
