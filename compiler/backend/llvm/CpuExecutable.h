// CpuExecutable: the optimised LLVM module of a program, JIT-compiled for the host, ready to run.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/backend/llvm/JitFunctions.h"
#include "compiler/loops/LoopIR.h"
#include "compiler/target/CpuTarget.h"

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace texc {

class ThreadPool;
struct OrcJIT;

class CpuExecutable {
 public:
  using KernelFn = void (*)(void** buffers, int64_t lo, int64_t hi);

  // JIT-compiles `module` (made by codegen-llvm from `program`) for `cpu`, which the host must be
  // able to run (missingHostFeatures), and looks up every kernel.
  static std::unique_ptr<CpuExecutable> load(std::unique_ptr<llvm::LLVMContext> context, std::unique_ptr<llvm::Module> module,
                                             const loops::LoopProgram& program, int optLevel,
                                             const CpuTarget& cpu = cpuTarget("host"));
  ~CpuExecutable();

  // Runs every kernel in order on `buffers` (one pointer per program buffer, 64-byte aligned),
  // splitting each kernel's parallel loop across `pool`.
  void run(void** buffers, ThreadPool& pool) const;
  // Runs kernel `k` alone, for per-kernel timing.
  void runKernel(size_t k, void** buffers, ThreadPool& pool) const;
  size_t numKernels() const { return kernels_.size(); }
  // The code the JIT linked, function by function (texc run --profile), and its CPU.
  std::vector<JitFunction> jitFunctions() const;
  const CpuTarget& cpu() const { return cpu_; }

 private:
  CpuExecutable();
  struct CompiledKernel {
    KernelFn fn;
    int64_t parallelExtent;
  };
  std::unique_ptr<OrcJIT> jit_;
  CpuTarget cpu_;
  std::vector<CompiledKernel> kernels_;
};

}  // namespace texc
