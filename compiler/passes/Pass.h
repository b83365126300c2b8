// Passes and the state they transform.
//
// A pass is a plain function `bool run(CompileState&)` that returns whether it changed
// anything; Passes.def names each one and says which IR it works on, so the pass manager can
// list, time, verify and print after any of them.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/graph/Graph.h"
#include "compiler/loops/LoopIR.h"
#include "compiler/loops/MemoryPlan.h"
#include "compiler/loops/Schedule.h"
#include "core/MathMode.h"
#include "frontend/AST.h"
#include "frontend/Diagnostics.h"
#include "frontend/Sema.h"
#include "frontend/Source.h"

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace texc {

// The CUDA backend's result (compiler/backend/cuda/CodeGenCUDA.h). The backends sit above the
// passes' interface (docs/architecture.md, "Layers"), so the state holds it by pointer only.
struct CudaModule;

enum class FuseMode : uint8_t { None, Elementwise, All };

// Which backend the pipeline ends in: LLVM for the host CPU, or CUDA C (docs/cuda.md).
enum class Target : uint8_t { Cpu, Cuda };

// Switches shared by run, compile and compare.
struct PipelineOptions {
  int optLevel = 3;  // -O0..-O3
  FuseMode fuse = FuseMode::All;
  bool planMemory = true;  // false: --no-plan, one buffer per intermediate
  Target target = Target::Cpu;
  bool tile = true;                   // --no-tile turns the tile pass off
  bool splitBorders = true;           // off only in tests that tile the lowered nests themselves
  // split-chains' block in iterations, 0 for its own (loops/SplitChains.h); set only by tests, so
  // that the random programs' short loops run in phases too.
  int64_t phaseBlock = 0;
  loops::ScheduleOverrides schedule;  // --schedule FILE
  std::string schedulePath;           // that file, for messages
  int threads = 0;  // threads the code will run on (run/compare --threads); 0: one per core
  std::string cpu = "host";  // --cpu: the CPU the code is for (cpuTarget), an LLVM CPU name or host
  MathMode math = MathMode::Precise;  // --math: precise or fast elementary functions
  std::set<std::string> disabledPasses;  // --disable-pass: optional passes left out (Pipeline.h)
  // run --profile: the CPU code carries the loop IR's line of each instruction (CodeGenLLVM.h).
  bool lineTable = false;
};

// One fusion decision: a producer, the nodes that read it, and why it was or was not fused.
struct FusionDecision {
  std::string producer;
  std::string consumers;
  bool fused = false;
  std::string reason;
};

struct CompileState {
  CompileState();
  ~CompileState();

  // A loop pass fused `producer` into `consumer` after all (fuse-into-tiles,
  // fuse-pool-into-gemm): the graph's decision on the producer now says so, for `texc explain`.
  // Inline: the loop passes' layer sits below the pass manager's (docs/architecture.md).
  void recordLoopFusion(const std::string& producer, const std::string& consumer, const std::string& reason) {
    bool found = false;
    for (FusionDecision& d : fusionDecisions)
      if (d.producer == producer) {
        d.fused = true;
        d.reason = reason;
        found = true;
      }
    if (!found) fusionDecisions.push_back({producer, consumer, true, reason});
  }

  const SourceFile* file = nullptr;
  DiagnosticEngine* diags = nullptr;
  LetOverrides overrides;
  PipelineOptions options;

  Module module;                          // after parse
  std::optional<Program> analysed;        // after sema, untouched by later passes (the reference runs it)
  std::optional<Graph> graph;             // after sema: the analysed program, then the dataflow graph
  std::vector<std::string> onlineSoftmaxDecisions;  // after online-softmax: one line per candidate
  std::vector<std::string> reciprocalDecisions;     // after reciprocal-of-sums: one line per division by a computed tensor
  std::vector<FusionDecision> fusionDecisions;  // after fuse
  std::optional<loops::LoopProgram> loops;  // after lower-to-loops
  std::optional<loops::MemoryPlan> memoryPlan;  // after plan-memory (none with --no-plan)
  std::vector<std::string> sumOrderDecisions;  // after sum-lanes: one line per loop that adds up a sum or product
  std::unique_ptr<llvm::LLVMContext> llvmContext;
  std::unique_ptr<llvm::Module> llvmModule;  // after codegen-llvm
  // After codegen-llvm with PipelineOptions::lineTable: the loop IR as printed, whose line numbers
  // the code's line table holds (run --profile shows those lines).
  std::string loopListing;
  std::unique_ptr<CudaModule> cuda;          // after codegen-cuda
  // Set by a pass that cannot do what the user's options ask (a schedule naming a loop the
  // kernel does not have): the pipeline stops there and the driver reports a usage error.
  std::string usageError;
};

// Plan: the memory plan of the loop program's intermediates (it changes no IR, it places it).
enum class Stage : uint8_t { Ast, Sema, Graph, Loops, Plan, LLVM, CUDA };

struct PassInfo {
  const char* name;
  Stage stage;
  const char* summary;
  bool (*run)(CompileState&);
};

#define PASS(Fn, Name, Stage, Summary) bool Fn(CompileState& state);
#include "compiler/passes/Passes.def"
#undef PASS

// Every pass, in Passes.def order.
const std::vector<PassInfo>& allPasses();
const PassInfo* findPass(const std::string& name);

// The IR a stage holds, as text (what --print-after shows).
std::string printStage(const CompileState& state, Stage stage);

}  // namespace texc
