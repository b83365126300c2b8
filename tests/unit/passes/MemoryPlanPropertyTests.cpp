// The memory plan on random dataflow graphs: random shapes, fan-out (a value read by several
// later statements) and fan-in (statements reading several values), elementwise and reduction
// statements, index shuffles that forbid writing in place, mixed dtypes. For every graph the plan
// must let no two temps with overlapping live intervals share a byte (checked here independently
// of the verifier), use as many blocks as temps are live at once, and give the results of the
// unplanned run: exactly, in the loop-IR interpreter with a byte-level arena (all graphs), and bit
// for bit through the JIT at -O3 and -O0 with two threads (a subset, to keep the test fast).
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <cstring>
#include <random>

#include "LoopInterpreter.h"
#include "PassTestSupport.h"
#include "compiler/backend/llvm/CpuExecutable.h"
#include "compiler/driver/Execution.h"
#include "compiler/loops/MemoryPlan.h"
#include "compiler/loops/Walk.h"
#include "compiler/passes/Pipeline.h"
#include "runtime/ThreadPool.h"

namespace texc::passtest {
namespace {

using loops::BufferKind;
using loops::Expr;
using loops::ExprKind;
using loops::Kernel;
using loops::LoopProgram;
using loops::MemoryPlan;
using loops::PlannedTemp;
using loops::Stmt;
using loops::mayWriteInPlace;
using loops::planMemory;
using loops::printMemoryPlan;
using loops::verifyMemoryPlan;

constexpr int kGraphs = 1000;
constexpr int kJitEvery = 50;  // graphs 0, 50, 100, ... also run through the JIT (20 of them)

// A random program over two extents A and B. Every value is a matrix [A, B] (indexed [i, j]), a
// row vector [A] ([i]) or a column vector [B] ([j]).
std::string randomProgram(std::mt19937_64& rng, int64_t a, int64_t b) {
  enum Kind { M, R, C };
  struct Value {
    std::string name;
    Kind kind;
  };
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  std::vector<Value> values;
  std::string text = fmt::format("let A = {}; let B = {}\n", a, b);
  int inputs = 1 + pick(3);
  for (int k = 0; k < inputs; ++k) {
    Kind kind = k == 0 ? M : static_cast<Kind>(pick(3));
    std::string dtype = pick(6) == 0 ? "f64" : "f32";
    std::string shape = kind == M ? "A, B" : kind == R ? "A" : "B";
    values.push_back({fmt::format("x{}", k), kind});
    text += fmt::format("input x{} : {}[{}]\n", k, dtype, shape);
  }
  // A read of `v` inside a statement over [i, j]; shuffled indices now and then.
  auto readIn2D = [&](const Value& v) {
    switch (v.kind) {
      case M: {
        int r = pick(8);
        if (r == 0) return fmt::format("{}[i, B - 1 - j]", v.name);
        if (r == 1) return fmt::format("{}[A - 1 - i, j]", v.name);
        return fmt::format("{}[i, j]", v.name);
      }
      case R: return fmt::format("{}[i]", v.name);
      case C: return fmt::format("{}[j]", v.name);
    }
    return std::string();
  };
  // A term of a statement of kind `kind` reading `v` (a reduction when v has a dimension more).
  auto term = [&](Kind kind, const Value& v) -> std::string {
    const char* reduce = pick(2) ? "sum" : "max";
    if (kind == M) return readIn2D(v);
    if (kind == R) {
      if (v.kind == R) return fmt::format("{}[i]", v.name);
      if (v.kind == M) return fmt::format("{}(j < B: {})", reduce, readIn2D(v));
      return fmt::format("{}(j < B: {}[j] * 0.25)", reduce, v.name);
    }
    if (v.kind == C) return fmt::format("{}[j]", v.name);
    if (v.kind == M) return fmt::format("{}(i < A: {})", reduce, readIn2D(v));
    return fmt::format("{}(i < A: {}[i] * 0.25)", reduce, v.name);
  };
  int statements = 2 + pick(9);
  for (int s = 0; s < statements; ++s) {
    Kind kind = pick(5) < 3 ? M : static_cast<Kind>(1 + pick(2));
    // Fan-in: one to three operands, recent values more likely (long chains), any value possible
    // (fan-out, long live intervals).
    int operands = 1 + pick(3);
    std::string expr;
    for (int o = 0; o < operands; ++o) {
      int n = static_cast<int>(values.size());
      int idx = pick(3) ? n - 1 - pick(std::min(n, 3)) : pick(n);
      std::string t = term(kind, values[idx]);
      switch (pick(5)) {
        case 0: t = fmt::format("tanh({})", t); break;
        case 1: t = fmt::format("sigmoid({})", t); break;
        case 2: t = fmt::format("({} * 0.5)", t); break;
        default: break;
      }
      const char* ops[] = {" + ", " - ", " * "};
      expr += (o ? ops[pick(3)] : "") + t;
    }
    std::string name = fmt::format("t{}", s);
    bool output = s + 1 == statements || pick(6) == 0;
    // Explicit bounds: a statement need not read every one of its index variables.
    std::string lhs = kind == M ? "[i < A, j < B]" : kind == R ? "[i < A]" : "[j < B]";
    text += fmt::format("{}{}{} = {}\n", output ? "output " : "", name, lhs, expr);
    values.push_back({name, kind});
  }
  return text;
}

// Live intervals computed here, apart from the planner: [first writer, last reader].
void checkNoSharedBytes(const LoopProgram& p, const MemoryPlan& plan) {
  std::vector<int> def(p.buffers.size(), -1), last(p.buffers.size(), -1);
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    const int kernel = static_cast<int>(k);
    loops::forEachStmt(p.kernels[k].body, [&](const Stmt& s) {
      if (!s.is<loops::Store>() && !s.is<loops::AccUpdate>()) return;
      loops::forEachLoad(*loops::valueOf(s), [&](const Expr& e) { last[e.buffer] = std::max(last[e.buffer], kernel); });
      if (auto* store = s.getIf<loops::Store>(); store && def[store->buffer] < 0) def[store->buffer] = kernel;
    });
  }
  for (size_t b = 0; b < p.buffers.size(); ++b) {
    const PlannedTemp* t = plan.find(static_cast<int>(b));
    if (p.buffers[b].kind != BufferKind::Temp) REQUIRE(t == nullptr);  // inputs and outputs never in the arena
    else if (def[b] >= 0) REQUIRE(t != nullptr);
  }
  for (const PlannedTemp& x : plan.temps) {
    REQUIRE(x.offset % 64 == 0);
    REQUIRE(x.offset + x.bytes <= plan.arenaBytes);
    for (const PlannedTemp& y : plan.temps) {
      if (&x == &y) continue;
      int xLast = std::max(def[x.buffer], last[x.buffer]), yLast = std::max(def[y.buffer], last[y.buffer]);
      bool bothLive = def[x.buffer] <= yLast && def[y.buffer] <= xLast;
      bool shareBytes = x.offset < y.offset + y.bytes && y.offset < x.offset + x.bytes;
      if (!bothLive || !shareBytes) continue;
      // The one exception: y written in place over x, in the kernel where x dies (the pair in
      // the other order is checked when the loops reach it).
      if (x.inPlace && x.reusedFrom == y.buffer) continue;
      INFO(p.buffers[x.buffer].name << " and " << p.buffers[y.buffer].name << " share bytes while both are live");
      REQUIRE(y.inPlace);
      REQUIRE(y.reusedFrom == x.buffer);
      REQUIRE(xLast == def[y.buffer]);
      REQUIRE(mayWriteInPlace(p, def[y.buffer], x.buffer));
    }
  }
}

bool sameBits(double a, double b) { return (a != a && b != b) || std::memcmp(&a, &b, sizeof a) == 0; }

// Runs the compiled program of `s` (up to LLVM) on inputs from `seed`; returns every output.
std::vector<std::vector<double>> runJit(Session& s, uint64_t seed, ThreadPool& pool) {
  CompileState& st = s.state();
  const Program& g = *st.graph;
  std::vector<Tensor> tensors(g.tensors.size());
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const TensorInfo& t = g.tensors[g.inputs[k]];
    tensors[g.inputs[k]] = makeTensor(elemTypeOf(t.dtype), t.shape);
    fillRandom(tensors[g.inputs[k]], seed, k);
  }
  auto exe = CpuExecutable::load(std::move(st.llvmContext), std::move(st.llvmModule), *st.loops, st.options.optLevel);
  ProgramMemory memory(g, st.memoryPlan ? &*st.memoryPlan : nullptr, tensors);
  for (int run = 0; run < 2; ++run) {  // twice: the arena is reused as a later run finds it
    exe->run(memory.prepareRun(), pool);
    memory.finishRun();
  }
  std::vector<std::vector<double>> out;
  for (int id : g.outputs) out.push_back(toDoubles(tensors[id]));
  return out;
}

