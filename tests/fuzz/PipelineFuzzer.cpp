// libFuzzer target over the whole compiler: every input that passes semantic analysis goes on
// through the graph passes, fusion, lowering, LLVM code generation, LLVM's optimisation pipeline
// and machine-code emission (nothing is executed).
//
// The input's hash picks the pipeline options (fusion mode and -O level), so the corpus covers
// every configuration without spending input bytes on it. Every IR verifier runs after every
// pass. A valid program must compile: a pass that reports an error on a program sema accepted
// is a property violation, like a crash, a hang, a leak or undefined behaviour (the build adds
// ASan and UBSan; LLVM itself is not instrumented).
//
// Per-input cost is bounded: programs longer than kMaxSource bytes, nested deeper than
// kMaxDepth, or with a tensor above kMaxElements elements stop after sema (the front-end fuzzer
// covers them); -O2/-O3 are used only for programs of at most kMaxOptimisedStatements statements.
// Run it with scripts/fuzz.sh pipeline.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include "compiler/backend/llvm/LLVMTarget.h"
#include "compiler/passes/PassManager.h"
#include "compiler/passes/Pipeline.h"
#include "frontend/AST.h"
#include "frontend/Diagnostics.h"
#include "frontend/Parser.h"
#include "frontend/Program.h"
#include "frontend/Sema.h"
#include "frontend/Source.h"

namespace texc {
namespace {

constexpr size_t kMaxSource = 4096;
constexpr int kMaxDepth = 48;
constexpr int64_t kMaxElements = int64_t{1} << 32;
constexpr size_t kMaxOptimisedStatements = 12;

[[noreturn]] void violated(const char* what, const std::string& detail) {
  std::fprintf(stderr, "pipeline_fuzzer: property violated: %s\n%s\n", what, detail.c_str());
  std::abort();
}

uint64_t fnv1a(const uint8_t* data, size_t size) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 0x100000001b3ull;
  return h;
}

// Whether `p` is cheap enough to compile once per input.
bool withinBudget(const Module& module, const Program& p) {
  for (const Stmt& s : module.stmts)
    if (s.value && s.value->depth > kMaxDepth) return false;
  for (const TensorInfo& t : p.tensors) {
    int64_t n = 1;
    for (int64_t d : t.shape) {
      if (d > kMaxElements / n) return false;
      n *= d;
    }
  }
  return true;
}

void runOne(const uint8_t* data, size_t size) {
  if (size > kMaxSource) return;
  std::string text(reinterpret_cast<const char*>(data), size);
  SourceFile file("fuzz.tex", text);
  {
    // Analysis first, on its own, to decide whether the program is worth compiling.
    DiagnosticEngine diags(&file);
    Module module = parse(file, diags);
    if (diags.hasErrors()) return;
    std::optional<Program> program = analyze(module, diags);
    if (!program || !withinBudget(module, *program)) return;
  }

  uint64_t h = fnv1a(data, size);
  DiagnosticEngine diags(&file);
  CompileState s;
  s.file = &file;
  s.diags = &diags;
  s.options.fuse = static_cast<FuseMode>(h % 3);
  s.options.optLevel = static_cast<int>((h / 3) % 4);
  Instrumentation inst;
  inst.verifyEachPass = true;
  if (!runPipeline(s, buildPipeline(s.options, Stage::LLVM), inst)) violated("a program that sema accepted failed to compile", diags.render());
  if (s.options.optLevel >= 2 && s.graph && s.graph->computations.size() > kMaxOptimisedStatements) return;
  // Machine code, as the JIT would make it.
  std::unique_ptr<llvm::TargetMachine> tm = createHostTargetMachine(s.options.optLevel);
  static volatile size_t sink = 0;
  sink = sink + emitObject(*s.llvmModule, *tm).size();
}

}  // namespace
}  // namespace texc

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  texc::runOne(data, size);
  return 0;
}
