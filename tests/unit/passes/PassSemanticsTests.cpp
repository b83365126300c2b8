// What the goldens cannot show: every graph pass keeps the graph valid and keeps the program's
// outputs exactly as they were, under the float64 reference interpreter.
//
// Every program (examples/*.tex with the sizes of tests/golden/graph/example-sizes.txt, and
// every tests/golden/**/*.tex) is compiled pass by pass; the graph is kept after sema and after
// every graph pass of buildPipeline(options, Stage::Graph). Then for each graph pass:
//
//   - in its pipeline position: the graph after it verifies (verifyGraph is empty), has the same
//     inputs and outputs, and gives bit-identical outputs (any NaN equals any NaN) on three sets
//     of random inputs (one with 0, -0, inf, NaN, ... mixed in) as the graph before it; when
//     the pass returns false the graph is the same data (graphStructure), and when it returns
//     true the graph is different data (so `(unchanged)` in --print-after is never wrong);
//   - applied to the graph of every other point of the pipeline (after sema, after each pass):
//     the same, since a pass may not rely on what ran before it for its correctness.
//
// Also: lower-to-loops gives a valid loop program for every graph of every program, and that
// program computes the graph's outputs (run by a loop-IR interpreter).
#include <algorithm>
#include <cmath>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "LoopInterpreter.h"
#include "PassTestSupport.h"
#include "compiler/loops/FuseRowPasses.h"
#include "compiler/loops/LowerToLoops.h"
#include "compiler/loops/Walk.h"
#include "compiler/passes/Pipeline.h"

