// A small in-process JIT for the CPU backend, built on llvm::orc::LLJIT.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "compiler/backend/llvm/JitFunctions.h"
#include "compiler/target/CpuTarget.h"

namespace llvm {
class DataLayout;
class LLVMContext;
class Module;
class TargetMachine;
namespace orc {
class LLJIT;
}
}  // namespace llvm

namespace texc {

// Compiles modules for `cpu` (the host by default; same CPU name and features as createTargetMachine:
// the caller checks that the host can run that CPU's code, missingHostFeatures) and
// resolves their external symbols first from symbols given to addSymbol, then from the host
// process: libm, libc and any shared library loaded into it. Functions defined in the executable
// itself are only visible that way when it exports them (-rdynamic); addSymbol always works.
// Every failure is thrown as std::runtime_error carrying LLVM's message.
struct OrcJIT {
  explicit OrcJIT(int optLevel = 3, const CpuTarget& cpu = cpuTarget("host"));
  ~OrcJIT();
  OrcJIT(const OrcJIT&) = delete;
  OrcJIT& operator=(const OrcJIT&) = delete;

  // Takes the module and the context that owns it. A module without a data layout gets the JIT's;
  // small-table look-ups not yet defined (an unoptimised module) get their bodies for the CPU.
  void addModule(std::unique_ptr<llvm::Module> module, std::unique_ptr<llvm::LLVMContext> context);

  // Makes `name` resolve to `address` in modules added later (runtime entry points such as
  // texc_parallel_for).
  void addSymbol(const std::string& name, void* address);

  // Address of a symbol, compiling its module on first use. Throws if it is not defined anywhere.
  void* lookup(const std::string& name);

  const llvm::DataLayout& dataLayout() const;

  // Every function linked so far, with its address (texc run --profile; TEXC_PERF_MAP).
  JitFunctionList linkedFunctions;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::TargetMachine> targetMachine;  // the JIT's CPU, for defineSmallTables
  // Errors that ORC reports asynchronously (e.g. "Symbols not found" while materialising), kept
  // to be appended to the exception of the lookup that triggered them.
  std::mutex sessionErrorsMutex;
  std::string sessionErrors;
};

}  // namespace texc
