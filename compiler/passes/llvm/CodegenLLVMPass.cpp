// codegen-llvm: loop IR -> LLVM IR (CodeGenLLVM.h), in a fresh context owned by the state.
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "compiler/backend/llvm/CodeGenLLVM.h"
#include "compiler/passes/Pass.h"

namespace texc {

bool runCodegenLLVM(CompileState& s) {
  s.llvmContext = std::make_unique<llvm::LLVMContext>();
  CodeGenOptions options;
  options.optLevel = s.options.optLevel;
  if (s.memoryPlan) options.memoryPlan = &*s.memoryPlan;
  s.llvmModule = generateLLVM(*s.loops, *s.llvmContext, options);
  return true;
}

}  // namespace texc
