// implicit-gemm: convolution nests rewritten as the nest of a matrix product, for map-gpu's tiled
// contraction (compiler/loops/gpu/ImplicitGemmNest.h). CUDA pipeline only (Pipeline.cpp); on
// the CPU the tile pass builds its own implicit GEMM with packed panels.
#include "compiler/loops/gpu/ImplicitGemmNest.h"
#include "compiler/passes/Pass.h"

namespace texc {

bool runImplicitGemm(CompileState& s) {
  if (s.options.target != Target::Cuda) return false;
  return loops::gpu::rewriteImplicitGemms(*s.loops) > 0;
}

}  // namespace texc
