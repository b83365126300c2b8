// CpuExecutable: a loop program compiled for the host CPU and JIT-loaded, ready to run.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/loops/LoopIR.h"

namespace texc {

class ThreadPool;
class OrcJIT;

struct CpuCompileOptions {
  int optLevel = 3;
};

// Wall-clock milliseconds of each compilation step, for --time-passes.
struct CompileTimes {
  double codegenMs = 0;
  double optimizeMs = 0;
  double jitMs = 0;
};

// Also reported to the user: the text forms produced on the way (filled when asked).
struct CompileArtifacts {
  bool wantLLVM = false;
  std::string llvmBefore;  // as generated
  std::string llvmAfter;   // after the LLVM optimisation pipeline
};

class CpuExecutable {
 public:
  using KernelFn = void (*)(void** buffers, int64_t lo, int64_t hi);

  static std::unique_ptr<CpuExecutable> compile(const loops::LoopProgram& program, const CpuCompileOptions& options,
                                                CompileTimes* times = nullptr, CompileArtifacts* artifacts = nullptr);
  ~CpuExecutable();

  // Runs every kernel in order on `buffers` (one pointer per program buffer, 64-byte aligned),
  // splitting each kernel's parallel loop across `pool`.
  void run(void** buffers, ThreadPool& pool) const;

  // Runs kernel `k` alone; for per-kernel timing.
  void runKernel(size_t k, void** buffers, ThreadPool& pool) const;
  size_t numKernels() const { return kernels_.size(); }

 private:
  CpuExecutable() = default;
  struct CompiledKernel {
    KernelFn fn;
    int64_t parallelExtent;
  };
  std::unique_ptr<OrcJIT> jit_;
  std::vector<CompiledKernel> kernels_;
};

}  // namespace texc
