// The sum-lanes rule (compiler/loops/SumLanes.h): which innermost loops keep partial sums, how
// many (the same on every target), why the others add in order, and the verifier's check of the
// mark.
#include <catch2/catch.hpp>

#include "PassTestSupport.h"
#include "compiler/loops/SumLanes.h"
#include "compiler/loops/Walk.h"

namespace texc::passtest {
namespace {

// The innermost loops of kernel `k`, in program order.
std::vector<loops::Loop*> innermost(loops::LoopProgram& p, size_t k) {
  std::vector<loops::Loop*> found;
  loops::forEachInnermostLoop(p.kernels.at(k).body, [&](loops::Loop& l) { found.push_back(&l); });
  return found;
}

std::string whyNot(const loops::Loop& l) {
  std::string why;
  CHECK_FALSE(loops::canKeepSumLanes(l, &why));
  return why;
}

TEST_CASE("sum-lanes: a row sum keeps 4 groups of lanes, a short one 1, a column sum none", "[passes][sum-lanes]") {
  LoweredLoops l = lowerOnly("lanes",
                             "input x : f32[8, 100]\n"
                             "output s[i] = sum(j: x[i, j])\n"
                             "output c[j] = sum(i: x[i, j])\n"
                             "output t[i] = sum(j < 20: x[i, j] * x[i, j])\n"
                             "output u[i] = sum(j < 12: x[i, j])\n"
                             "output m[i] = max(j: x[i, j])\n");
  loops::LoopProgram& p = l.loops;
  REQUIRE(p.kernels.size() == 5);
  CHECK(loops::sumLaneGroup(DType::F32) == 16);  // one AVX-512 vector, on every target
  CHECK(loops::sumLaneGroup(DType::F64) == 8);
  const loops::Loop& row = *innermost(p, 0).at(0);
  CHECK(loops::sumLanesFor(row, DType::F32) == 64);  // 4 x 16
  CHECK(loops::sumLanesFor(row, DType::F64) == 32);  // 4 x 8
  const loops::Loop& column = *innermost(p, 1).at(0);
  CHECK(loops::sumLanesFor(column, DType::F32) == 0);
  CHECK(whyNot(column) == "it is not a vector loop and strides across memory");
  const loops::Loop& twenty = *innermost(p, 2).at(0);
  CHECK(loops::sumLanesFor(twenty, DType::F32) == 16);  // one group, then 4 terms in order
  CHECK(loops::sumLanesFor(twenty, DType::F64) == 8);
  const loops::Loop& twelve = *innermost(p, 3).at(0);
  CHECK(loops::sumLanesFor(twelve, DType::F32) == 0);
  CHECK(loops::sumLanesFor(twelve, DType::F64) == 8);
  const loops::Loop& max = *innermost(p, 4).at(0);
  CHECK(whyNot(max) == "it adds up no sum or product");

  std::vector<std::string> decisions;
  CHECK(loops::pinSumLanes(p, &decisions) == 2);  // the row sum and the 20 terms
  CHECK(decisions == std::vector<std::string>{
                         "k0_s, j < 100, acc0 (sum): its first 64 terms in 64 lanes, the other 36 in order",
                         "k1_c, i < 8, acc0 (sum): in order, it is not a vector loop and strides across memory",
                         "k2_t, j < 20, acc0 (sum): its first 16 terms in 16 lanes, the other 4 in order",
                         "k3_u, j < 12, acc0 (sum): in order, 12 terms, fewer than a group's 16 lanes",
                     });  // the max's loop adds up no sum: no line
}

TEST_CASE("sum-lanes: the pass marks what the rule gives and the verifier checks the mark", "[passes][sum-lanes]") {
  LoweredLoops l = lowerOnly("marks", "input x : f32[32, 100]\noutput s[i] = sum(j: x[i, j])\noutput c[j] = sum(i: x[i, j])\n");
  loops::LoopProgram& p = l.loops;
  CHECK(loops::pinSumLanes(p) == 1);
  CHECK(innermost(p, 0).at(0)->sumLanes == 64);
  CHECK(innermost(p, 1).at(0)->sumLanes == 0);
  CHECK(loops::printLoopProgram(p).find("for j < 100 sum lanes 64\n") != std::string::npos);
  CHECK(loops::verifyLoopProgram(p).empty());

  loops::LoopProgram wrong = p;
  innermost(wrong, 1).at(0)->sumLanes = 16;  // a column sum's strided loop
  std::vector<std::string> problems = loops::verifyLoopProgram(wrong);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0] == "kernel k1_c: loop i keeps 16 sum lanes, but it is not a vector loop and strides across memory");

  loops::LoopProgram notGroups = p;
  innermost(notGroups, 0).at(0)->sumLanes = 32;  // lanes are 1 or 4 groups of 16, on every target
  problems = loops::verifyLoopProgram(notGroups);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0] == "kernel k0_s: loop j keeps 32 sum lanes, not 1 or 4 groups of 16");

  loops::LoopProgram tooMany = p;
  innermost(tooMany, 0).at(0)->sumLanes = 128;
  problems = loops::verifyLoopProgram(tooMany);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0] == "kernel k0_s: loop j keeps 128 sum lanes for 100 terms");
}

TEST_CASE("sum-lanes: a loop over bf16 pairs counts pairs", "[passes][sum-lanes]") {
  LoweredLoops l = lowerOnly("pairs", "input x : bf16[4, 64]\noutput s[i] = sum(j: x[i, j])\n");
  loops::Loop& row = *innermost(l.loops, 0).at(0);
  CHECK(loops::sumLanesFor(row, DType::F32) == 64);  // 64 terms
  row.pairs = true;                                  // 32 pairs: one group of 16
  CHECK(loops::sumLanesFor(row, DType::F32) == 16);
}

TEST_CASE("sum-lanes: a loop that reads the sum it adds up keeps no lanes", "[passes][sum-lanes]") {
  LoweredLoops l = lowerOnly("reads", "input x : f32[4, 64]\noutput s[i] = sum(j: x[i, j])\n");
  loops::Loop& row = *innermost(l.loops, 0).at(0);
  REQUIRE(loops::sumLanesFor(row, DType::F32) == 64);
  loops::AccUpdate* update = nullptr;
  loops::forEachStmt(row.body, [&](loops::Stmt& s) {
    if (s.is<loops::AccUpdate>()) update = &s.as<loops::AccUpdate>();
  });
  REQUIRE(update != nullptr);
  loops::Expr read;
  read.kind = loops::ExprKind::AccRead;
  read.acc = update->acc;
  row.body.push_back(loops::Stmt(loops::AccSet{update->acc + 1, read}));  // a value reading the running sum
  CHECK(whyNot(row) == "it reads or sets an accumulator that it sums");
}

}  // namespace
}  // namespace texc::passtest
