// The loop transformations (compiler/loops/transforms/) and the schedule-loops pass that applies
// a schedule file's `loops` lines:
//
//   - each transformation on a lowered kernel, printed before and after and compared with the
//     expected text, then run by the loop-IR interpreter against the untransformed kernel (bit
//     for bit, except a reordered reduction, whose sum order changes);
//   - tails: extents the factors do not divide (13 = 3 x 4 + 1, 10 = 2 x 4 + 2);
//   - every refusal (unknown or ambiguous loop, illegal reorder, parallel or vector mark in the
//     wrong place, a tiled kernel) leaves the kernel unchanged and says why;
//   - the schedule file's `loops` syntax and its errors, and the pass's usage errors.
#include <catch2/catch.hpp>

#include "LoopInterpreter.h"
#include "PassTestSupport.h"
#include "compiler/loops/PerfectNest.h"
#include "compiler/loops/Walk.h"
#include "compiler/loops/transforms/LoopTransforms.h"
#include "compiler/passes/Pipeline.h"

namespace texc::passtest {
namespace {

using Lowered = LoweredLoops;

// The loop program of `text` as the pipeline leaves it before codegen (tiled with `tile`).
Lowered lower(const std::string& text, bool tile = false) {
  std::unique_ptr<Session> s = startSession(inlineProgram("transforms", text));
  s->state().options.tile = tile;
  // The steps below run on the loops as the passes leave them; in the pipeline the schedule's
  // steps come before nonpositive-exp and sum-lanes, whose marks name the loop structure they
  // were made for (an unrolled exp loop no longer has the form the verifier re-checks, an
  // unrolled sum's loop fewer terms than its lanes).
  s->state().options.disabledPasses.insert("nonpositive-exp");
  s->state().options.disabledPasses.insert("sum-lanes");
  bool ok = s->runThroughPassManager(buildPipeline(s->state().options, Stage::Loops), Instrumentation{});
  INFO(s->failure());
  REQUIRE(ok);
  return {*s->state().graph, *s->state().loops};
}

std::vector<std::vector<double>> run(const Lowered& l, const loops::LoopProgram& lp) { return interpretOnRandomInputs(l, lp, 7); }

// The printed kernel `index` of `p` (from its `kernel` line to the next kernel).
std::string kernelText(const loops::LoopProgram& p, size_t index) {
  std::string all = loops::printLoopProgram(p);
  size_t at = all.find("\nkernel " + p.kernels[index].name + " ");
  REQUIRE(at != std::string::npos);
  size_t end = all.find("\nkernel ", at + 1);
  return all.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
}

// The program verifies and computes what `before` computes: exactly, or within `relTol` of it.
void checkSameResults(const Lowered& before, const loops::LoopProgram& after, double relTol = 0) {
  std::vector<std::string> problems = loops::verifyLoopProgram(after);
  INFO(loops::printLoopProgram(after));
  for (const std::string& p : problems) FAIL_CHECK(p);
  REQUIRE(problems.empty());
  std::vector<std::vector<double>> want = run(before, before.loops);
  std::vector<std::vector<double>> got = run(before, after);
  for (int id : before.graph.outputs) {
    if (relTol == 0) {
      CHECK(got[id] == want[id]);
      continue;
    }
    REQUIRE(got[id].size() == want[id].size());
    for (size_t i = 0; i < got[id].size(); ++i) CHECK(got[id][i] == Approx(want[id][i]).epsilon(relTol));
  }
}

const char* const kElementwise =
    "input X : f32[13, 10]\ninput b : f32[10]\noutput Y[i, j] = X[i, j] * 2 + b[j]\noutput s[i] = sum(j: X[i, j])\n";

}  // namespace

TEST_CASE("loop transforms: split, with and without a tail", "[passes][transforms]") {
  Lowered l = lower(kElementwise);
  SECTION("the inner loop by 4: 10 = 2 x 4 + 2, guarded; the inner loop keeps the vector mark") {
    loops::LoopProgram p = l.loops;
    REQUIRE(loops::splitLoop(p.kernels[0], "j", 4) == "");
    CHECK(kernelText(p, 0) ==
          "kernel k0_Y (f32, parallel over 13)\n"
          "  for i < 13 parallel\n"
          "    for j.o < 3\n"
          "      for j.i < 4 vector\n"
          "        if 0 <= (4 * j.o + j.i) < 10  # otherwise the term is skipped\n"
          "          Y[i, (4 * j.o + j.i)] = ((X[i, (4 * j.o + j.i)] * 2) + b[(4 * j.o + j.i)])\n");
    checkSameResults(l, p);
  }
  SECTION("the parallel loop by 4: 13 = 3 x 4 + 1; the outer loop stays parallel, over 4 blocks") {
    loops::LoopProgram p = l.loops;
    REQUIRE(loops::splitLoop(p.kernels[1], "i", 4) == "");
    CHECK(kernelText(p, 1) ==
          "kernel k1_s (f32, parallel over 4)\n"
          "  for i.o < 4 parallel\n"
          "    for i.i < 4 vector\n"
          "      if 0 <= (4 * i.o + i.i) < 13  # otherwise the term is skipped\n"
          "        acc0 = 0  # sum\n"
          "        for j < 10\n"
          "          acc0 += X[(4 * i.o + i.i), j]\n"
          "        s[(4 * i.o + i.i)] = acc0\n");
    CHECK(p.kernels[1].parallelExtent == 4);
    checkSameResults(l, p);
  }
  SECTION("a factor that divides the extent needs no guard") {
    loops::LoopProgram p = l.loops;
    REQUIRE(loops::splitLoop(p.kernels[0], "j", 5) == "");
    CHECK(kernelText(p, 0) ==
          "kernel k0_Y (f32, parallel over 13)\n"
          "  for i < 13 parallel\n"
          "    for j.o < 2\n"
          "      for j.i < 5 vector\n"
          "        Y[i, (5 * j.o + j.i)] = ((X[i, (5 * j.o + j.i)] * 2) + b[(5 * j.o + j.i)])\n");
    checkSameResults(l, p);
  }
  SECTION("a variable used as a value is replaced too") {
    Lowered v = lower("input X : f32[6, 7]\noutput Y[i, j] = X[i, j] + j\n");
    loops::LoopProgram p = v.loops;
    REQUIRE(loops::splitLoop(p.kernels[0], "j", 3) == "");
    CHECK(kernelText(p, 0).find("float((3 * j.o + j.i))") != std::string::npos);
    checkSameResults(v, p);
  }
  SECTION("refusals leave the kernel as it was") {
    loops::LoopProgram p = l.loops;
    CHECK(loops::splitLoop(p.kernels[0], "j", 0) == "the factor must be >= 1, got 0");
    CHECK(loops::splitLoop(p.kernels[0], "j", 11) == "the factor 11 is larger than the loop's extent 10");
    CHECK(loops::splitLoop(p.kernels[0], "k", 2) == "kernel k0_Y has no loop over 'k' (its loops: i, j)");
    CHECK(loops::printLoopProgram(p) == loops::printLoopProgram(l.loops));
  }
}

TEST_CASE("loop transforms: reorder", "[passes][transforms]") {
  Lowered l = lower(kElementwise);
  SECTION("swapping the two loops: the parallel mark stays outermost, the vector mark innermost") {
    loops::LoopProgram p = l.loops;
    REQUIRE(loops::reorderLoops(p.kernels[0], {"j", "i"}) == "");
    CHECK(kernelText(p, 0) ==
          "kernel k0_Y (f32, parallel over 10)\n"
          "  for j < 10 parallel\n"
          "    for i < 13 vector\n"
          "      Y[i, j] = ((X[i, j] * 2) + b[j])\n");
    checkSameResults(l, p);
  }
  SECTION("split then reorder: a guard moves inside the innermost loop it reads") {
    loops::LoopProgram p = l.loops;
    REQUIRE(loops::splitLoop(p.kernels[0], "i", 4) == "");
    REQUIRE(loops::reorderLoops(p.kernels[0], {"i.o", "j", "i.i"}) == "");
    CHECK(kernelText(p, 0) ==
          "kernel k0_Y (f32, parallel over 4)\n"
          "  for i.o < 4 parallel\n"
          "    for j < 10\n"
          "      for i.i < 4 vector\n"
          "        if 0 <= (4 * i.o + i.i) < 13  # otherwise the term is skipped\n"
          "          Y[(4 * i.o + i.i), j] = ((X[(4 * i.o + i.i), j] * 2) + b[j])\n");
    checkSameResults(l, p);
  }
  SECTION("two splits into blocks: each guard goes just inside the innermost loop it reads") {
    loops::LoopProgram p = l.loops;
    REQUIRE(loops::splitLoop(p.kernels[0], "i", 4) == "");
    REQUIRE(loops::splitLoop(p.kernels[0], "j", 4) == "");
    REQUIRE(loops::reorderLoops(p.kernels[0], {"i.o", "j.o", "j.i", "i.i"}) == "");
    CHECK(kernelText(p, 0) ==
          "kernel k0_Y (f32, parallel over 4)\n"
          "  for i.o < 4 parallel\n"
          "    for j.o < 3\n"
          "      for j.i < 4\n"
          "        if 0 <= (4 * j.o + j.i) < 10  # otherwise the term is skipped\n"
          "          for i.i < 4 vector\n"
          "            if 0 <= (4 * i.o + i.i) < 13  # otherwise the term is skipped\n"
          "              Y[(4 * i.o + i.i), (4 * j.o + j.i)] = ((X[(4 * i.o + i.i), (4 * j.o + j.i)] * 2) + b[(4 * j.o + j.i)])\n");
    checkSameResults(l, p);
  }
  SECTION("a reduction over the whole nest may be reordered: the accumulator is only updated inside") {
    Lowered r = lower("input X : f32[7, 5]\noutput t = sum(i, j: X[i, j])\n");
    loops::LoopProgram p = r.loops;
    REQUIRE(loops::reorderLoops(p.kernels[0], {"j", "i"}) == "");
    CHECK(kernelText(p, 0) ==
          "kernel k0_t (f32)\n"
          "  acc0 = 0  # sum\n"
          "  for j < 5\n"
          "    for i < 7\n"
          "      acc0 += X[i, j]\n"
          "  t = acc0\n");
    checkSameResults(r, p, 1e-12);  // the same terms, summed in another order
  }
  SECTION("not a perfect nest: the row loop also holds the accumulator and the store") {
    loops::LoopProgram p = l.loops;
    CHECK(loops::reorderLoops(p.kernels[1], {"j", "i"}) ==
          "the loops are not a perfect nest: the body of loop i holds 3 statements");
    CHECK(loops::reorderLoops(p.kernels[0], {"i", "i"}) == "i is named twice");
    CHECK(loops::printLoopProgram(p) == loops::printLoopProgram(l.loops));
  }
}

// Kernels lowering never makes, built by hand, for the reorder rule's refusals.
TEST_CASE("loop transforms: reorder refuses nests whose iterations depend on each other", "[passes][transforms]") {
  Lowered l = lower("input X : f32[4, 4]\noutput Y[i, j] = X[i, j]\n");
  loops::LoopProgram base = l.loops;
  loops::Kernel& k = base.kernels[0];
  // The nest i, j around the store.
  auto nestOf = [](loops::Kernel& kernel) { return loops::perfectNest(kernel.body[0]); };
  loops::Stmt& store = loops::innermostBody(nestOf(k))[0];
  REQUIRE(store.is<loops::Store>());
  const int Y = store.as<loops::Store>().buffer;

  SECTION("a store that does not use a loop's variable") {
    loops::Kernel bad = k;
    loops::innermostBody(nestOf(bad))[0].as<loops::Store>().index[1] = IndexExpr::makeConst(0);
    CHECK(loops::reorderLoops(bad, {"j", "i"}) ==
          "a store inside the nest does not index with j: several iterations write one element, and their order "
          "decides which value stays");
  }
  SECTION("a load of the stored buffer at another index (a transpose in place)") {
    loops::Kernel bad = k;
    loops::Expr load;
    load.kind = loops::ExprKind::Load;
    load.buffer = Y;
    std::vector<loops::Loop*> nest = nestOf(bad);
    load.index = {IndexExpr::makeVar(nest[1]->var), IndexExpr::makeVar(nest[0]->var)};
    loops::innermostBody(nest)[0].as<loops::Store>().value = load;
    CHECK(loops::reorderLoops(bad, {"j", "i"}) ==
          "the nest reads the buffer it writes at another index: an iteration may read what another one wrote");
  }
  SECTION("an accumulator carried across the iterations and read inside them (a running sum)") {
    loops::Kernel bad = k;
    bad.numAccs = 1;
    std::vector<loops::Loop*> nest = nestOf(bad);
    loops::Store& st = loops::innermostBody(nest)[0].as<loops::Store>();
    loops::AccInit init;
    init.acc = 0;
    loops::AccUpdate update;
    update.acc = 0;
    update.value = st.value;
    loops::Expr read;
    read.kind = loops::ExprKind::AccRead;
    read.acc = 0;
    st.value = read;
    nest[1]->body.insert(nest[1]->body.begin(), update);
    nest[0]->parallel = false;
    bad.parallelExtent = 0;
    bad.body.insert(bad.body.begin(), init);
    CHECK(loops::verifyLoopProgram(loops::LoopProgram{base.buffers, {bad}}).empty());
    CHECK(loops::reorderLoops(bad, {"j", "i"}) ==
          "accumulator acc0 is carried across the nest's iterations and read inside it");
  }
}

TEST_CASE("loop transforms: unroll", "[passes][transforms]") {
  Lowered l = lower(kElementwise);
  SECTION("by 4 with a tail: 10 = 2 x 4 + 2 iterations, the last two as copies after the loop") {
    loops::LoopProgram p = l.loops;
    REQUIRE(loops::unrollLoop(p.kernels[0], "j", 4) == "");
    CHECK(kernelText(p, 0) ==
          "kernel k0_Y (f32, parallel over 13)\n"
          "  for i < 13 parallel\n"
          "    for j < 2 vector\n"
          "      Y[i, 4 * j] = ((X[i, 4 * j] * 2) + b[4 * j])\n"
          "      Y[i, (4 * j + 1)] = ((X[i, (4 * j + 1)] * 2) + b[(4 * j + 1)])\n"
          "      Y[i, (4 * j + 2)] = ((X[i, (4 * j + 2)] * 2) + b[(4 * j + 2)])\n"
          "      Y[i, (4 * j + 3)] = ((X[i, (4 * j + 3)] * 2) + b[(4 * j + 3)])\n"
          "    Y[i, 8] = ((X[i, 8] * 2) + b[8])\n"
          "    Y[i, 9] = ((X[i, 9] * 2) + b[9])\n");
    checkSameResults(l, p);
  }
  SECTION("a reduction loop by 3 (10 = 3 x 3 + 1): the terms are added in the same order") {
    loops::LoopProgram p = l.loops;
    REQUIRE(loops::unrollLoop(p.kernels[1], "j", 3) == "");
    CHECK(kernelText(p, 1) ==
          "kernel k1_s (f32, parallel over 13)\n"
          "  for i < 13 parallel vector\n"
          "    acc0 = 0  # sum\n"
          "    for j < 3\n"
          "      acc0 += X[i, 3 * j]\n"
          "      acc0 += X[i, (3 * j + 1)]\n"
          "      acc0 += X[i, (3 * j + 2)]\n"
          "    acc0 += X[i, 9]\n"
          "    s[i] = acc0\n");
    checkSameResults(l, p);
  }
  SECTION("fully, a short loop") {
    Lowered s = lower("input X : f32[5, 3]\noutput Y[i, j] = X[i, j] + 1\n");
    loops::LoopProgram p = s.loops;
    REQUIRE(loops::unrollLoop(p.kernels[0], "j", 0) == "");
    CHECK(kernelText(p, 0) ==
          "kernel k0_Y (f32, parallel over 5)\n"
          "  for i < 5 parallel\n"
          "    Y[i, 0] = (X[i, 0] + 1)\n"
          "    Y[i, 1] = (X[i, 1] + 1)\n"
          "    Y[i, 2] = (X[i, 2] + 1)\n");
    checkSameResults(s, p);
    SECTION("the parallel loop, fully: the kernel then runs on one thread") {
      REQUIRE(loops::unrollLoop(p.kernels[0], "i", 0) == "");
      CHECK(p.kernels[0].parallelExtent == 0);
      CHECK(kernelText(p, 0).rfind("kernel k0_Y (f32)\n  Y[0, 0] = (X[0, 0] + 1)\n", 0) == 0);
      checkSameResults(s, p);
    }
  }
  SECTION("the parallel loop by a factor that divides its extent; the parallel extent follows") {
    Lowered s = lower("input X : f32[12, 3]\noutput Y[i, j] = X[i, j] + 1\n");
    loops::LoopProgram p = s.loops;
    REQUIRE(loops::unrollLoop(p.kernels[0], "i", 3) == "");
    CHECK(p.kernels[0].parallelExtent == 4);
    checkSameResults(s, p);
  }
  SECTION("refusals") {
    loops::LoopProgram p = l.loops;
    CHECK(loops::unrollLoop(p.kernels[0], "i", 4) ==
          "i is the parallel loop and 4 does not divide its extent 13 (the tail would run in every thread's chunk); "
          "split it and unroll the inner loop");
    CHECK(loops::unrollLoop(p.kernels[0], "j", 1) == "the factor must be in 2..64, got 1");
    CHECK(loops::unrollLoop(p.kernels[0], "j", 12) ==
          "the factor 12 is larger than the loop's extent 10; unroll it fully instead");
    Lowered big = lower("input X : f32[100]\noutput Y = X + 1\n");
    loops::LoopProgram q = big.loops;
    CHECK(loops::unrollLoop(q.kernels[0], "i0", 0) ==
          "a full unroll needs an extent of at most 64, and the loop has 100; give a factor");
    CHECK(loops::printLoopProgram(p) == loops::printLoopProgram(l.loops));
  }
  SECTION("copies make a name ambiguous: transform inner loops before unrolling outer ones") {
    loops::LoopProgram p = l.loops;
    REQUIRE(loops::splitLoop(p.kernels[1], "i", 2) == "");
    REQUIRE(loops::unrollLoop(p.kernels[1], "i.i", 2) == "");
    CHECK(loops::splitLoop(p.kernels[1], "j", 2) ==
          "kernel k1_s has 2 loops over 'j' (copies made by unroll, or one per reduction); transform it before unrolling");
    checkSameResults(l, p);
  }
}

TEST_CASE("loop transforms: parallel and vectorize marks", "[passes][transforms]") {
  Lowered l = lower(kElementwise);
  SECTION("only a top-level loop can be parallel") {
    loops::LoopProgram p = l.loops;
    CHECK(loops::parallelizeLoop(p.kernels[0], "j") ==
          "only a loop at the kernel's top level can be parallel (the runtime calls the kernel once per chunk "
          "of that loop); reorder it outermost first");
    REQUIRE(loops::parallelizeLoop(p.kernels[0], "") == "");
    CHECK(p.kernels[0].parallelExtent == 0);
    CHECK(kernelText(p, 0).rfind("kernel k0_Y (f32)\n  for i < 13\n", 0) == 0);
    REQUIRE(loops::parallelizeLoop(p.kernels[0], "i") == "");
    CHECK(p.kernels[0].parallelExtent == 13);
    checkSameResults(l, p);
  }
  SECTION("a loop carrying a reduction cannot be parallel") {
    Lowered r = lower("input X : f32[7, 5]\noutput t = sum(i, j: X[i, j])\n");
    loops::LoopProgram p = r.loops;
    CHECK(loops::parallelizeLoop(p.kernels[0], "i") ==
          "its iterations carry accumulator acc0 (a reduction over i), which threads cannot share");
  }
  SECTION("nothing outside the parallel loop may store: every thread would run it") {
    loops::LoopProgram p = l.loops;
    REQUIRE(loops::parallelizeLoop(p.kernels[0], "") == "");
    REQUIRE(loops::unrollLoop(p.kernels[0], "i", 4) == "");  // 13 = 3 x 4 + 1: a tail copy at the top level
    CHECK(loops::parallelizeLoop(p.kernels[0], "i") ==
          "the kernel stores outside that loop too (every thread would run those stores)");
    checkSameResults(l, p);
  }
  SECTION("vector marks: only the innermost loop around the stores") {
    loops::LoopProgram p = l.loops;
    CHECK(loops::vectorizeLoop(p.kernels[0], "i", true) ==
          "only the innermost loop around its stores can be vectorised, and i holds a loop that stores");
    // Off marks the loop scalar (LLVM must not widen it); on again, vector.
    REQUIRE(loops::vectorizeLoop(p.kernels[0], "j", false) == "");
    CHECK(kernelText(p, 0).find("for j < 10 scalar\n") != std::string::npos);
    // A split passes the mark to the inner loop, a reorder to the new innermost one.
    loops::LoopProgram q = p;
    REQUIRE(loops::splitLoop(q.kernels[0], "j", 4) == "");
    CHECK(kernelText(q, 0).find("for j.o < 3\n") != std::string::npos);
    CHECK(kernelText(q, 0).find("for j.i < 4 scalar\n") != std::string::npos);
    REQUIRE(loops::reorderLoops(q.kernels[0], {"j.o", "i", "j.i"}) == "");
    CHECK(kernelText(q, 0).find("for i < 13\n") != std::string::npos);
    CHECK(kernelText(q, 0).find("for j.i < 4 scalar\n") != std::string::npos);
    checkSameResults(l, q);
    REQUIRE(loops::vectorizeLoop(p.kernels[0], "j", true) == "");
    CHECK(kernelText(p, 0) == kernelText(l.loops, 0));
    // The row loop of a row sum holds only the reduction's loop: it may stay vectorised.
    REQUIRE(loops::vectorizeLoop(p.kernels[1], "i", true) == "");
  }
}

TEST_CASE("loop IR verifier: the parallel mark and the kernel's parallel extent agree, vector and scalar exclude each other, only vector loops interleave", "[passes][transforms]") {
  Lowered l = lower(kElementwise);
  CHECK(loops::verifyLoopProgram(l.loops).empty());
  loops::LoopProgram p = l.loops;
  p.kernels[0].parallelExtent = 7;
  loops::perfectNest(p.kernels[0].body[0])[1]->parallel = true;
  CHECK(loops::verifyLoopProgram(p) ==
        std::vector<std::string>{"kernel k0_Y: parallel loop j below the kernel's top level",
                                 "kernel k0_Y: parallel over 7, but its parallel loop has extent 13"});
  loops::LoopProgram both = l.loops;
  loops::perfectNest(both.kernels[0].body[0])[1]->scalar = true;  // j is already vector
  CHECK(loops::verifyLoopProgram(both) == std::vector<std::string>{"kernel k0_Y: loop j is marked both vector and scalar"});
  // Interleaving (interleave-loops) is a count of vectors: only on a vector loop.
  loops::LoopProgram interleaved = l.loops;
  loops::perfectNest(interleaved.kernels[0].body[0])[1]->interleave = 4;
  CHECK(loops::verifyLoopProgram(interleaved).empty());
  loops::perfectNest(interleaved.kernels[0].body[0])[0]->interleave = 2;  // i is not a vector loop
  CHECK(loops::verifyLoopProgram(interleaved) == std::vector<std::string>{"kernel k0_Y: loop i interleaves 2 vectors but is not a vector loop"});
}

TEST_CASE("loop transforms: the block loops around a tiled kernel's packs and tiles", "[passes][transforms]") {
  // 40x50x24 on haswell: `for i_c < 1 parallel { pack A; for j_t < 4 { pack B; for i_t < 7 { tile 6x16 } } }`.
  Lowered l = lower("input A : f32[40, 24]\ninput B : f32[24, 50]\noutput C[i, j] = sum(k: A[i, k] * B[k, j])\n", true);
  REQUIRE(loops::printLoopProgram(l.loops).find("tile 6x16") != std::string::npos);

  // Substitution reaches the tiles' and packs' bases, so splitting or unrolling the loops that
  // feed them computes the same C.
  loops::LoopProgram split = l.loops;
  REQUIRE(loops::splitLoop(split.kernels[0], "j_t", 3) == "");
  CHECK(kernelText(split, 0).find("pack s1[k < 24][j < 16] = B[k, j]  # j = 16 * (3 * j_t.o + j_t.i) + 0..15, 0 past 50") !=
        std::string::npos);
  checkSameResults(l, split);
  loops::LoopProgram unrolled = l.loops;
  REQUIRE(loops::unrollLoop(unrolled.kernels[0], "i_t", 2) == "");
  checkSameResults(l, unrolled);
  loops::LoopProgram serial = l.loops;
  REQUIRE(loops::parallelizeLoop(serial.kernels[0], "") == "");
  checkSameResults(l, serial);

  // What stays illegal: widening a loop around a tile, reordering across a pack.
  loops::LoopProgram p = l.loops;
  const std::string before = kernelText(p, 0);
  CHECK(loops::vectorizeLoop(p.kernels[0], "j_t", true) != "");
  CHECK(loops::reorderLoops(p.kernels[0], {"i_t", "j_t"}) != "");
  CHECK(kernelText(p, 0) == before);
}

TEST_CASE("loop transforms: the lecture's steps on an untiled matmul, each computing the same C", "[passes][transforms]") {
  Lowered l = lower("input A : f32[13, 7]\ninput B : f32[7, 10]\noutput C[i, j] = sum(k: A[i, k] * B[k, j])\n");
  loops::LoopProgram p = l.loops;
  loops::Kernel& k = p.kernels[0];
  REQUIRE(loops::splitLoop(k, "j", 4) == "");
  REQUIRE(loops::reorderLoops(k, {"j.o", "i", "j.i"}) == "");
  REQUIRE(loops::unrollLoop(k, "k", 0) == "");
  REQUIRE(loops::splitLoop(k, "i", 3) == "");
  REQUIRE(loops::unrollLoop(k, "i.i", 3) == "");
  CHECK(k.parallelExtent == 3);
  checkSameResults(l, p);
}

const char* const kMatmulTails = "input A : f32[13, 7]\ninput B : f32[7, 10]\noutput C[i, j] = sum(k: A[i, k] * B[k, j])\n";

TEST_CASE("loop transforms: register_block turns a contraction's two loops into register tiles", "[passes][transforms]") {
  Lowered l = lower(kMatmulTails);
  loops::LoopProgram p = l.loops;
  loops::Kernel& k = p.kernels[0];
  // 13 = 2 x 6 + 1 rows, 10 = 8 + 2 columns: the last tile of each loop reaches past the extent.
  REQUIRE(loops::registerBlock(p, k, "i", "j", 6, 8) == "");
  CHECK(kernelText(p, 0) ==
        "kernel k0_C (f32, parallel over 3)\n"
        "  for i_t < 3 parallel\n"
        "    for j_t < 2\n"
        "      tile 6x8: i = 6 * i_t + 0..5 (< 13), j = 8 * j_t + 0..7 (< 10)\n"
        "        acc0 = sum(k < 7) A[i, k] * B[k, j]  # 6x8 accumulators in registers; the edge's tile multiplies 1 row only\n"
        "        C[i, j] = acc0\n");
  checkSameResults(l, p);

  // Columns outer: the tile loops keep the nest's order.
  loops::LoopProgram q = l.loops;
  REQUIRE(loops::reorderLoops(q.kernels[0], {"j", "i"}) == "");
  REQUIRE(loops::registerBlock(q, q.kernels[0], "i", "j", 4, 16) == "");
  CHECK(kernelText(q, 0) ==
        "kernel k0_C (f32, parallel over 1)\n"
        "  for j_t < 1 parallel\n"
        "    for i_t < 4\n"
        "      tile 4x16: i = 4 * i_t + 0..3 (< 13), j = 16 * j_t + 0..15 (< 10)\n"
        "        acc0 = sum(k < 7) A[i, k] * B[k, j]  # 4x16 accumulators in registers; the edge's tile multiplies 1 row only\n"
        "        C[i, j] = acc0\n");
  checkSameResults(l, q);
}

TEST_CASE("loop transforms: pack copies a register tile's operand into scratch", "[passes][transforms]") {
  Lowered l = lower(kMatmulTails);
  SECTION("A per row of tiles, all of B before the nest") {
    loops::LoopProgram p = l.loops;
    loops::Kernel& k = p.kernels[0];
    REQUIRE(loops::registerBlock(p, k, "i", "j", 6, 8) == "");
    REQUIRE(loops::packOperand(k, loops::PackedOperand::A, "i_t") == "");
    REQUIRE(loops::packOperand(k, loops::PackedOperand::B, "") == "");
    CHECK(kernelText(p, 0) ==
          "kernel k0_C (f32, parallel over 3, scratch s0[42], scratch s1[112])\n"
          "  pack s1[k < 7][j < 16 in panels of 8] = B[k, j]  # j = 0..15, 0 past 10\n"
          "  for i_t < 3 parallel\n"
          "    pack s0[i < 6 in panels of 6][k < 7] = A[i, k]  # i = 6 * i_t + 0..5, clamped below 13\n"
          "    for j_t < 2\n"
          "      tile 6x8: i = 6 * i_t + 0..5 (< 13), j = 8 * j_t + 0..7 (< 10)\n"
          "        acc0 = sum(k < 7) s0[i][k] * s1[k][8 * j_t + j]  # 6x8 accumulators in registers; the edge's tile multiplies 1 row only\n"
          "        C[i, j] = acc0\n");
    checkSameResults(l, p);
  }
  SECTION("B per column of tiles, all of A before the nest") {
    loops::LoopProgram p = l.loops;
    loops::Kernel& k = p.kernels[0];
    REQUIRE(loops::reorderLoops(k, {"j", "i"}) == "");
    REQUIRE(loops::registerBlock(p, k, "i", "j", 6, 8) == "");
    REQUIRE(loops::packOperand(k, loops::PackedOperand::B, "j_t") == "");
    REQUIRE(loops::packOperand(k, loops::PackedOperand::A, "") == "");
    CHECK(kernelText(p, 0) ==
          "kernel k0_C (f32, parallel over 2, scratch s0[56], scratch s1[126])\n"
          "  pack s1[i < 18 in panels of 6][k < 7] = A[i, k]  # i = 0..17, clamped below 13\n"
          "  for j_t < 2 parallel\n"
          "    pack s0[k < 7][j < 8] = B[k, j]  # j = 8 * j_t + 0..7, 0 past 10\n"
          "    for i_t < 3\n"
          "      tile 6x8: i = 6 * i_t + 0..5 (< 13), j = 8 * j_t + 0..7 (< 10)\n"
          "        acc0 = sum(k < 7) s1[6 * i_t + i][k] * s0[k][j]  # 6x8 accumulators in registers; the edge's tile multiplies 1 row only\n"
          "        C[i, j] = acc0\n");
    checkSameResults(l, p);
  }
  SECTION("one tile's block at the innermost loop") {
    loops::LoopProgram p = l.loops;
    loops::Kernel& k = p.kernels[0];
    REQUIRE(loops::registerBlock(p, k, "i", "j", 5, 4) == "");
    REQUIRE(loops::packOperand(k, loops::PackedOperand::B, "j_t") == "");
    REQUIRE(loops::packOperand(k, loops::PackedOperand::A, "j_t") == "");
    checkSameResults(l, p);
  }
}

TEST_CASE("loop transforms: register_block keeps a fused epilogue", "[passes][transforms]") {
  Lowered l = lower("input A : f32[9, 6]\ninput B : f32[6, 11]\ninput c : f32[11]\n"
                    "output C[i, j] = max(sum(k: A[i, k] * B[k, j]) + c[j], 0)\n");
  loops::LoopProgram p = l.loops;
  loops::Kernel& k = p.kernels[0];
  REQUIRE(loops::registerBlock(p, k, "i", "j", 4, 8) == "");
  REQUIRE(loops::packOperand(k, loops::PackedOperand::B, "") == "");
  CHECK(kernelText(p, 0) ==
        "kernel k0_C (f32, parallel over 3, scratch s0[96])\n"
        "  pack s0[k < 6][j < 16 in panels of 8] = B[k, j]  # j = 0..15, 0 past 11\n"
        "  for i_t < 3 parallel\n"
        "    for j_t < 2\n"
        "      tile 4x8: i = 4 * i_t + 0..3 (< 9), j = 8 * j_t + 0..7 (< 11)\n"
        "        acc0 = sum(k < 6) A[i, k] * s0[k][8 * j_t + j]  # 4x8 accumulators in registers; the edge's tile multiplies 1 row only\n"
        "        C[i, j] = max((acc0 + c[j]), 0)\n");
  checkSameResults(l, p);
}

TEST_CASE("loop transforms: a batched contraction packed per batch", "[passes][transforms]") {
  Lowered l = lower("input P : f32[3, 11, 5]\ninput Q : f32[3, 5, 9]\noutput R[b, i, j] = sum(k: P[b, i, k] * Q[b, k, j])\n");
  loops::LoopProgram p = l.loops;
  loops::Kernel& k = p.kernels[0];
  REQUIRE(loops::registerBlock(p, k, "i", "j", 4, 8) == "");
  REQUIRE(loops::packOperand(k, loops::PackedOperand::A, "b") == "");
  REQUIRE(loops::packOperand(k, loops::PackedOperand::B, "i_t") == "");
  CHECK(kernelText(p, 0) ==
        "kernel k0_R (f32, parallel over 3, scratch s0[60], scratch s1[80])\n"
        "  for b < 3 parallel\n"
        "    pack s0[i < 12 in panels of 4][k < 5] = P[b, i, k]  # i = 0..11, clamped below 11\n"
        "    for i_t < 3\n"
        "      pack s1[k < 5][j < 16 in panels of 8] = Q[b, k, j]  # j = 0..15, 0 past 9\n"
        "      for j_t < 2\n"
        "        tile 4x8: i = 4 * i_t + 0..3 (< 11), j = 8 * j_t + 0..7 (< 9)\n"
        "          acc0 = sum(k < 5) s0[4 * i_t + i][k] * s1[k][8 * j_t + j]  # 4x8 accumulators in registers; the edge's tile multiplies 3 rows only\n"
        "          R[b, i, j] = acc0\n");
  checkSameResults(l, p);
}

TEST_CASE("loop transforms: register_block and pack refuse what they cannot do", "[passes][transforms]") {
  Lowered l = lower(kMatmulTails);
  loops::LoopProgram p = l.loops;
  loops::Kernel& k = p.kernels[0];
  const std::string before = kernelText(p, 0);
  CHECK(loops::registerBlock(p, k, "i", "j", 0, 8) == "the tile's rows must be 1..16, got 0");
  CHECK(loops::registerBlock(p, k, "i", "j", 6, 65) == "the tile's columns must be 1..64, got 65");
  CHECK(loops::registerBlock(p, k, "i", "i", 6, 8) == "the row and the column loop must be two different loops");
  CHECK(loops::registerBlock(p, k, "i", "k", 6, 8) ==
        "loops i and k are not directly nested (the outer one's body must be exactly the inner one)");
  CHECK(loops::registerBlock(p, k, "i", "x", 6, 8) == "kernel k0_C has no loop over 'x' (its loops: i, j, k)");
  CHECK(loops::packOperand(k, loops::PackedOperand::A, "") == "the kernel has no register tile to pack for: apply register_block first");
  CHECK(kernelText(p, 0) == before);

  // Rows and columns swapped: a tile of C^T = B^T A^T, whose "column" operand A is read lane by
  // lane (gathered) and whose epilogue stores down C's columns. Legal, only slower.
  loops::LoopProgram swapped = l.loops;
  REQUIRE(loops::registerBlock(swapped, swapped.kernels[0], "j", "i", 6, 8) == "");
  REQUIRE(loops::packOperand(swapped.kernels[0], loops::PackedOperand::A, "") == "");
  checkSameResults(l, swapped);

  REQUIRE(loops::registerBlock(p, k, "i", "j", 6, 8) == "");
  CHECK(loops::packOperand(k, loops::PackedOperand::B, "x") == "kernel k0_C has no loop over 'x' (its loops: i_t, j_t)");
  REQUIRE(loops::packOperand(k, loops::PackedOperand::B, "i_t") == "");
  CHECK(loops::packOperand(k, loops::PackedOperand::B, "j_t") == "B is already packed");
  // Once tiled, the loops around the tiles may still be split (LoopTransforms.h has the rule).
  REQUIRE(loops::splitLoop(k, "j_t", 2) == "");
  checkSameResults(l, p);

  Lowered e = lower(kElementwise);
  loops::LoopProgram q = e.loops;
  CHECK(loops::registerBlock(q, q.kernels[0], "i", "j", 6, 8) ==
        "the body of loops i and j is not a contraction 'acc = 0; for k { acc += A * B }; store', A (f32) not reading j and "
        "B (f32) reading j but not i");
  Lowered d = lower("input A : f64[4, 3]\ninput B : f64[3, 5]\noutput C[i, j] = sum(k: A[i, k] * B[k, j])\n");
  loops::LoopProgram r = d.loops;
  CHECK(loops::registerBlock(r, r.kernels[0], "i", "j", 2, 4) == "the register tile is written for f32 kernels; this kernel computes in f64");
}

TEST_CASE("loop transforms: pack refuses a k-blocked tile and a guard between pack and tile", "[passes][transforms]") {
  // The tile pass's tile over k blocks: its packs live inside the k block loop.
  Lowered t = lower("input A : f32[64, 1024]\ninput B : f32[1024, 64]\noutput C[i, j] = sum(k: A[i, k] * B[k, j])\n", true);
  loops::LoopProgram p = t.loops;
  REQUIRE(loops::printLoopProgram(p).find("k in [") != std::string::npos);
  CHECK(loops::packOperand(p.kernels[0], loops::PackedOperand::A, "") ==
        "the tile sums over k blocks (the tile pass's kc); its packs are the tile pass's");

  Lowered l = lower("input P : f32[5, 11, 5]\ninput Q : f32[5, 5, 9]\noutput R[b, i, j] = sum(k: P[b, i, k] * Q[b, k, j])\n");
  loops::LoopProgram q = l.loops;
  loops::Kernel& k = q.kernels[0];
  REQUIRE(loops::splitLoop(k, "b", 2) == "");  // 5 = 2 x 2 + 1: a guard under b.i
  REQUIRE(loops::registerBlock(q, k, "i", "j", 4, 8) == "");
  CHECK(loops::packOperand(k, loops::PackedOperand::A, "b.o") == "a guard lies between the pack and the tile; pack inside it");
  REQUIRE(loops::packOperand(k, loops::PackedOperand::A, "i_t") == "");
  checkSameResults(l, q);
}

TEST_CASE("schedule files: loops lines", "[passes][transforms][schedule]") {
  loops::ScheduleOverrides o;
  REQUIRE(loops::parseScheduleText("tile = off\n# the elementwise kernel\nloops Y: split j 4; reorder j.o i j.i;\n"
                                   "loops s: unroll j 2; unroll i; parallel off; vectorize i off; vectorize i\n",
                                   o) == "");
  CHECK(o.tile == false);
  REQUIRE(o.loops.size() == 2);
  CHECK(o.loops[0].line == 3);
  CHECK(o.loops[0].buffer == "Y");
  REQUIRE(o.loops[0].steps.size() == 2);
  CHECK(o.loops[0].steps[0].kind == loops::LoopStepKind::Split);
  CHECK(o.loops[0].steps[0].vars == std::vector<std::string>{"j"});
  CHECK(o.loops[0].steps[0].factor == 4);
  CHECK(o.loops[0].steps[1].vars == std::vector<std::string>{"j.o", "i", "j.i"});
  const auto& s = o.loops[1].steps;
  REQUIRE(s.size() == 5);
  CHECK((s[0].kind == loops::LoopStepKind::Unroll && s[0].factor == 2));
  CHECK((s[1].kind == loops::LoopStepKind::Unroll && s[1].factor == 0));
  CHECK((s[2].kind == loops::LoopStepKind::Parallel && s[2].vars.empty()));
  CHECK((s[3].kind == loops::LoopStepKind::Vectorize && !s[3].on));
  CHECK((s[4].kind == loops::LoopStepKind::Vectorize && s[4].on && s[4].text == "vectorize i"));

  auto error = [](const std::string& text) {
    loops::ScheduleOverrides x;
    return loops::parseScheduleText(text, x);
  };
  CHECK(error("loops Y split j 4\n") == "line 1: expected 'loops BUFFER: step; step; ...'");
  CHECK(error("\nloops : split j 4\n") == "line 2: expected 'loops BUFFER: step; step; ...'");
  CHECK(error("loops Y: split j\n") == "line 1: loops Y: 'split j': expected 'split VAR FACTOR' with a factor >= 1");
  CHECK(error("loops Y: split j 0\n") == "line 1: loops Y: 'split j 0': expected 'split VAR FACTOR' with a factor >= 1");
  CHECK(error("loops Y: reorder j\n") ==
        "line 1: loops Y: 'reorder j': expected 'reorder VAR VAR ...' (two loops or more, outermost first)");
  CHECK(error("loops Y: unroll j 1\n") ==
        "line 1: loops Y: 'unroll j 1': expected 'unroll VAR FACTOR' with a factor >= 2, or 'unroll VAR' (fully)");
  CHECK(error("loops Y: parallel\n") == "line 1: loops Y: 'parallel': expected 'parallel VAR' or 'parallel off'");
  CHECK(error("loops Y: vectorize j on\n") ==
        "line 1: loops Y: 'vectorize j on': expected 'vectorize VAR' or 'vectorize VAR off'");
  CHECK(error("loops Y: tile j 4\n") ==
        "line 1: loops Y: unknown loop transformation 'tile' (expected split, reorder, unroll, parallel, vectorize, register_block or pack)");
  CHECK(error("loops Y: split j 4;; unroll j.i\n") == "line 1: loops Y: empty step (two ';' in a row?)");
  CHECK(error("loops C: register_block i j 6\n") ==
        "line 1: loops C: 'register_block i j 6': expected 'register_block ROWVAR COLVAR MR NR' (tile rows and columns >= 1)");
  CHECK(error("loops C: pack C\n") ==
        "line 1: loops C: 'pack C': expected 'pack A|B' (before the nest) or 'pack A|B VAR' (first in loop VAR)");

  loops::ScheduleOverrides t;
  REQUIRE(loops::parseScheduleText("loops C: register_block i j 6 16; pack A i_t; pack B\n", t) == "");
  REQUIRE(t.loops.size() == 1);
  const auto& r = t.loops[0].steps;
  REQUIRE(r.size() == 3);
  CHECK((r[0].kind == loops::LoopStepKind::RegisterBlock && r[0].vars == std::vector<std::string>{"i", "j"} && r[0].rows == 6 &&
         r[0].factor == 16));
  CHECK((r[1].kind == loops::LoopStepKind::Pack && r[1].operand == 'A' && r[1].vars == std::vector<std::string>{"i_t"}));
  CHECK((r[2].kind == loops::LoopStepKind::Pack && r[2].operand == 'B' && r[2].vars.empty()));
}

}  // namespace texc::passtest

