// The sink-unit-loops pass (compiler/loops/SinkUnitLoops.cpp): leading loops of extent 1 move
// inside the first longer loop, which becomes the parallel one.
//
//   - the nests it rewrites (a pool over one image, two unit loops in a row, a row-wise kernel
//     whose row loop holds hoisted reductions), printed, and their outputs through the loop-IR
//     interpreter bit for bit against the nests as lowered;
//   - an innermost longer loop ([1, N] elementwise), which stays innermost while the unit loops
//     go;
//   - the nests it leaves alone: a longer outer loop, a unit loop that holds more than the next
//     loop;
//   - it runs in the pipeline for the cpu target only.
#include <catch2/catch.hpp>

#include "LoopInterpreter.h"
#include "PassTestSupport.h"
#include "compiler/loops/SinkUnitLoops.h"
#include "compiler/passes/Pipeline.h"

namespace texc::passtest {
namespace {

// Lowers `text`, sinks its unit loops, checks the program verifies and computes the same outputs;
// returns the rewritten program's text.
std::string sunk(const std::string& text, int expectRewritten) {
  LoweredLoops l = lowerOnly("sink", text);
  loops::LoopProgram p = l.loops;
  CHECK(loops::sinkUnitLoops(p) == expectRewritten);
  std::vector<std::string> problems = loops::verifyLoopProgram(p);
  INFO(loops::printLoopProgram(p));
  for (const std::string& problem : problems) FAIL_CHECK(problem);
  std::vector<std::vector<double>> want = interpretOnRandomInputs(l, l.loops, 5);
  std::vector<std::vector<double>> got = interpretOnRandomInputs(l, p, 5);
  for (int id : l.graph.outputs) CHECK(got[id] == want[id]);
  return loops::printLoopProgram(p);
}

}  // namespace

TEST_CASE("sink-unit-loops: a pool over one image runs in parallel over its channels", "[passes][sink]") {
  const std::string text = sunk("input x : f32[1, 6, 8, 8]\noutput p[n, c, y < 4, x2 < 4] = max(dy < 2, dx < 2: x[n, c, 2 * y + dy, 2 * x2 + dx])\n", 1);
  CHECK(text.find("kernel k0_p (f32, parallel over 6)\n"
                  "  for c < 6 parallel\n"
                  "    for n < 1\n"
                  "      for y < 4\n"
                  "        for x2 < 4 vector\n") != std::string::npos);
}

TEST_CASE("sink-unit-loops: a chain of unit loops moves as a whole, hoisted reductions move with them", "[passes][sink]") {
  const std::string two = sunk("input x : f32[1, 1, 5, 7]\noutput y[a, b, i, j] = x[a, b, i, j] * 2\n", 1);
  CHECK(two.find("  for i < 5 parallel\n    for a < 1\n      for b < 1\n        for j < 7 vector\n") != std::string::npos);
  // Softmax over rows of a [1, R, D] tensor: the row loop holds the max and the sum.
  const std::string rows = sunk("input x : f32[1, 9, 13]\nm[n, r] = max(d: x[n, r, d])\n"
                                "output s[n, r, d] = exp(x[n, r, d] - m[n, r]) / sum(e: exp(x[n, r, e] - m[n, r]))\n",
                                1);
  CHECK(rows.find("parallel over 9") != std::string::npos);
  CHECK(rows.find("  for r < 9 parallel\n    for n < 1\n") != std::string::npos);
}

TEST_CASE("sink-unit-loops: nests it leaves alone", "[passes][sink]") {
  // The outer loop is longer already.
  CHECK(sunk("input x : f32[4, 1, 6]\noutput y[a, b, c] = x[a, b, c] + 1\n", 0).find("for a < 4 parallel") != std::string::npos);
  // A unit loop that holds more than the next loop (the hoisted max of a row of one).
  CHECK(sunk("input x : f32[1, 64]\noutput y[a, j] = x[a, j] - max(e: x[a, e])\n", 0).find("parallel over 1)") != std::string::npos);
}

TEST_CASE("sink-unit-loops: an innermost longer loop stays innermost, the unit loops go", "[passes][sink]") {
  CHECK(sunk("input x : f32[1, 1, 64]\noutput y[a, b, j] = x[a, b, j] * (a + b + 1)\n", 1)
            .find("kernel k0_y (f32, parallel over 64)\n"
                  "  for j < 64 parallel vector\n"
                  "    y[0, 0, j] = (x[0, 0, j] * ((float(0) + float(0)) + 1))\n") != std::string::npos);
}

TEST_CASE("sink-unit-loops: a row loop that holds its reduction's loop moves out", "[passes][sink]") {
  // The row loop is the innermost left-hand loop (marked vector), but the vectorizer only ever
  // widens the reduction's loop inside it, so moving it outward costs nothing.
  CHECK(sunk("input x : f32[1, 8, 5]\noutput s[a, r] = sum(d: x[a, r, d])\n", 1).find("  for r < 8 parallel vector\n    for a < 1\n") !=
        std::string::npos);
}

TEST_CASE("sink-unit-loops: in the pipeline for the cpu target only", "[passes][sink]") {
  const std::string text = "input x : f32[1, 6, 8, 8]\noutput p[n, c, y < 4, x2 < 4] = max(dy < 2, dx < 2: x[n, c, 2 * y + dy, 2 * x2 + dx])\n";
  for (Target target : {Target::Cpu, Target::Cuda}) {
    std::unique_ptr<Session> s = startSession(inlineProgram("sink", text));
    s->state().options.target = target;
    REQUIRE(s->runThroughPassManager(buildPipeline(s->state().options, Stage::Loops), Instrumentation{}));
    CHECK(s->state().loops->kernels[0].parallelExtent == (target == Target::Cpu ? 6 : 1));
  }
}

}  // namespace texc::passtest
