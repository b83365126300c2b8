// The fuse-into-tiles pass (compiler/loops/FuseIntoTiles.cpp): a kernel that reads only what one
// block of a tiled contraction wrote runs inside that block.
//
//   - conv + scale/bias + 2x2 max pool, one image and a batch, pixel blocks of whole row pairs:
//     one kernel, the pool's nest at the end of the block loop, and outputs through the loop-IR
//     interpreter bit for bit against the nests as lowered (untiled, unfused);
//   - what it leaves apart, proved or not: overlapping pool windows (3x3, stride 2), pixel blocks
//     that split a window's rows, a consumer that reads the whole image, a consumer whose input
//     is also read by a later kernel;
//   - in the pipeline: --fuse=elementwise keeps the kernels apart, and the fusion decision that
//     `texc explain` prints says what happened.
#include <catch2/catch.hpp>

#include "LoopInterpreter.h"
#include "PassTestSupport.h"
#include "compiler/loops/FuseIntoTiles.h"
#include "compiler/loops/SinkUnitLoops.h"
#include "compiler/loops/TileContractions.h"
#include "compiler/loops/Walk.h"
#include "compiler/passes/Pipeline.h"

namespace texc::passtest {
namespace {

struct Fused {
  loops::LoopProgram program;
  std::vector<loops::TileFusion> fusions;
  std::string text;
};

// Lowers `text`, tiles it (kc and nc > 0: k blocks of kc and pixel blocks of nc columns; without
// k blocks a pixel block is one 16-column panel), sinks unit loops as the pipeline does, then
// fuses; checks the result verifies and computes exactly what the lowered nests do.
Fused tileAndFuse(const std::string& text, int64_t kc = 0, int64_t nc = 0) {
  LoweredLoops l = lowerOnly("fuse-into-tiles", text);
  Fused f{l.loops, {}, ""};
  loops::ScheduleOverrides o;
  if (kc > 0) o.kc = kc;
  if (nc > 0) o.nc = nc;
  REQUIRE(loops::tileContractions(f.program, avx2Machine(2), o) > 0);
  loops::sinkUnitLoops(f.program);
  f.fusions = loops::fuseIntoTiles(f.program);
  f.text = loops::printLoopProgram(f.program);
  INFO(f.text);
  for (const std::string& problem : loops::verifyLoopProgram(f.program)) FAIL_CHECK(problem);
  std::vector<std::vector<double>> want = interpretOnRandomInputs(l, l.loops, 3);
  std::vector<std::vector<double>> got = interpretOnRandomInputs(l, f.program, 3);
  for (int id : l.graph.outputs) CHECK(got[id] == want[id]);
  return f;
}

std::string convPool(int n, int c, int k, int h, int w, int window, int stride) {
  return fmt::format(
      "input I : f32[{0}, {1}, {3}, {4}]\ninput Wt : f32[{2}, {1}, 3, 3]\ninput scale : f32[{2}]\ninput bias : f32[{2}]\n"
      "conv[n, k, y < {3}, x < {4}] = sum(c, r, s: I[n, c, y + r - 1, x + s - 1] * Wt[k, c, r, s])\n"
      "sb[n, k, y, x] = conv[n, k, y, x] * scale[k] + bias[k]\n"
      "output pool[n, k, y < ({3} - {5}) / {6} + 1, x < ({4} - {5}) / {6} + 1] = max(dy < {5}, dx < {5}: sb[n, k, {6} * y + dy, {6} * x + dx])\n",
      n, c, k, h, w, window, stride);
}

}  // namespace

TEST_CASE("fuse-into-tiles: conv + scale/bias + 2x2 pool over one image becomes one kernel", "[passes][fuse-into-tiles]") {
  // 8 x 8 pixels in blocks of 16: two rows each, one pooled row.
  Fused f = tileAndFuse(convPool(1, 5, 7, 8, 8, 2, 2));
  INFO(f.text);
  REQUIRE(f.fusions.size() == 1);
  CHECK(f.fusions[0].producer == "sb");
  CHECK(f.fusions[0].consumer == "pool");
  CHECK(f.fusions[0].binding == "y = yx_c");
  REQUIRE(f.program.kernels.size() == 1);
  const loops::Kernel& k = f.program.kernels[0];
  CHECK(k.name == "k0_sb_pool");
  CHECK(k.outputBuffer >= 0);
  CHECK(f.program.buffers[k.outputBuffer].name == "pool");
  CHECK(k.schedule.find("pool fused per block (y = yx_c)") != std::string::npos);
  // The pool's nest closes the block loop's body, after the k blocks, reading the block's rows.
  CHECK(f.text.find("pool[0, k2, yx_c, x2] = acc") != std::string::npos);
  CHECK(f.text.find("sb[0, k2, (2 * yx_c + dy), (2 * x2 + dx)]") != std::string::npos);
}

TEST_CASE("fuse-into-tiles: a batch, two pooled rows per block", "[passes][fuse-into-tiles]") {
  // 2 images of 8 x 8 in k blocks of 9 and pixel blocks of 32: four rows, two pooled rows.
  Fused f = tileAndFuse(convPool(2, 3, 4, 8, 8, 2, 2), 9, 32);
  INFO(f.text);
  REQUIRE(f.fusions.size() == 1);
  CHECK(f.fusions[0].binding.find("= 2 * yx_c + ") != std::string::npos);
  CHECK(f.program.kernels.size() == 1);
}

TEST_CASE("fuse-into-tiles: what it leaves apart", "[passes][fuse-into-tiles]") {
  SECTION("overlapping windows: a 3x3 pool with stride 2 reads a row of the next block") {
    Fused f = tileAndFuse(convPool(1, 3, 4, 9, 8, 3, 2));
    CHECK(f.fusions.empty());
    CHECK(f.program.kernels.size() == 2);
  }
  SECTION("pixel blocks of 32 split the 12-pixel rows, and so the 2x2 windows") {
    Fused f = tileAndFuse(convPool(1, 3, 4, 12, 12, 2, 2), 9, 32);
    CHECK(f.fusions.empty());
    CHECK(f.program.kernels.size() == 2);
  }
  SECTION("a consumer that reads the whole image") {
    Fused f = tileAndFuse(
        "input I : f32[1, 3, 8, 8]\ninput Wt : f32[4, 3, 3, 3]\n"
        "conv[n, k, y < 8, x < 8] = sum(c, r, s: I[n, c, y + r - 1, x + s - 1] * Wt[k, c, r, s])\n"
        "output m[n, k] = max(y, x: conv[n, k, y, x])\n");
    CHECK(f.fusions.empty());
  }
  SECTION("the intermediate is read again by a later kernel") {
    Fused f = tileAndFuse(
        "input I : f32[1, 3, 8, 8]\ninput Wt : f32[4, 3, 3, 3]\n"
        "conv[n, k, y < 8, x < 8] = sum(c, r, s: I[n, c, y + r - 1, x + s - 1] * Wt[k, c, r, s])\n"
        "output p[n, k, y < 4, x < 4] = max(dy < 2, dx < 2: conv[n, k, 2 * y + dy, 2 * x + dx])\n"
        "output q[n, k, y, x] = conv[n, k, y, x] * 2\n");
    CHECK(f.fusions.empty());
  }
}

TEST_CASE("fuse-into-tiles: a consumer whose stores do not name the bound loop stays apart", "[passes][fuse-into-tiles]") {
  // Blocks run on different threads: if the pool stored every row to row 0, two blocks would
  // store the same elements. Lowering never makes such a nest; a hand-edited one checks the rule.
  LoweredLoops l = lowerOnly("fuse-into-tiles", convPool(1, 5, 7, 8, 8, 2, 2));
  loops::LoopProgram p = l.loops;
  REQUIRE(loops::tileContractions(p, avx2Machine(2), {}) > 0);
  loops::sinkUnitLoops(p);
  loops::LoopProgram unchanged = p;
  REQUIRE(loops::fuseIntoTiles(unchanged).size() == 1);  // as it is, it fuses
  REQUIRE(p.kernels.size() == 2);
  loops::forEachStmt(p.kernels[1].body, [](loops::Stmt& st) {
    if (auto* store = st.getIf<loops::Store>()) store->index[2] = IndexExpr::makeConst(0);
  });
  CHECK(loops::fuseIntoTiles(p).empty());
  CHECK(p.kernels.size() == 2);
}

TEST_CASE("fuse-into-tiles: in the pipeline, with --fuse=all only, and explained", "[passes][fuse-into-tiles]") {
  auto kernelsAfter = [](FuseMode mode, std::vector<FusionDecision>* decisions) {
    ProgramOptions po;
    po.fuse = mode;
    std::unique_ptr<Session> s = startSession(inlineProgram("pipeline", convPool(1, 4, 8, 8, 8, 2, 2), po));
    REQUIRE(s->runThroughPassManager(buildPipeline(s->state().options, Stage::Loops), Instrumentation{}));
    if (decisions) *decisions = s->state().fusionDecisions;
    return s->state().loops->kernels.size();
  };
  std::vector<FusionDecision> decisions;
  CHECK(kernelsAfter(FuseMode::All, &decisions) == 1);
  bool explained = false;
  for (const FusionDecision& d : decisions)
    if (d.producer == "sb" && d.fused && d.reason.find("fuse-into-tiles") != std::string::npos) explained = true;
  CHECK(explained);
  CHECK(kernelsAfter(FuseMode::Elementwise, nullptr) > 1);
}

}  // namespace texc::passtest
