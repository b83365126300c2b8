// optimize-llvm: LLVM's default pipeline at the chosen level, tuned for the target CPU (--cpu).
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include "compiler/backend/llvm/LLVMTarget.h"
#include "compiler/passes/Pass.h"

namespace texc {

bool runOptimizeLLVM(CompileState& s) {
  std::unique_ptr<llvm::TargetMachine> tm = createTargetMachine(cpuTarget(s.options.cpu), s.options.optLevel);
  configureModule(*s.llvmModule, *tm);
  optimizeModule(*s.llvmModule, *tm, s.options.optLevel);
  return s.options.optLevel > 0;
}

}  // namespace texc
