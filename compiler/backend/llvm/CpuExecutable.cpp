#include "compiler/backend/llvm/CpuExecutable.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "compiler/backend/llvm/CodeGenLLVM.h"
#include "compiler/backend/llvm/OrcJIT.h"
#include "runtime/ThreadPool.h"

namespace texc {

CpuExecutable::CpuExecutable() = default;
CpuExecutable::~CpuExecutable() = default;

std::unique_ptr<CpuExecutable> CpuExecutable::load(std::unique_ptr<llvm::LLVMContext> context, std::unique_ptr<llvm::Module> module,
                                                   const loops::LoopProgram& program, int optLevel, const CpuTarget& cpu) {
  std::unique_ptr<CpuExecutable> exe(new CpuExecutable());
  exe->jit_ = std::make_unique<OrcJIT>(optLevel, cpu);
  exe->cpu_ = cpu;
  exe->jit_->addModule(std::move(module), std::move(context));
  for (const loops::Kernel& k : program.kernels) {
    auto fn = reinterpret_cast<KernelFn>(exe->jit_->lookup(kernelSymbol(k)));
    exe->kernels_.push_back({fn, k.parallelExtent});
  }
  return exe;
}

void CpuExecutable::runKernel(size_t k, void** buffers, ThreadPool& pool) const {
  const CompiledKernel& kernel = kernels_[k];
  // A kernel without a parallel loop runs once; lo and hi are then unused.
  if (kernel.parallelExtent <= 1 || pool.numThreads() == 1) {
    kernel.fn(buffers, 0, std::max<int64_t>(kernel.parallelExtent, 1));
    return;
  }
  pool.parallelFor(0, kernel.parallelExtent, [&](int64_t lo, int64_t hi) { kernel.fn(buffers, lo, hi); });
}

std::vector<JitFunction> CpuExecutable::jitFunctions() const { return jit_->linkedFunctions.all(); }

void CpuExecutable::run(void** buffers, ThreadPool& pool) const {
  for (size_t k = 0; k < kernels_.size(); ++k) runKernel(k, buffers, pool);
}

}  // namespace texc
