// codegen-llvm: loop IR -> LLVM IR (CodeGenLLVM.h), in a fresh context owned by the state.
#include <llvm/IR/DiagnosticHandler.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <map>
#include <stdexcept>

#include "compiler/backend/llvm/CodeGenLLVM.h"
#include "compiler/passes/Pass.h"
#include "compiler/passes/loops/MachineInfo.h"

namespace texc {

namespace {

// LLVM warns "loop not vectorized" when a loop carries llvm.loop.vectorize.enable and it did not
// widen it. texc puts that hint on every loop marked `vector` (CodeGenLLVM.cpp, markLoop): it is
// a request the user never wrote, and LLVM's copies of a loop (a remainder, a split) carry it
// too, so the warning (without a location) would only be noise. Everything else LLVM reports
// is printed as LLVM prints it.
struct DropMissedVectorization : llvm::DiagnosticHandler {
  bool handleDiagnostics(const llvm::DiagnosticInfo& d) override { return d.getKind() == llvm::DK_OptimizationFailure; }
};

}  // namespace

bool runCodegenLLVM(CompileState& s) {
  // map-gpu runs in the CUDA pipeline only: a GPU mapping here is a pipeline bug, not something
  // the CPU code could honour (its combines and barriers have no meaning on the host).
  for (const loops::Kernel& k : s.loops->kernels)
    if (k.gpu) throw std::logic_error("codegen-llvm: kernel " + k.name + " has a GPU mapping (map-gpu is for the cuda target)");
  s.llvmContext = std::make_unique<llvm::LLVMContext>();
  s.llvmContext->setDiagnosticHandler(std::make_unique<DropMissedVectorization>());
  CodeGenOptions options;
  options.optLevel = s.options.optLevel;
  options.math = s.options.math;
  const loops::MachineInfo machine = loops::scheduleMachine(s.options.cpu, s.options.threads);
  options.vectorFloats = machine.vectorFloats;
  // With AVX-512 the select that zeroes exp[<=0]'s lanes below the underflow limit masks the last
  // product off, which saves an Intel core's underflow assist per vector; with narrower vectors
  // it would be an and after that product, and AMD cores take no assist, so there the clamp form,
  // a compare fewer (softmax 4096^2 on Zen 3, 1 thread: 8.11 -> 7.26 ms; on Zen 4 llvm-mca puts
  // the exp loop at 47.1 cycles per 64 floats instead of 51.1, timings within the host's noise).
  options.expUnderflow = machine.vectorFloats >= 16 && machine.underflowAssist ? UnderflowZero::Select : UnderflowZero::Clamp;
  if (s.memoryPlan) options.memoryPlan = &*s.memoryPlan;
  std::map<const loops::Stmt*, int> lines;
  if (s.options.lineTable) {
    s.loopListing = loops::printLoopProgram(*s.loops, &lines);
    options.stmtLines = &lines;
  }
  s.llvmModule = generateLLVM(*s.loops, *s.llvmContext, options);
  return true;
}

}  // namespace texc