TEST_CASE("memory plan property: random dataflow graphs never share live bytes and compute the same results",
          "[passes][memplan][property]") {
  std::mt19937_64 rng(20261202);
  ThreadPool pool(2);
  int inPlaceSeen = 0, reuseSeen = 0, jitRuns = 0;
  for (int graph = 0; graph < kGraphs; ++graph) {
    bool jit = graph % kJitEvery == 0;
    int64_t a = 1 + static_cast<int64_t>(rng() % 6), b = 1 + static_cast<int64_t>(rng() % 9);
    if (jit) {  // sizes where vector loops and their remainders both run
      a = 2 + static_cast<int64_t>(rng() % 6);
      b = 17 + static_cast<int64_t>(rng() % 60);
    }
    std::string text = randomProgram(rng, a, b);
    ProgramOptions options;
    uint64_t f = rng() % 10;
    options.fuse = f < 6 ? FuseMode::None : f < 8 ? FuseMode::Elementwise : FuseMode::All;
    INFO("graph " << graph << ", fuse mode " << static_cast<int>(options.fuse) << ":\n" << text);

    std::unique_ptr<Session> s = startSession(inlineProgram(fmt::format("random{}", graph), text, options));
    bool compiled = s->runThroughPassManager(buildPipeline(s->state().options, Stage::Plan), Instrumentation{});
    INFO(s->failure());
    REQUIRE(compiled);
    REQUIRE(s->state().memoryPlan);
    const LoopProgram& lp = *s->state().loops;
    const MemoryPlan& plan = *s->state().memoryPlan;
    INFO(printMemoryPlan(lp, plan));
    REQUIRE(verifyMemoryPlan(lp, plan).empty());
    checkNoSharedBytes(lp, plan);
    REQUIRE(static_cast<int>(plan.blockBytes.size()) == plan.maxLiveSharing);
    // Without in-place writes every live temp needs its own block: blocks == most live at once.
    MemoryPlan noInPlace = planMemory(lp, loops::PlanOptions{false});
    REQUIRE(verifyMemoryPlan(lp, noInPlace).empty());
    checkNoSharedBytes(lp, noInPlace);
    REQUIRE(static_cast<int>(noInPlace.blockBytes.size()) == noInPlace.maxLive);
    REQUIRE(noInPlace.maxLive == plan.maxLive);
    REQUIRE(plan.arenaBytes <= plan.naiveBytes);
    for (const PlannedTemp& t : plan.temps) {
      inPlaceSeen += t.inPlace;
      reuseSeen += t.reusedFrom >= 0 && !t.inPlace;
    }

    // The interpreter, unplanned and planned, on the same inputs.
    std::vector<RefTensor> inputs = randomInputs(*s->state().graph, static_cast<uint64_t>(graph), 0);
    std::vector<std::vector<double>> unplanned(lp.buffers.size()), planned;
    const Program& g = *s->state().graph;
    for (size_t k = 0; k < g.inputs.size(); ++k) unplanned[g.inputs[k]] = inputs[k].data;
    planned = unplanned;
    REQUIRE(interpretLoops(lp, unplanned) == "");
    REQUIRE(interpretLoops(lp, planned, plan) == "");
    for (int id : g.outputs)
      for (size_t e = 0; e < unplanned[id].size(); ++e) {
        INFO("output " << g.tensors[id].name << " element " << e);
        REQUIRE(sameBits(unplanned[id][e], planned[id][e]));
      }

    if (!jit) continue;
    ++jitRuns;
    for (int opt : {3, 0}) {
      INFO("JIT at -O" << opt);
      std::vector<std::vector<double>> results[2];
      for (int p = 0; p < 2; ++p) {
        std::unique_ptr<Session> js = startSession(inlineProgram(fmt::format("random{}", graph), text, options));
        js->state().options.optLevel = opt;
        js->state().options.planMemory = p == 1;
        REQUIRE(js->runThroughPassManager(buildPipeline(js->state().options, Stage::LLVM), Instrumentation{}));
        REQUIRE(js->state().memoryPlan.has_value() == (p == 1));
        results[p] = runJit(*js, static_cast<uint64_t>(graph), pool);
      }
      REQUIRE(results[0].size() == results[1].size());
      for (size_t o = 0; o < results[0].size(); ++o)
        for (size_t e = 0; e < results[0][o].size(); ++e) {
          INFO("output " << o << " element " << e << ": unplanned " << results[0][o][e] << ", planned " << results[1][o][e]);
          REQUIRE(sameBits(results[0][o][e], results[1][o][e]));
        }
    }
  }
  // The generator must exercise what the planner does, or the property says little.
  CHECK(inPlaceSeen > 500);
  CHECK(reuseSeen > 500);
  CHECK(jitRuns == kGraphs / kJitEvery);
}

}  // namespace
}  // namespace texc::passtest
