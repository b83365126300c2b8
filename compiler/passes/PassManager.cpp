#include "compiler/passes/PassManager.h"

#include <fmt/format.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>

#include "compiler/backend/cuda/CodeGenCUDA.h"
#include "runtime/Timer.h"

namespace texc {

CompileState::CompileState() = default;
CompileState::~CompileState() = default;

const std::vector<PassInfo>& allPasses() {
  static const std::vector<PassInfo> passes = {
#define PASS(Fn, Name, St, Summary) {Name, Stage::St, Summary, &Fn},
#include "compiler/passes/Passes.def"
#undef PASS
  };
  return passes;
}

const PassInfo* findPass(const std::string& name) {
  for (const PassInfo& p : allPasses())
    if (name == p.name) return &p;
  return nullptr;
}

std::string printStage(const CompileState& s, Stage stage) {
  switch (stage) {
    case Stage::Ast: return printModule(s.module);
    case Stage::Sema: return s.graph ? printProgram(*s.graph) : "(no program: analysis failed)\n";
    case Stage::Graph: {
      if (!s.graph) return "";
      std::string text = printGraph(*s.graph);
      for (const std::string& d : s.onlineSoftmaxDecisions) text += fmt::format("# online-softmax {}\n", d);
      for (const std::string& d : s.reciprocalDecisions) text += fmt::format("# reciprocal-of-sums {}\n", d);
      for (const FusionDecision& d : s.fusionDecisions)
        text += fmt::format("# {} -> {}: {}\n", d.producer, d.consumers, d.reason);
      return text;
    }
    case Stage::Loops: return s.loops ? printLoopProgram(*s.loops) : "";
    case Stage::Plan:
      if (s.memoryPlan && s.loops) return printMemoryPlan(*s.loops, *s.memoryPlan);
      return "(no memory plan: --no-plan, one buffer per intermediate)\n";
    case Stage::CUDA: return s.cuda ? s.cuda->source : "";
    case Stage::LLVM: {
      if (!s.llvmModule) return "";
      std::string text;
      llvm::raw_string_ostream os(text);
      s.llvmModule->print(os, nullptr);
      return os.str();
    }
  }
  return "";
}

namespace {

const char* stageExtension(Stage stage) {
  switch (stage) {
    case Stage::Ast: return "tex";
    case Stage::Sema: return "sema.txt";
    case Stage::Graph: return "graph.txt";
    case Stage::Loops: return "loops.txt";
    case Stage::Plan: return "plan.txt";
    case Stage::LLVM: return "ll";
    case Stage::CUDA: return "cu";
  }
  return "txt";
}

void verify(const CompileState& s, const PassInfo& pass) {
  std::vector<std::string> problems;
  if ((pass.stage == Stage::Sema || pass.stage == Stage::Graph) && s.graph) problems = verifyGraph(*s.graph);
  if (pass.stage == Stage::Loops && s.loops) problems = loops::verifyLoopProgram(*s.loops);
  if (pass.stage == Stage::Plan && s.loops && s.memoryPlan) problems = loops::verifyMemoryPlan(*s.loops, *s.memoryPlan);
  if (pass.stage == Stage::CUDA && s.cuda && s.loops) problems = verifyCudaModule(*s.cuda, *s.loops);
  if (problems.empty()) return;
  std::string msg = fmt::format("internal error: the IR is invalid after pass '{}':", pass.name);
  for (const std::string& p : problems) msg += "\n  " + p;
  throw std::logic_error(msg);
}

}  // namespace

std::string checkPassNames(const Instrumentation& inst) {
  for (const auto* set : {&inst.printAfter, &inst.printBefore})
    for (const std::string& name : *set)
      if (!findPass(name)) {
        std::string known;
        for (const PassInfo& p : allPasses()) known += (known.empty() ? "" : ", ") + std::string(p.name);
        return fmt::format("unknown pass '{}' (passes: {})", name, known);
      }
  return "";
}

bool runPipeline(CompileState& s, const std::vector<const PassInfo*>& pipeline, const Instrumentation& inst,
                 std::vector<PassTiming>* timings) {
  std::ostream& out = inst.out ? *inst.out : std::cerr;
  if (!inst.dumpDir.empty()) std::filesystem::create_directories(inst.dumpDir);
  int index = 0;
  // A pass reads its own stage's IR when that exists (split-ops reads the analysed program as a
  // graph); a pass that starts a stage reads what the pass before it produced.
  const PassInfo* previous = nullptr;
  auto available = [&](Stage stage) {
    switch (stage) {
      case Stage::Ast: return previous != nullptr;
      case Stage::Sema:
      case Stage::Graph: return s.graph.has_value();
      case Stage::Loops: return s.loops.has_value();
      case Stage::Plan: return s.memoryPlan.has_value();
      case Stage::LLVM: return s.llvmModule != nullptr;
      case Stage::CUDA: return s.cuda != nullptr;
    }
    return false;
  };
  for (const PassInfo* pass : pipeline) {
    ++index;
    // The IR the pass reads. The memory plan is not the whole input of the pass after it: that
    // gets the loop IR too.
    auto inputText = [&] {
      return available(pass->stage) ? printStage(s, pass->stage)
             : previous && previous->stage == Stage::Plan
                 ? printStage(s, Stage::Loops) + printStage(s, Stage::Plan)
             : previous ? printStage(s, previous->stage)
             : s.file   ? s.file->text()
                        : std::string();
    };
    std::string before;
    if (inst.printBefore.count(pass->name) || inst.afterPass) before = inputText();
    if (inst.printBefore.count(pass->name)) out << fmt::format("// ----- IR before {} -----\n{}", pass->name, before);
    Stopwatch clock;
    bool changed = pass->run(s);
    double ms = clock.milliseconds();
    if (timings) timings->push_back({pass->name, ms, changed});
    if (inst.afterPass) inst.afterPass(*pass, s, PassTiming{pass->name, ms, changed}, before);
    if (s.diags && s.diags->hasErrors()) return false;
    if (!s.usageError.empty()) return false;
    previous = pass;
    if (inst.verifyEachPass) verify(s, *pass);
    if (inst.printAfterAll || inst.printAfter.count(pass->name)) {
      out << fmt::format("// ----- IR after {} -----\n", pass->name);
      if (changed || index == 1) {
        out << printStage(s, pass->stage);
      } else {
        out << "(unchanged)\n";
        // A pass that decided against every candidate still says why (online-softmax's and
        // reciprocal-of-sums' refusals).
        if (pass->name == std::string("online-softmax"))
          for (const std::string& d : s.onlineSoftmaxDecisions) out << fmt::format("# online-softmax {}\n", d);
        if (pass->name == std::string("reciprocal-of-sums"))
          for (const std::string& d : s.reciprocalDecisions) out << fmt::format("# reciprocal-of-sums {}\n", d);
      }
    }
    if (!inst.dumpDir.empty()) {
      auto path = std::filesystem::path(inst.dumpDir) / fmt::format("{:02d}-{}.{}", index, pass->name, stageExtension(pass->stage));
      std::ofstream f(path);
      f << printStage(s, pass->stage);
      if (!f) throw std::runtime_error(fmt::format("cannot write '{}'", path.string()));
    }
  }
  return true;
}

void printTimings(std::ostream& out, const std::vector<PassTiming>& timings) {
  double total = 0;
  out << "===== pass timings =====\n";
  for (const PassTiming& t : timings) {
    out << fmt::format("  {:<18} {:9.3f} ms{}\n", t.name, t.ms, t.changed ? "" : "  (unchanged)");
    total += t.ms;
  }
  out << fmt::format("  {:<18} {:9.3f} ms\n", "total", total);
}

}  // namespace texc
