// codegen-cuda: prints the mapped loop IR (map-gpu, sync-gpu-threads) as CUDA C (CodeGenCUDA.h).
// NVRTC compiles it later, when the driver needs PTX (compile --emit ptx, run, compare).
#include "compiler/backend/cuda/CodeGenCUDA.h"
#include "compiler/passes/Pass.h"

namespace texc {

bool runCodegenCUDA(CompileState& s) {
  s.cuda = printCUDA(*s.loops);
  return true;
}

}  // namespace texc