namespace texc::passtest {
namespace {

// Three input sets per graph: (seed, kind) for randomInputs.
constexpr std::pair<uint64_t, int> kInputSets[] = {{1, 0}, {2, 0}, {3, 1}};

// A program compiled pass by pass.
struct Trace {
  TestProgram program;
  std::string failure;
  PipelineOptions options;
  std::vector<Graph> states;                // states[0]: after sema; states[k + 1]: after passes[k]
  std::vector<std::string> producedBy;      // "sema", then the pass names
  std::vector<const PassInfo*> passes;      // the graph passes, in pipeline order
  std::vector<bool> changed;                // what passes[k] returned
  // Reference outputs of states[k] on each input set (filled on first use), or the error.
  std::vector<std::vector<std::vector<RefTensor>>> outputs;
  std::vector<std::string> referenceError;
};

Trace traceProgram(const TestProgram& program) {
  Trace t;
  t.program = program;
  t.options.fuse = program.options.fuse;
  std::unique_ptr<Session> s = startSession(program);
  for (const PassInfo* p : buildPipeline(t.options, Stage::Sema)) s->runPass(*p);
  if (!s->failure().empty() || !s->state().graph) {
    t.failure = s->failure().empty() ? std::string("analysis gave no program") : s->failure();
    return t;
  }
  t.states.push_back(*s->state().graph);
  t.producedBy.push_back("sema");
  for (const PassInfo* p : graphPipeline(t.options)) {
    bool changed = s->runPass(*p);
    if (!s->failure().empty()) {
      t.failure = s->failure();
      return t;
    }
    t.passes.push_back(p);
    t.changed.push_back(changed);
    t.states.push_back(*s->state().graph);
    t.producedBy.push_back(p->name);
  }
  return t;
}

// Every program, traced once for all the tests of this file.
std::vector<Trace>& traces() {
  static std::vector<Trace> all = [] {
    std::vector<Trace> out;
    for (const TestProgram& p : allPrograms()) out.push_back(traceProgram(p));
    return out;
  }();
  return all;
}

// The inputs of set `k` for the program of `t` (the same for every state: passes keep inputs).
std::vector<RefTensor> inputsFor(const Trace& t, size_t k) {
  return randomInputs(t.states.front(), kInputSets[k].first, kInputSets[k].second);
}

std::string evaluate(const Graph& g, const std::vector<RefTensor>& inputs, std::vector<RefTensor>& out) {
  try {
    out = referenceOutputs(g, inputs);
  } catch (const std::exception& e) {
    return std::string("the reference interpreter failed: ") + e.what();
  }
  return "";
}

// Reference outputs of t.states[k] on every input set, computed once.
const std::vector<std::vector<RefTensor>>& stateOutputs(Trace& t, size_t k, std::string& error) {
  if (t.outputs.empty()) {
    t.outputs.resize(t.states.size());
    t.referenceError.resize(t.states.size());
  }
  if (t.outputs[k].empty() && t.referenceError[k].empty()) {
    for (size_t set = 0; set < std::size(kInputSets); ++set) {
      std::vector<RefTensor> out;
      t.referenceError[k] = evaluate(t.states[k], inputsFor(t, set), out);
      if (!t.referenceError[k].empty()) break;
      t.outputs[k].push_back(std::move(out));
    }
  }
  error = t.referenceError[k];
  return t.outputs[k];
}

// The inputs' names, dtypes and shapes.
std::string inputsText(const Graph& g) {
  std::string s;
  for (int id : g.inputs) {
    s += fmt::format("{}:{}", g.tensors[id].name, dtypeName(g.tensors[id].dtype));
    for (int64_t d : g.tensors[id].shape) s += fmt::format(":{}", d);
    s += " ";
  }
  return s;
}

// Empty when every element of `got` is within `rel` (relative to the larger magnitude, at least
// 1) of `want`, NaN where `want` is NaN (anything there when `nanMayVanish`); else the first
// element that is not.
std::string compareOutputsNearly(const std::vector<RefTensor>& want, const std::vector<RefTensor>& got, double rel,
                                 bool nanMayVanish = false) {
  for (size_t o = 0; o < want.size(); ++o)
    for (size_t e = 0; e < want[o].data.size(); ++e) {
      double a = want[o].data[e], b = got[o].data[e];
      if (std::isnan(a) && (std::isnan(b) || nanMayVanish)) continue;
      if (a == b || std::abs(a - b) <= rel * std::max({1.0, std::abs(a), std::abs(b)})) continue;
      return fmt::format("output {} element {} (flat) was {} and is {} after lowering", o, e, a, b);
    }
  return "";
}

// Checks one application of `pass` that turned `before` (t.states[from]) into `after`; returns
// every problem found, one a line.
// Two graph passes are not exact, so their results are checked to 1e-12 in float64 instead of
// bit for bit: online-softmax reassociates the weighted sum and its normalisation (A = P / l;
// sum(j: A * V) becomes sum(j: P * V) / l), and reciprocal-of-sums rounds the reciprocal it
// multiplies by.
bool exactPass(const std::string& name) { return name != "online-softmax" && name != "reciprocal-of-sums"; }

std::string checkApplication(Trace& t, size_t from, const Graph& after, bool changed, bool exact) {
  const Graph& before = t.states[from];
  std::string problems;
  for (const std::string& p : verifyGraph(after)) problems += "verifyGraph: " + p + "\n";
  if (inputsText(before) != inputsText(after)) problems += "the inputs changed\n";
  bool same = graphStructure(before) == graphStructure(after);
  if (!changed && !same) problems += "the pass returned false but changed the graph\n";
  if (changed && same) problems += "the pass returned true but the graph is the same data\n";
  if (!problems.empty()) return problems;

  std::string error;
  const std::vector<std::vector<RefTensor>>& expected = stateOutputs(t, from, error);
  if (!error.empty()) return "";  // the graph before is reported by its own check
  for (size_t set = 0; set < std::size(kInputSets); ++set) {
    std::vector<RefTensor> got;
    std::string err = evaluate(after, inputsFor(t, set), got);
    if (!err.empty()) return err + "\n";
    std::string diff = exact ? compareOutputsExactly(before, expected[set], after, got) : compareOutputsNearly(expected[set], got, 1e-12);
    if (!diff.empty())
      return fmt::format("input set {} (seed {}, kind {}): {}\n", set, kInputSets[set].first, kInputSets[set].second, diff);
  }
  return "";
}

std::string describe(const Trace& t, const PassInfo& pass, size_t from, const std::string& problems, const Graph& after) {
  return fmt::format("{} applied to {} after {} (state {}):\n{}---- graph before ----\n{}---- graph after ----\n{}", pass.name,
                     t.program.name, t.producedBy[from], from, problems, printGraph(t.states[from]), printGraph(after));
}

// The checks of this file for one pass name, over every program.
void checkPass(const std::string& name, bool everywhere) {
  const PassInfo* pass = findPass(name);
  REQUIRE(pass != nullptr);
  for (Trace& t : traces()) {
    DYNAMIC_SECTION(t.program.name) {
      if (!t.failure.empty()) FAIL(t.program.name << ": " << t.failure);
      bool inPipeline = false;
      for (size_t k = 0; k < t.passes.size(); ++k) {
        if (t.passes[k] != pass) continue;
        inPipeline = true;
        std::string problems = checkApplication(t, k, t.states[k + 1], t.changed[k], exactPass(name));
        if (!problems.empty()) FAIL_CHECK("in pipeline position: " << describe(t, *pass, k, problems, t.states[k + 1]));
      }
      // The program's switches choose its pipeline: --fuse=none leaves fuse out.
      const bool chosen = whyNotInPipeline(name, t.options).empty();
      if (!everywhere) {
        CHECK(inPipeline == chosen);
        continue;
      }
      if (!chosen) continue;
      for (size_t from = 0; from < t.states.size(); ++from) {
        bool changed = false;
        std::string error;
        Graph after = applyGraphPass(*pass, t.states[from], t.options, changed, error);
        std::string problems = error.empty() ? checkApplication(t, from, after, changed, exactPass(name)) : "reported errors: " + error;
        if (!problems.empty()) FAIL_CHECK("out of position: " << describe(t, *pass, from, problems, after));
      }
    }
  }
}

TEST_CASE("pass semantics: every program compiles and its graphs verify and evaluate", "[passes][semantics]") {
  for (Trace& t : traces()) {
    DYNAMIC_SECTION(t.program.name) {
      if (!t.failure.empty()) FAIL(t.program.name << ": " << t.failure);
      for (size_t k = 0; k < t.states.size(); ++k) {
        INFO("the graph after " << t.producedBy[k]);
        for (const std::string& p : verifyGraph(t.states[k])) FAIL_CHECK(p);
        std::string error;
        stateOutputs(t, k, error);
        CHECK(error == "");
      }
    }
  }
}

// The graph passes of the pipeline, each once, in pipeline order.
std::vector<std::string> graphPassNames() {
  std::vector<std::string> names;
  for (const PassInfo* p : graphPipeline())
    if (std::find(names.begin(), names.end(), p->name) == names.end()) names.push_back(p->name);
  return names;
}

TEST_CASE("pass semantics: every graph pass keeps the graph valid and the outputs exact", "[passes][semantics]") {
  std::vector<std::string> names = graphPassNames();
  // split-ops, constant-fold, simplify, cse, dce and a fusion pass at least.
  REQUIRE(names.size() >= 6);
  for (const std::string& name : names)
    DYNAMIC_SECTION(name) { checkPass(name, false); }
}

TEST_CASE("pass semantics: every graph pass is exact at every point of the pipeline", "[passes][semantics][everywhere]") {
  std::vector<std::string> names = graphPassNames();
  REQUIRE(names.size() >= 6);
  for (const std::string& name : names)
    DYNAMIC_SECTION(name) { checkPass(name, true); }
}

// lower-to-loops is checked the same way: the loop program of every graph of every program
// verifies and, run by a float64 loop-IR interpreter, gives the graph's outputs bit for bit
// (reductions add their terms in the same order as the reference).
TEST_CASE("pass semantics: lower-to-loops computes what the graph computes", "[passes][semantics]") {
  for (Trace& t : traces()) {
    DYNAMIC_SECTION(t.program.name) {
      if (!t.failure.empty()) FAIL(t.program.name << ": " << t.failure);
      for (size_t k = 0; k < t.states.size(); ++k) {
        const Graph& g = t.states[k];
        loops::LoopProgram lowered = loops::lowerToLoops(g);
        // The loop passes after lowering must keep the results exact too.
        loops::LoopProgram rowFused = lowered;
        loops::fuseRowPasses(rowFused);
        for (const loops::LoopProgram* lp : {&lowered, &rowFused}) {
          INFO("the graph after " << t.producedBy[k] << ":\n"
                                  << printGraph(g) << "its loop program" << (lp == &rowFused ? " after fuse-row-passes" : "") << ":\n"
                                  << loops::printLoopProgram(*lp));
          CHECK(lp->kernels.size() == g.computations.size());
          std::vector<std::string> problems = loops::verifyLoopProgram(*lp);
          for (const std::string& p : problems) FAIL_CHECK(p);
          std::string error;
          const std::vector<std::vector<RefTensor>>& expected = stateOutputs(t, k, error);
          if (!problems.empty() || !error.empty()) continue;
          for (size_t set = 0; set < std::size(kInputSets); ++set) {
            std::vector<RefTensor> inputs = inputsFor(t, set);
            std::vector<std::vector<double>> buffers(lp->buffers.size());
            for (size_t i = 0; i < g.inputs.size(); ++i) buffers[g.inputs[i]] = inputs[i].data;
            std::string failure = interpretLoops(*lp, buffers);
            INFO("input set " << set);
            CHECK(failure == "");
            if (!failure.empty()) break;
            std::vector<RefTensor> got;
            for (int id : g.outputs) got.push_back({g.tensors[id].shape, buffers[id]});
            // An online-softmax node rescales its running sums: in float64 it agrees with the
            // naive expression to a few ulps, not bit for bit. It skips the keys a mask sets to
            // -inf, so on the special values (inf, NaN) the NaN that 0 * inf at such a key gives
            // the naive sum does not reach it (docs/online-softmax.md, "Masked keys").
            if (hasOnlineNode(g)) CHECK(compareOutputsNearly(expected[set], got, 1e-12, kInputSets[set].second == 1) == "");
            else CHECK(compareOutputsExactly(g, expected[set], g, got) == "");
          }
        }
      }
    }
  }
}

// fuse-row-passes on softmax: the input is read in two loops instead of three, exp is evaluated
// once per element, and the rewrite is refused where storing the term would round it.
TEST_CASE("fuse-row-passes: softmax reads its input twice and evaluates exp once", "[passes][semantics]") {
  auto countIn = [](const loops::Block& body, auto&& pred) -> int {
    int n = 0;
    loops::forEachStmt(body, [&](const loops::Stmt& s) { n += pred(s); });
    return n;
  };
  auto loadsOf = [](const loops::Expr& e, int buffer) -> int {
    int n = 0;
    loops::forEachLoad(e, [&](const loops::Expr& load) { n += load.buffer == buffer; });
    return n;
  };
  auto calls = [](const loops::Expr& e) -> int {
    int n = 0;
    loops::forEachExprNode(e, [&](const loops::Expr& node) { n += node.kind == loops::ExprKind::Call; });
    return n;
  };
  // The value of a store or accumulator update, or null.
  auto termOf = [](const loops::Stmt& st) -> const loops::Expr* {
    return st.is<loops::Store>() || st.is<loops::AccUpdate>() ? loops::valueOf(st) : nullptr;
  };
  std::unique_ptr<Session> s = startSession(inlineProgram(
      "softmax", "input x : f32[4, 8]\nm[i] = max(j: x[i, j])\ne[i, j] = exp(x[i, j] - m[i])\ns[i] = sum(j: e[i, j])\noutput y[i, j] = e[i, j] / s[i]\n"));
  REQUIRE(s->runThroughPassManager(buildPipeline(s->state().options, Stage::Loops), Instrumentation{}));
  const Graph& g = *s->state().graph;
  int x = g.inputs[0], y = g.outputs[0];
  // Loops whose own statements read x, and exp calls, in kernel 0.
  auto measure = [&](const loops::LoopProgram& lp, int& readingLoops, int& exps) {
    readingLoops = countIn(lp.kernels[0].body, [&](const loops::Stmt& st) {
      const auto* l = st.getIf<loops::Loop>();
      if (!l) return 0;
      for (const loops::Stmt& b : l->body)
        if (const loops::Expr* term = termOf(b); term && loadsOf(*term, x) > 0) return 1;
      return 0;
    });
    exps = countIn(lp.kernels[0].body, [&](const loops::Stmt& st) {
      const loops::Expr* term = termOf(st);
      return term ? calls(*term) : 0;
    });
  };
  const loops::LoopProgram& piped = *s->state().loops;
  INFO(loops::printLoopProgram(piped));
  REQUIRE(piped.kernels.size() == 1);
  int readingLoops = 0, exps = 0;
  measure(piped, readingLoops, exps);
  CHECK(readingLoops == 2);
  CHECK(exps == 1);

  // Before the pass: three loops read x and exp is evaluated twice.
  loops::LoopProgram lowered = loops::lowerToLoops(g);
  measure(lowered, readingLoops, exps);
  CHECK(readingLoops == 3);
  CHECK(exps == 2);
  // An output stored as f16 would round the stored term: the pass leaves it alone.
  loops::LoopProgram half = lowered;
  half.buffers[y].dtype = DType::F16;
  CHECK(loops::fuseRowPasses(half) == 0);
  CHECK(loops::fuseRowPasses(lowered) == 1);
}

// The checks above only mean something if they can fail: the interpreter must see a lost guard
// and a wrong accumulator.
TEST_CASE("pass semantics: the loop interpreter notices broken loop programs", "[passes][semantics]") {
  std::unique_ptr<Session> s = startSession(inlineProgram("window", "input x : f32[4]\noutput y[i < 4] = sum(t < 3: x[i + t - 1])\n"));
  REQUIRE(s->runThroughPassManager(buildPipeline(s->state().options, Stage::Loops), Instrumentation{}));
  const Graph& g = *s->state().graph;
  loops::LoopProgram lp = *s->state().loops;
  std::vector<std::vector<double>> buffers(lp.buffers.size());
  buffers[g.inputs[0]] = {1, 2, 4, 8};
  REQUIRE(interpretLoops(lp, buffers) == "");
  CHECK(buffers[g.outputs[0]] == std::vector<double>{3, 7, 14, 12});

  // Unwrap the guard: the term at x[-1] is no longer skipped.
  auto unguard = [](loops::Block& body) {
    return !loops::walk(body, [](loops::Stmt& st) {
      auto* g = st.getIf<loops::Guard>();
      if (!g) return loops::WalkAction::Advance;
      loops::Block inner = std::move(g->body);
      st = std::move(inner.front());
      return loops::WalkAction::Stop;
    });
  };
  loops::LoopProgram broken = lp;
  REQUIRE(unguard(broken.kernels[0].body));
  CHECK(interpretLoops(broken, buffers).find("outside [0, 4)") != std::string::npos);

  // Start the sum at 1 instead of 0: every output is off by one.
  loops::LoopProgram wrong = lp;
  loops::forEachStmt(wrong.kernels[0].body, [](loops::Stmt& st) {
    if (auto* init = st.getIf<loops::AccInit>()) init->reduce = ReduceKind::Prod;
  });
  REQUIRE(interpretLoops(wrong, buffers) == "");
  CHECK(buffers[g.outputs[0]] == std::vector<double>{4, 8, 15, 13});
}

}  // namespace
}  // namespace texc::passtest
