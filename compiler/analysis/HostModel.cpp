#include "compiler/analysis/HostModel.h"

#include <fmt/format.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "compiler/backend/llvm/LLVMTarget.h"
#include "compiler/backend/llvm/OrcJIT.h"
#include "runtime/Buffer.h"
#include "runtime/CacheDir.h"
#include "runtime/Timer.h"

namespace texc {

namespace {

// Best of 5 copies of 64 MiB (bytes read + written per second).
double measureCopyGBs() {
  const size_t n = size_t(1) << 24;
  Buffer a(n * sizeof(float)), b(n * sizeof(float));
  std::memset(a.data(), 1, a.size());
  std::memset(b.data(), 0, b.size());
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    Stopwatch clock;
    std::memcpy(b.data(), a.data(), a.size());
    best = std::min(best, clock.seconds());
  }
  return 2.0 * a.size() / best / 1e9;
}

// JIT-compiles a loop of 12 independent FMA chains on host-width vectors and times it.
double measureFmaGflops() {
  std::vector<std::string> features = hostCPUFeatures();
  int lanes = std::find(features.begin(), features.end(), "+avx512f") != features.end() ? 16
              : std::find(features.begin(), features.end(), "+avx") != features.end()   ? 8
                                                                                          : 4;
  auto context = std::make_unique<llvm::LLVMContext>();
  auto module = std::make_unique<llvm::Module>("peak", *context);
  llvm::IRBuilder<> b(*context);
  auto* vty = llvm::FixedVectorType::get(b.getFloatTy(), lanes);
  auto* fty = llvm::FunctionType::get(b.getFloatTy(), {b.getInt64Ty()}, false);
  auto* f = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, "texc_peak", *module);
  auto* entry = llvm::BasicBlock::Create(*context, "entry", f);
  auto* loop = llvm::BasicBlock::Create(*context, "loop", f);
  auto* exit = llvm::BasicBlock::Create(*context, "exit", f);
  const int chains = 12;
  b.SetInsertPoint(entry);
  b.CreateBr(loop);
  b.SetInsertPoint(loop);
  llvm::PHINode* i = b.CreatePHI(b.getInt64Ty(), 2);
  i->addIncoming(b.getInt64(0), entry);
  std::vector<llvm::PHINode*> acc;
  llvm::Value* x = llvm::ConstantFP::get(vty, 0.999999);
  llvm::Value* y = llvm::ConstantFP::get(vty, 1e-7);
  std::vector<llvm::Value*> next;
  // PHIs first: they must open the block.
  for (int c = 0; c < chains; ++c) {
    acc.push_back(b.CreatePHI(vty, 2));
    acc.back()->addIncoming(llvm::ConstantFP::get(vty, 1.0 + c), entry);
  }
  for (int c = 0; c < chains; ++c) next.push_back(b.CreateIntrinsic(llvm::Intrinsic::fma, {vty}, {acc[c], x, y}));
  llvm::Value* inext = b.CreateAdd(i, b.getInt64(1));
  i->addIncoming(inext, loop);
  for (int c = 0; c < chains; ++c) acc[c]->addIncoming(next[c], loop);
  b.CreateCondBr(b.CreateICmpSLT(inext, f->getArg(0)), loop, exit);
  b.SetInsertPoint(exit);
  llvm::Value* sum = next[0];
  for (int c = 1; c < chains; ++c) sum = b.CreateFAdd(sum, next[c]);
  b.CreateRet(b.CreateExtractElement(sum, b.getInt64(0)));

  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*module, &os)) throw std::logic_error("peak kernel is invalid: " + os.str());
  OrcJIT jit(2);
  jit.addModule(std::move(module), std::move(context));
  auto fn = reinterpret_cast<float (*)(int64_t)>(jit.lookup("texc_peak"));
  const int64_t iters = 20'000'000;
  volatile float sink = fn(1000);
  double best = 1e30;
  for (int r = 0; r < 3; ++r) {
    Stopwatch clock;
    sink = fn(iters);
    best = std::min(best, clock.seconds());
  }
  (void)sink;
  return 2.0 * lanes * chains * static_cast<double>(iters) / best / 1e9;
}

}  // namespace

HardwareModel hostHardwareModel(bool remeasure) {
  HardwareModel hw{"host", 0, 0, 0, ""};
  std::filesystem::path path = cacheDirectory("host-model");
  if (!remeasure && !path.empty()) {
    std::ifstream in(path);
    if (in >> hw.bandwidthGBs >> hw.peakGflops && hw.bandwidthGBs > 0 && hw.peakGflops > 0) {
      hw.source = fmt::format("measured by texc on this machine, 1 thread (cached in {})", path.string());
      return hw;
    }
  }
  hw.bandwidthGBs = measureCopyGBs();
  hw.peakGflops = measureFmaGflops();
  hw.source = "measured by texc on this machine just now, 1 thread";
  if (!path.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    std::ofstream out(path);
    out << hw.bandwidthGBs << " " << hw.peakGflops << "\n";
  }
  return hw;
}

}  // namespace texc
