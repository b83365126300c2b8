// codegen-cuda: loop IR -> CUDA C (CodeGenCUDA.h), for --target cuda. NVRTC compiles it later,
// when the driver needs PTX (compile --emit ptx, run, compare).
#include "compiler/backend/cuda/CodeGenCUDA.h"
#include "compiler/passes/Pass.h"

namespace texc {

bool runCodegenCUDA(CompileState& s) {
  s.cuda = std::make_unique<CudaModule>(printCUDA(*s.loops));
  return true;
}

}  // namespace texc
