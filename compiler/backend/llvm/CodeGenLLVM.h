// CodeGenLLVM: loop IR -> LLVM IR, one function per kernel.
//
// Each kernel becomes `void texc_<kernel>(ptr %buffers, i64 %lo, i64 %hi)`, a thin entry that
// loads the buffer pointers and calls `texc_<kernel>.body`, whose buffer parameters are
// `noalias`, 64-byte aligned and dereferenceable, so LLVM has no aliasing doubts (a kernel planned
// to write in place reads its input through its output's pointer; see the memory plan). Loops have
// constant trip counts (the parallel outermost loop runs [lo, hi)); reductions combine with
// reassociation allowed, so the loop vectorizer may widen them. Elementwise functions use the
// vectorizable approximations of VectorMath at -O1 and above, and libm at -O0.
#pragma once

#include <map>
#include <memory>

#include "compiler/backend/llvm/VectorMath.h"
#include "compiler/loops/LoopIR.h"
#include "compiler/loops/MemoryPlan.h"

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace texc {

struct CodeGenOptions {
  int optLevel = 3;             // 0 calls libm for transcendental functions
  bool preferWideVectors = true;  // ask for 512-bit vectors where the CPU has AVX-512
  int vectorFloats = 8;           // f32 lanes of the target's vectors (16 with AVX-512)
  // How exp[<=0] gives +0 below its underflow limit: by a select (the last product masked off)
  // with AVX-512 on a CPU whose underflowing products take an assist, else by a clamp (VectorMath.h).
  UnderflowZero expUnderflow = UnderflowZero::Clamp;
  MathMode math = MathMode::Precise;  // --math: the vector math's precise or fast forms
  // The memory plan the buffers will be bound by (null: every buffer its own memory). A kernel
  // that writes its output in place over an input reads that input through the output pointer.
  const loops::MemoryPlan* memoryPlan = nullptr;
  // `run --profile`: each statement's line in the printed loop IR (printLoopProgram). The code
  // then carries a DWARF line table of those lines (file "loops"), which the JIT reads back
  // (JitFunctions.h): each instruction is attributed to the statement that made it. LLVM keeps
  // debug locations from changing the code it makes.
  const std::map<const loops::Stmt*, int>* stmtLines = nullptr;
};

// The symbol name of a kernel's entry function.
std::string kernelSymbol(const loops::Kernel& kernel);

std::unique_ptr<llvm::Module> generateLLVM(const loops::LoopProgram& program, llvm::LLVMContext& context,
                                           const CodeGenOptions& options);

}  // namespace texc
