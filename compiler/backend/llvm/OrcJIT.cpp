#include "compiler/backend/llvm/OrcJIT.h"

#include "compiler/backend/llvm/LLVMTarget.h"
#include "compiler/backend/llvm/JitFunctions.h"
#include "compiler/backend/llvm/SmallTables.h"

#include <llvm/ExecutionEngine/Orc/Core.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/Error.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <stdexcept>

namespace texc {

namespace {

[[noreturn]] void fail(const std::string& what, llvm::Error error) {
  throw std::runtime_error("texc: " + what + ": " + llvm::toString(std::move(error)));
}

llvm::CodeGenOptLevel jitCodeGenLevel(int optLevel) {
  if (optLevel < 0 || optLevel > 3)
    throw std::invalid_argument("texc: optimisation level must be 0..3, got " + std::to_string(optLevel));
  const llvm::CodeGenOptLevel levels[] = {llvm::CodeGenOptLevel::None, llvm::CodeGenOptLevel::Less,
                                          llvm::CodeGenOptLevel::Default, llvm::CodeGenOptLevel::Aggressive};
  return levels[optLevel];
}

}  // namespace

OrcJIT::OrcJIT(int optLevel, const CpuTarget& cpu) {
  initLLVM();
  llvm::orc::JITTargetMachineBuilder machine{llvm::Triple(llvm::sys::getProcessTriple())};
  machine.setCPU(cpu.name);
  machine.addFeatures(cpu.features);
  machine.setCodeGenOptLevel(jitCodeGenLevel(optLevel));
  auto targetCreated = machine.createTargetMachine();
  if (!targetCreated) fail("cannot create the JIT's target machine", targetCreated.takeError());
  targetMachine = std::move(*targetCreated);

  auto created = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(machine)).create();
  if (!created) fail("cannot create the JIT", created.takeError());
  jit = std::move(*created);
  jit->getExecutionSession().setErrorReporter([this](llvm::Error error) {
    std::lock_guard<std::mutex> lock(sessionErrorsMutex);
    sessionErrors += "\n  " + llvm::toString(std::move(error));
  });

  const std::string perfMap = perfMapPath();
  if (!listJitFunctions(*jit, linkedFunctions, perfMap) && !perfMap.empty())
    throw std::runtime_error("texc: TEXC_PERF_MAP: this JIT's object layer does not list the functions it links");

  // Fall back to the host process for anything the JIT'd modules do not define (libm, runtime).
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(jit->getDataLayout().getGlobalPrefix());
  if (!process) fail("cannot search the host process for symbols", process.takeError());
  jit->getMainJITDylib().addGenerator(std::move(*process));
}

OrcJIT::~OrcJIT() = default;

void OrcJIT::addModule(std::unique_ptr<llvm::Module> module, std::unique_ptr<llvm::LLVMContext> context) {
  defineSmallTables(*module, *targetMachine);
  if (llvm::Error error = jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(module), std::move(context))))
    fail("cannot add a module to the JIT", std::move(error));
}

void OrcJIT::addSymbol(const std::string& name, void* address) {
  llvm::orc::SymbolMap symbols;
  symbols[jit->mangleAndIntern(name)] = {llvm::orc::ExecutorAddr::fromPtr(address),
                                         llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable};
  if (llvm::Error error = jit->getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(symbols))))
    fail("cannot define JIT symbol '" + name + "'", std::move(error));
}

void* OrcJIT::lookup(const std::string& name) {
  auto address = jit->lookup(name);
  if (!address) {
    std::string details = llvm::toString(address.takeError());
    std::lock_guard<std::mutex> lock(sessionErrorsMutex);
    details += sessionErrors;
    sessionErrors.clear();
    throw std::runtime_error("texc: JIT lookup of '" + name + "' failed: " + details);
  }
  return address->toPtr<void*>();
}

const llvm::DataLayout& OrcJIT::dataLayout() const { return jit->getDataLayout(); }

}  // namespace texc