namespace texc::passtest {
namespace {

bool holdsTile(const loops::Block& stmts) {
  return loops::anyStmt(stmts, [](const loops::Stmt& s) { return s.is<loops::Tile>(); });
}

// Every loop variable printed in `stmts`, in order (with repeats after unrolling).
void loopNames(const loops::Kernel& k, const loops::Block& stmts, std::vector<std::string>& out) {
  loops::forEachStmt(stmts, [&](const loops::Stmt& s) {
    if (auto* l = s.getIf<loops::Loop>()) out.push_back(k.varNames[l->var]);
  });
}

}  // namespace

// Random sequences of steps on kernels of several kinds (padding guards, softmax's fused row
// passes, a matmul and a batched one, a whole-tensor reduction), register blocking and packing
// among them: a step either applies and the program verifies,
// or is refused and the kernel is exactly as it was; at the end the program computes what it
// computed before (reordered reductions to rounding).
TEST_CASE("loop transforms: random sequences of steps keep the program valid and its results", "[passes][transforms]") {
  const char* const programs[] = {
      kElementwise,
      "input A : f32[9, 6]\ninput B : f32[6, 11]\noutput C[i, j] = sum(k: A[i, k] * B[k, j])\n",
      "input P : f32[3, 7, 5]\ninput Q : f32[3, 5, 10]\noutput R[b, i, j] = sum(k: P[b, i, k] * Q[b, k, j])\n",
      "input x : f32[16]\ninput w : f32[5]\noutput same[i < 16] = sum(k: x[i + k - 2] * w[k])\n",
      "input x : f32[7, 12]\nm[i] = max(j: x[i, j])\ne[i, j] = exp(x[i, j] - m[i])\n"
      "output sm[i, j] = e[i, j] / sum(k: e[i, k])\n",
      "input X : f32[5, 6, 7]\noutput t = sum(a, b, c: X[a, b, c] * X[a, b, c])\n",
  };
  uint64_t state = 12345;
  auto next = [&](uint64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % n;
  };
  int applied = 0, refused = 0, blocked = 0, packed = 0;
  for (const char* text : programs) {
    Lowered l = lower(text);
    for (int trial = 0; trial < 20; ++trial) {
      loops::LoopProgram p = l.loops;
      std::string steps;
      for (int n = 0; n < 6; ++n) {
        loops::Kernel& k = p.kernels[next(p.kernels.size())];
        std::vector<std::string> names;
        loopNames(k, k.body, names);
        if (names.empty()) continue;
        const size_t at = next(names.size());
        const std::string v = names[at];
        const std::string before = loops::printLoopProgram(p);
        std::string err;
        // register_block and pack twice as likely as the others: they apply to fewer kernels.
        // On a register-blocked kernel only pack may apply: draw it half the time there.
        const uint64_t draw = next(10);
        const uint64_t kind = draw == 7 ? 5 : draw == 8 || (holdsTile(k.body) && draw % 2 == 0) ? 6 : draw;
        switch (kind) {
          case 0: err = loops::splitLoop(k, v, 1 + static_cast<int64_t>(next(6))); steps += "split " + v + "; "; break;
          case 1: {
            std::vector<std::string> order = {names[next(names.size())], v};
            if (next(2)) order.push_back(names[next(names.size())]);
            err = loops::reorderLoops(k, order);
            steps += "reorder ...; ";
            break;
          }
          case 2: err = loops::unrollLoop(k, v, next(3) == 0 ? 0 : 2 + static_cast<int64_t>(next(3))); steps += "unroll " + v + "; "; break;
          case 3: err = loops::parallelizeLoop(k, next(4) == 0 ? "" : v); steps += "parallel " + v + "; "; break;
          case 4: err = loops::vectorizeLoop(k, v, next(2) == 0); steps += "vectorize " + v + "; "; break;
          case 5: {
            // Mostly the loop just inside v (the pair register_block wants), sometimes any.
            const std::string col = next(4) != 0 && at + 1 < names.size() ? names[at + 1] : names[next(names.size())];
            err = loops::registerBlock(p, k, v, col, 1 + static_cast<int64_t>(next(7)), 1 + static_cast<int64_t>(next(17)));
            steps += "register_block " + v + " " + col + "; ";
            break;
          }
          case 6: {
            const bool a = next(2) == 0;
            const std::string at = next(3) == 0 ? "" : v;
            err = loops::packOperand(k, a ? loops::PackedOperand::A : loops::PackedOperand::B, at);
            steps += std::string("pack ") + (a ? "A " : "B ") + at + "; ";
            break;
          }
          default: continue;
        }
        INFO(text << "\nsteps: " << steps << "\n" << err);
        if (err.empty()) {
          ++applied;
          blocked += kind == 5;
          packed += kind == 6;
          std::vector<std::string> problems = loops::verifyLoopProgram(p);
          for (const std::string& problem : problems) FAIL_CHECK(problem);
        } else {
          ++refused;
          CHECK(loops::printLoopProgram(p) == before);
        }
      }
      INFO(text << "\nsteps: " << steps);
      checkSameResults(l, p, 1e-9);
    }
  }
  // Both outcomes happen often enough for the test to mean something.
  CHECK(applied > 100);
  CHECK(refused > 50);
  CHECK(blocked > 5);
  CHECK(packed > 5);
}

}  // namespace texc::passtest
