// map-gpu: each kernel's GPU mapping (strategy, launch shape, float4, tile sizes) and the marks on
// the loops it maps (compiler/loops/gpu/MapGpu.h). CUDA pipeline only (Pipeline.cpp lists it for
// --target cuda alone); codegen-cuda prints what it chose.
#include "compiler/loops/gpu/MapGpu.h"
#include "compiler/passes/Pass.h"

namespace texc {

bool runMapGpu(CompileState& s) {
  if (s.options.target != Target::Cuda) return false;
  loops::gpu::GpuMapOptions o;
  o.tf32 = s.options.math == MathMode::Fast;  // f32 contractions on tensor cores (docs/cuda.md)
  return loops::gpu::mapGpu(*s.loops, o) > 0;
}

}  // namespace texc
