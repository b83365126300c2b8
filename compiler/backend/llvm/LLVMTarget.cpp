#include "compiler/backend/llvm/LLVMTarget.h"

#include "compiler/backend/llvm/SmallTables.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CodeGen.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <algorithm>
#include <mutex>
#include <stdexcept>

#include "compiler/backend/llvm/NonTemporal.h"

namespace texc {

namespace {

void checkOptLevel(int optLevel) {
  if (optLevel < 0 || optLevel > 3)
    throw std::invalid_argument("texc: optimisation level must be 0..3, got " + std::to_string(optLevel));
}

llvm::CodeGenOptLevel codeGenLevel(int optLevel) {
  switch (optLevel) {
    case 0: return llvm::CodeGenOptLevel::None;
    case 1: return llvm::CodeGenOptLevel::Less;
    case 2: return llvm::CodeGenOptLevel::Default;
    default: return llvm::CodeGenOptLevel::Aggressive;
  }
}

std::string featureString(const CpuTarget& cpu) {
  std::string out;
  for (const std::string& f : cpu.features) {
    if (!out.empty()) out += ',';
    out += f;
  }
  return out;
}

void configureIfBare(llvm::Module& M, const llvm::TargetMachine& TM) {
  if (M.getTargetTriple().empty()) configureModule(M, TM);
}

std::string emitFile(llvm::Module& M, llvm::TargetMachine& TM, llvm::CodeGenFileType kind) {
  // Code generation lowers and rewrites the IR it runs on; work on a copy so M stays usable.
  std::unique_ptr<llvm::Module> copy = llvm::CloneModule(M);
  configureIfBare(*copy, TM);
  defineSmallTables(*copy, TM);  // where optimizeModule did not run
  llvm::SmallString<0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (TM.addPassesToEmitFile(pm, os, nullptr, kind))
    throw std::runtime_error("texc: the target cannot emit this kind of file");
  pm.run(*copy);
  return std::string(buffer.str());
}

}  // namespace

void initLLVM() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    // LLVM 19's SLP vectorizer can turn a chain of llvm.minimum/maximum calls (a fully unrolled
    // min or max reduction) into a vector.reduce.fminimum whose result feeds an instruction
    // through a dangling operand: the module is then invalid and the JIT's code generator
    // crashes (found by the random program generator; `opt-19 -O3` alone reproduces it). Its
    // horizontal reductions are turned off; the loop vectorizer still widens every reduction loop.
    llvm::StringMap<llvm::cl::Option*>& options = llvm::cl::getRegisteredOptions();
    if (auto it = options.find("slp-vectorize-hor"); it != options.end())
      static_cast<llvm::cl::opt<bool>*>(it->second)->setValue(false);
  });
}

std::string hostCPUName() { return cpuTarget("host").name; }

std::vector<std::string> hostCPUFeatures() { return cpuTarget("host").features; }

std::unique_ptr<llvm::TargetMachine> createHostTargetMachine(int optLevel) { return createTargetMachine(cpuTarget("host"), optLevel); }

std::unique_ptr<llvm::TargetMachine> createTargetMachine(const CpuTarget& cpu, int optLevel) {
  checkOptLevel(optLevel);
  initLLVM();
  const std::string triple = llvm::sys::getProcessTriple();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) throw std::runtime_error("texc: no LLVM target for " + triple + ": " + error);
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, cpu.name, featureString(cpu), options, llvm::Reloc::PIC_, std::nullopt, codeGenLevel(optLevel)));
  if (!tm) throw std::runtime_error("texc: cannot create a TargetMachine for " + triple);
  return tm;
}

void configureModule(llvm::Module& M, const llvm::TargetMachine& TM) {
  M.setTargetTriple(TM.getTargetTriple().str());
  M.setDataLayout(TM.createDataLayout());
}

// LLVM's vectorizers use gathers wherever the target has them (AVX-512), and on AMD's AVX-512
// cores a gather is microcoded: on a Zen 4 (1 thread) a softmax over 65536 rows of 10 floats
// took 2.1 ms with the gathers the loop vectorizer put across its rows and 0.77 ms without them,
// a global average pool over 7 x 7 windows 0.37 and 0.31 ms. So the optimisation pipeline sees
// those cores with LLVM's prefer-no-gather and prefer-no-scatter tuning, and the vectorizers
// choose other code. Code generation keeps TM itself, so a gather that texc emits on purpose
// (the pack of a strided convolution's input) stays one. Null where TM needs no such tuning.
namespace {
std::unique_ptr<llvm::TargetMachine> vectorizerTuning(const llvm::TargetMachine& TM) {
  const std::string features = TM.getTargetFeatureString().str();
  if (!isAmdCpu(TM.getTargetCPU().str()) || features.find("+avx512f") == std::string::npos) return nullptr;
  return std::unique_ptr<llvm::TargetMachine>(TM.getTarget().createTargetMachine(
      TM.getTargetTriple().str(), TM.getTargetCPU(), features + ",+prefer-no-gather,+prefer-no-scatter", TM.Options,
      TM.getRelocationModel(), TM.getCodeModel(), TM.getOptLevel()));
}
}  // namespace

void optimizeModule(llvm::Module& M, llvm::TargetMachine& TM, int optLevel) {
  checkOptLevel(optLevel);
  configureIfBare(M, TM);
  std::string problems;
  llvm::raw_string_ostream problemStream(problems);
  if (llvm::verifyModule(M, &problemStream))
    throw std::runtime_error("texc: invalid LLVM module before optimisation:\n" + problemStream.str());

  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  tuning.LoopInterleaving = true;
  tuning.LoopUnrolling = optLevel > 0;

  // Declared in this order so that they are destroyed proxies-first, as LLVM requires.
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  const std::unique_ptr<llvm::TargetMachine> tuned = vectorizerTuning(TM);
  llvm::PassBuilder pb(tuned ? tuned.get() : &TM, tuning);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);

  llvm::ModulePassManager mpm;
  switch (optLevel) {
    case 0: mpm = pb.buildO0DefaultPipeline(llvm::OptimizationLevel::O0); break;
    case 1: mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O1); break;
    case 2: mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2); break;
    default: mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3); break;
  }
  mpm.run(M, mam);
  defineSmallTables(M, TM);
  finishStreamingStores(M);
  // An invalid module out of LLVM's own pipeline would crash the code generator: say so instead.
  if (llvm::verifyModule(M, &problemStream))
    throw std::runtime_error("texc: internal error: LLVM's optimisation pipeline produced an invalid module (an LLVM bug; -O0 avoids it):\n" +
                             problemStream.str());
}

std::string emitAssembly(llvm::Module& M, llvm::TargetMachine& TM) {
  return emitFile(M, TM, llvm::CodeGenFileType::AssemblyFile);
}

std::string emitObject(llvm::Module& M, llvm::TargetMachine& TM) {
  return emitFile(M, TM, llvm::CodeGenFileType::ObjectFile);
}

std::string printModule(const llvm::Module& M) {
  std::string text;
  llvm::raw_string_ostream os(text);
  M.print(os, nullptr);
  os.flush();
  return text;
}

}  // namespace texc
