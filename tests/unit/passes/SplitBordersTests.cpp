// The split-borders pass (compiler/loops/SplitBorders.cpp): padding guards only on border
// iterations.
//
//   - semantics: for convolutions and pools with padding (odd sizes, strides, a reversed index,
//     an image too small to have an interior), the split program verifies and the loop-IR
//     interpreter gives the unsplit program's outputs bit for bit (dropping a guard that holds
//     changes no arithmetic);
//   - structure: the interior loops hold no guard, the border loops keep theirs, the parallel
//     loop and the loops of a reduction are not split, and a program without guards is left alone.
#include <catch2/catch.hpp>

#include <functional>

#include "LoopInterpreter.h"
#include "PassTestSupport.h"
#include "compiler/loops/SplitBorders.h"
#include "compiler/loops/Walk.h"
#include "compiler/passes/Pipeline.h"

namespace texc::passtest {
namespace {

// The loop program of `text` as lowering makes it: untiled, not split.
LoweredLoops lowerUnsplit(const std::string& name, const std::string& text) { return lowerToLoops(name, text); }

std::vector<std::vector<double>> interpret(const LoweredLoops& l, const loops::LoopProgram& lp) {
  return interpretOnRandomInputs(l, lp, 11);
}

// Visits every statement under `body`, with the names of the loops around it.
void walk(const loops::Kernel& k, const loops::Block& body,
          const std::function<void(const loops::Stmt&, const std::vector<std::string>&)>& visit) {
  loops::walkWithEnclosing(body, [&](const loops::Stmt& s, const std::vector<const loops::Stmt*>& enclosing) {
    std::vector<std::string> loopsAround;
    for (const loops::Stmt* e : enclosing)
      if (auto* l = e->getIf<loops::Loop>()) loopsAround.push_back(k.varNames[l->var]);
    visit(s, loopsAround);
    return loops::WalkAction::Advance;
  });
}

// Whether a loop whose name starts with `prefix` is among `around` (the interior loops of the
// second part of a split loop are x.in2, x.in3, ...: names stay unique).
bool inside(const std::vector<std::string>& around, const std::string& prefix) {
  return std::any_of(around.begin(), around.end(), [&](const std::string& n) { return n.rfind(prefix, 0) == 0; });
}

struct Case {
  const char* name;
  const char* text;
  int splits;  // loops split, in all
};

const Case kCases[] = {
    {"conv 3x3 pad 1 + scale/bias + 2x2 max pool, 7x9 (one fused nest)",
     "input I : f32[2, 3, 7, 9]\ninput Wt : f32[5, 3, 3, 3]\ninput scale : f32[5]\ninput bias : f32[5]\n"
     "conv[n, k, y < 7, x < 9] = sum(c, r, s: I[n, c, y + r - 1, x + s - 1] * Wt[k, c, r, s])\n"
     "sb[n, k, y, x] = conv[n, k, y, x] * scale[k] + bias[k]\n"
     "output pool[n, k, y < 3, x < 4] = max(dy < 2, dx < 2: sb[n, k, 2 * y + dy, 2 * x + dx])\n",
     3},  // y (no upper border: 2 y + 2 <= 6), then x in both parts
    {"conv 5x5 pad 2 stride 2, 11x13",
     "input I : f32[1, 2, 11, 13]\ninput Wt : f32[3, 2, 5, 5]\n"
     "output O[n, k, y < 6, x < 7] = sum(c, r, s: I[n, c, 2 * y + r - 2, 2 * x + s - 2] * Wt[k, c, r, s])\n",
     4},
    {"3x3 average pool with padding, 6x5",
     "input X : f32[4, 6, 5]\noutput P[c, y < 6, x < 5] = sum(dy < 3, dx < 3: X[c, y + dy - 1, x + dx - 1]) / 9\n", 4},
    {"a reversed index (coefficient -1)",
     "input X : f32[3, 10]\ninput F : f32[4]\noutput Y[b, x < 10] = sum(s < 4: X[b, 11 - x - s] * F[s])\n", 1},
    {"an image too small for an interior (3 taps over 1 pixel)",
     "input X : f32[2, 1]\noutput Y[c, x < 1] = sum(s < 3: X[c, x + s - 1])\n", 0},
};

TEST_CASE("split-borders: split nests compute what the unsplit ones compute", "[passes][split-borders]") {
  for (const Case& c : kCases) {
    DYNAMIC_SECTION(c.name) {
      LoweredLoops l = lowerUnsplit(c.name, c.text);
      loops::LoopProgram split = l.loops;
      CHECK(loops::splitBorders(split) == c.splits);
      std::vector<std::string> problems = loops::verifyLoopProgram(split);
      INFO(loops::printLoopProgram(split));
      CHECK(problems.empty());
      std::vector<std::vector<double>> expected = interpret(l, l.loops), actual = interpret(l, split);
      for (int out : l.graph.outputs) CHECK(actual[out] == expected[out]);
    }
  }
}

TEST_CASE("split-borders: the interior has no guard, the borders keep theirs", "[passes][split-borders]") {
  LoweredLoops l = lowerUnsplit("conv", kCases[0].text);
  loops::LoopProgram split = l.loops;
  REQUIRE(loops::splitBorders(split) == 3);
  REQUIRE(split.kernels.size() == 1);
  const loops::Kernel& k = split.kernels[0];
  INFO(loops::printLoopProgram(split));
  int interiorGuards = 0, borderGuards = 0, interiorNests = 0, parallelLoops = 0;
  walk(k, k.body, [&](const loops::Stmt& s, const std::vector<std::string>& loopsAround) {
    const auto* l = s.getIf<loops::Loop>();
    if (l && l->parallel) ++parallelLoops;
    if (l && k.varNames[l->var].rfind("x.in", 0) == 0 && inside(loopsAround, "y.in")) ++interiorNests;
    if (!s.is<loops::Guard>()) return;
    if (inside(loopsAround, "y.in") && inside(loopsAround, "x.in")) ++interiorGuards;
    else ++borderGuards;
  });
  CHECK(interiorNests == 1);
  CHECK(interiorGuards == 0);
  CHECK(borderGuards == 3);  // the 3 border nests (first row or first column), one guard each
  CHECK(parallelLoops == 1);  // n, shared out by the runtime, stays whole
  // Pooled rows y in [1, 2] and columns x in [1, 3] see no padding (2 y + dy + r - 1 in [1, 6]
  // and 2 x + dx + s - 1 in [1, 8]); the pool covers no last row or column that would.
  const std::string text = loops::printLoopProgram(split);
  CHECK(text.find("for y.in < 2") != std::string::npos);
  CHECK(text.find("for x.in < 3 vector") != std::string::npos);   // in the first row
  CHECK(text.find("for x.in2 < 3 vector") != std::string::npos);  // in the interior rows
  CHECK(text.find(".hi") == std::string::npos);
  // The window loops of the reductions are not split.
  CHECK(text.find("r.in") == std::string::npos);
  CHECK(text.find("dx.in") == std::string::npos);
}

TEST_CASE("split-borders: programs without padding are left alone", "[passes][split-borders]") {
  LoweredLoops matmul = lowerUnsplit("matmul", "input A : f32[5, 7]\ninput B : f32[7, 3]\noutput C[i, j] = sum(k: A[i, k] * B[k, j])\n");
  loops::LoopProgram p = matmul.loops;
  CHECK(loops::splitBorders(p) == 0);
  CHECK(loops::printLoopProgram(p) == loops::printLoopProgram(matmul.loops));
  // A guard on a reduction variable only (a triangular sum) gives no output loop a border.
  LoweredLoops tri = lowerUnsplit("triangle", "input X : f32[6, 6]\noutput Y[i < 6] = sum(j < 6: X[i, j - 2])\n");
  loops::LoopProgram q = tri.loops;
  CHECK(loops::splitBorders(q) == 0);
}

TEST_CASE("split-borders: runs in the pipeline, not for CUDA", "[passes][split-borders]") {
  auto loopsText = [](Target target) {
    std::unique_ptr<Session> s = startSession(inlineProgram("pool", kCases[2].text));
    s->state().options.target = target;
    REQUIRE(s->runThroughPassManager(buildPipeline(s->state().options, Stage::Loops), Instrumentation{}));
    return loops::printLoopProgram(*s->state().loops);
  };
  CHECK(loopsText(Target::Cpu).find("y.in") != std::string::npos);
  CHECK(loopsText(Target::Cuda).find("y.in") == std::string::npos);
}

}  // namespace
}  // namespace texc::passtest
