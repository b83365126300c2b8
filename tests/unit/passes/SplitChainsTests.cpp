// The split-chains rule (compiler/loops/SplitChains.h): which vector loops run in phases, how
// many, and the verifier's check of the mark. The cut itself is codegen's (SplitPhases.h): its
// bits are checked against the unsplit loop in tests/lit/split-chains/.
#include <catch2/catch.hpp>

#include "PassTestSupport.h"
#include "compiler/loops/SplitChains.h"
#include "compiler/loops/Walk.h"

namespace texc::passtest {
namespace {

loops::Loop& innermostOf(loops::LoopProgram& p, size_t k) {
  loops::Loop* found = nullptr;
  loops::forEachInnermostLoop(p.kernels.at(k).body, [&](loops::Loop& l) { found = &l; });
  REQUIRE(found);
  return *found;
}

const loops::Expr& storedValue(loops::LoopProgram& p, size_t k) { return innermostOf(p, k).body.at(0).as<loops::Store>().value; }

TEST_CASE("split-chains: the chain estimate adds a transcendental's latency to what feeds it", "[passes][split-chains]") {
  LoweredLoops l = lowerOnly("chains",
                             "input x : f32[4, 1024]\n"
                             "output e = exp(x)\n"
                             "output s = x * sigmoid(x)\n"
                             "output g = 0.5 * x * (1 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)))\n"
                             "output l = log(abs(x) + 1)\n");
  CHECK(loops::chainLatency(storedValue(l.loops, 0)) == 45);                                 // load 5 + exp 40
  CHECK(loops::chainLatency(storedValue(l.loops, 1)) == 64);                                 // load 5 + sigmoid 55 + multiply 4
  CHECK(loops::chainLatency(storedValue(l.loops, 3)) == 63);                                 // load 5, abs 4, add 4, log 50
  CHECK(loops::chainLatency(storedValue(l.loops, 2)) >= loops::kThreePhaseChain);            // 5 multiplies and adds around tanh's 60
}

TEST_CASE("split-chains: long chains of exp, log, tanh, sin or cos that only store run in 2 or 3 phases, nothing else does", "[passes][split-chains]") {
  LoweredLoops l = lowerOnly("phases",
                             "input x : f32[4, 1024]\n"
                             "input y : f32[4, 100]\n"
                             "output e = exp(x)\n"                                                                        // chain 45: one loop
                             "output s = log(abs(x) + 1)\n"                                                              // 63: 2 phases
                             "output g = 0.5 * x * (1 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)))\n"               // 3 phases
                             "output t[i] = sum(j: tanh(x[i, j]))\n"                                                      // a sum: one loop
                             "output u = log(abs(y) + 1)\n"                                                               // 100 < one block
                             "output v = x * sigmoid(x)\n"                                                                // 64, but sigmoid
                             "output w = 0.5 * x * (1 + erf(x * 0.7071067811865476)) + tanh(x)\n");                         // erf beside tanh
  loops::LoopProgram& p = l.loops;
  REQUIRE(p.kernels.size() == 7);
  for (size_t k = 0; k < 7; ++k) CHECK(innermostOf(p, k).phases == 0);
  CHECK(loops::splitChains(p, 16) == 2);
  CHECK(innermostOf(p, 0).phases == 0);
  CHECK(innermostOf(p, 1).phases == 2);
  CHECK(innermostOf(p, 1).phaseBlock == loops::kPhaseBlock);
  CHECK(innermostOf(p, 2).phases == 3);
  CHECK(innermostOf(p, 3).phases == 0);
  CHECK(innermostOf(p, 4).phases == 0);
  CHECK(innermostOf(p, 5).phases == 0);
  CHECK(innermostOf(p, 6).phases == 0);
  CHECK(loops::printLoopProgram(p).find(" in 3 phases of 256\n") != std::string::npos);
  CHECK(loops::verifyLoopProgram(p).empty());

  LoweredLoops wide = lowerOnly("phases32", "input x : f32[4, 1024]\noutput g = 0.5 * x * (1 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)))\n");
  CHECK(loops::splitChains(wide.loops, 32) == 0);  // AVX-512's 32 registers: one loop

  // The random tester's variant (blocks of 4 iterations, tests/random/DiffTest.h) splits the
  // generator's short loops: its own test program's rows of 38.
  LoweredLoops shortRows = lowerOnly("phases4", "input x : f32[3, 38]\noutput s = sin(x) * x + 1\n");
  CHECK(loops::splitChains(shortRows.loops, 16) == 0);  // shorter than a block of 256
  CHECK(loops::splitChains(shortRows.loops, 16, 4) == 1);
  CHECK(innermostOf(shortRows.loops, 0).phaseBlock == 4);
}

TEST_CASE("split-chains: the verifier refuses phases on a loop that is not a vector loop", "[passes][split-chains]") {
  LoweredLoops l = lowerOnly("wrong", "input x : f32[4, 1024]\noutput s = log(abs(x) + 1)\n");
  loops::LoopProgram& p = l.loops;
  REQUIRE(loops::splitChains(p, 16) == 1);
  loops::forEachInnermostLoop(p.kernels.at(0).body, [](loops::Loop& lp) { lp.vectorize = false; });
  std::vector<std::string> problems = loops::verifyLoopProgram(p);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0] ==
        "kernel k0_s: loop i1 runs in 2 phases of 256, but phases need a vector loop without sum lanes, at least 2 of them and a block");
}

}  // namespace
}  // namespace texc::passtest
