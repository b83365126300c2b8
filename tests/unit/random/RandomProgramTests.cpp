// The random program generator, the differential tester and the shrinker (tests/random/).
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "frontend/Diagnostics.h"
#include "frontend/Parser.h"
#include "frontend/Sema.h"
#include "frontend/Source.h"
#include "tests/random/DiffTest.h"
#include "tests/random/EmulatedCuda.h"
#include "tests/random/ProgramGenerator.h"
#include "tests/random/Shrinker.h"
#include "tests/support/Skip.h"

using namespace texc;
using namespace texc::random;

namespace {

// The analysis errors of `text`, or "" when it is a valid program.
std::string errorsOf(const std::string& text) {
  SourceFile file("t.tex", text);
  DiagnosticEngine diags(&file);
  Module m = parse(file, diags);
  if (!diags.hasErrors()) analyze(m, diags);
  return diags.hasErrors() ? diags.render() : "";
}

int countLines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

const char* kSmallProgram =
    "let N = 5\n"
    "input x : f32[N, 3]\n"
    "input b : f32[3]\n"
    "h = exp(x) + b\n"
    "output y[i] = sum(j: h[i, j] * b[j])\n";

}  // namespace

TEST_CASE("random: the same seed gives the same program, other seeds other ones", "[random]") {
  for (uint64_t seed : {1ull, 2ull, 12345ull}) CHECK(generateProgram(seed) == generateProgram(seed));
  std::set<std::string> distinct;
  for (uint64_t seed = 1; seed <= 50; ++seed) distinct.insert(generateProgram(seed));
  CHECK(distinct.size() == 50);
}

TEST_CASE("random: generated programs are valid", "[random]") {
  for (uint64_t seed = 1; seed <= 5000; ++seed) {
    std::string text = generateProgram(seed);
    INFO(text);
    CHECK(errorsOf(text) == "");
  }
}

TEST_CASE("random: generated programs cover the language", "[random]") {
  std::string all;
  for (uint64_t seed = 1; seed <= 400; ++seed) all += generateProgram(seed);
  // Every builtin, every reduction kind, floor division and modulo in indices, masks, every dtype.
  for (const char* needle : {"exp(", "log(", "sqrt(", "rsqrt(", "tanh(", "sigmoid(", "relu(", "abs(", "erf(", "sin(",
                             "cos(", "floor(", "ceil(", "pow(", "min(", "max(", "select(", "sum(", "prod(", ") % ",
                             ") / ", "-inf", "f64", "f16", "bf16", " && ", " || ", "!(", "output y"}) {
    INFO(needle);
    CHECK(all.find(needle) != std::string::npos);
  }
}

TEST_CASE("random: a correct program passes every variant", "[random]") {
  Outcome o = checkProgram(kSmallProgram, variants());
  INFO(o.report);
  CHECK(o.verdict == Verdict::Pass);
  int runs = 0;
  for (const Variant& v : variants()) runs += static_cast<int>(v.threads.size());
  CHECK(o.variantRuns == runs);
}

TEST_CASE("random: an invalid program is reported as such, not as a compiler bug", "[random]") {
  Outcome o = checkProgram("input x : f32[3]\noutput y = x + z\n", variants());
  CHECK(o.verdict == Verdict::Invalid);
  CHECK(o.report.find("z") != std::string::npos);
  CHECK_FALSE(isFailure(o.verdict));
}

TEST_CASE("random: a wrong value is caught, in process and in a child", "[random]") {
  CheckOptions damage;
  damage.damageForTest = true;
  Outcome o = checkProgram(kSmallProgram, variants(), damage);
  CHECK(o.verdict == Verdict::Mismatch);
  CHECK(o.report.find("output y: 1 of 5 elements differ") != std::string::npos);
  Outcome child = runIsolated(kSmallProgram, {variants().front()}, 60, damage);
  CHECK(child.verdict == Verdict::Mismatch);
  CHECK(child.report.find("[" + variants().front().name + " --threads 1 (run 1 on poisoned memory)]") != std::string::npos);
  CHECK(runIsolated(kSmallProgram, {variants().front()}, 60).verdict == Verdict::Pass);
}

TEST_CASE("random: the CUDA variant runs the generated CUDA C in the emulation and catches a wrong value", "[random]") {
  const std::string& problem = prepareCudaEmulation();
  if (!problem.empty()) testsupport::skipTest(problem);
  std::vector<Variant> cuda;
  for (const Variant& v : variants())
    if (v.options.target == Target::Cuda) cuda.push_back(v);
  REQUIRE(cuda.size() == 1);
  Outcome o = checkProgram(kSmallProgram, cuda);
  INFO(o.report);
  CHECK(o.verdict == Verdict::Pass);
  CHECK(o.variantRuns == 1);
  // Twice in one process: each call loads its own kernels.
  CHECK(checkProgram("input x : f32[4, 3]\noutput s[i] = sum(j: x[i, j])\n", cuda).verdict == Verdict::Pass);
  CheckOptions damage;
  damage.damageForTest = true;
  Outcome bad = checkProgram(kSmallProgram, cuda, damage);
  CHECK(bad.verdict == Verdict::Mismatch);
  CHECK(bad.report.find("[--target cuda (emulated)] output y: 1 of 5 elements differ") != std::string::npos);
}

TEST_CASE("random: the shrinker keeps the failure and removes the rest", "[random]") {
  // A synthetic failure: "the program is valid and still calls exp".
  std::string source = "let N = 4; let M = 3\n"
                       "input x : f32[N, M]\n"
                       "input w : f32[M]\n"
                       "a = x * w + 1\n"
                       "b[i] = sum(j: a[i, j] * exp(x[i, j]))\n"
                       "output c = tanh(b) + sqrt(b * b + 1)\n"
                       "output d[j] = max(i: x[i, j]) * w[j]\n";
  ShrinkStats stats;
  auto fails = [](const std::string& t) { return errorsOf(t).empty() && t.find("exp(") != std::string::npos; };
  std::string small = shrinkProgram(source, fails, 500, &stats);
  INFO(small);
  CHECK(fails(small));
  // The sizes, the input, the statement that calls exp and one output (a program needs one).
  CHECK(countLines(small) <= 5);
  CHECK(small.find("input w") == std::string::npos);
  CHECK(small.find("tanh") == std::string::npos);
  CHECK(stats.accepted > 0);
  CHECK(stats.attempts <= 500);
}

TEST_CASE("random: a damaged run shrinks to a minimal program", "[random]") {
  CheckOptions damage;
  damage.damageForTest = true;
  std::vector<Variant> one;
  for (const Variant& v : variants())
    if (v.name == "--no-tile --no-plan -O0") one.push_back(v);  // -O0 compiles fastest
  REQUIRE(one.size() == 1);
  auto fails = [&](const std::string& t) { return checkProgram(t, one, damage).verdict == Verdict::Mismatch; };
  std::string small = shrinkProgram(kSmallProgram, fails, 200);
  INFO(small);
  CHECK(fails(small));
  // The size, the input and at most one statement besides the output, with no exp and no b.
  CHECK(countLines(small) <= 4);
  CHECK(small.find("exp") == std::string::npos);
  CHECK(small.find("input b") == std::string::npos);
}

// Damaged runs (CheckOptions::damageForTest) of `program` under `vs` must be a mismatch whose
// report says `expected`.
static void expectDamageReported(const std::string& program, const std::vector<Variant>& vs, const std::string& expected) {
  CheckOptions damage;
  damage.damageForTest = true;
  Outcome bad = checkProgram(program, vs, damage);
  CHECK(bad.verdict == Verdict::Mismatch);
  CHECK(bad.report.find(expected) != std::string::npos);
}

TEST_CASE("random: a program's loops in phases give the bits of one loop", "[random][split-chains]") {
  // The random programs' loops are at most 40 long; with blocks of 4 iterations (instead of
  // 256) their long chains run in phases too (loops/SplitChains.h), on SSE2 code on every host.
  std::vector<Variant> vs;
  for (const Variant& v : crossCpuVariants("host"))
    if (v.name.rfind("--no-tile -O3 --cpu x86-64", 0) == 0) vs.push_back(v);
  REQUIRE(vs.size() == 2);
  CHECK(vs[1].copies == vs[0].name);
  CHECK(vs[1].options.phaseBlock == 4);
  const std::string gelu = "input x : f32[3, 38]\ninput b : bf16[38]\nh = x + b\n"
                           "output y = 0.5 * h * (1 + tanh(0.7978845608 * (h + 0.044715 * h * h * h)))\noutput s = sin(x) * x + 1\n";
  Outcome o = checkProgram(gelu, vs);
  INFO(o.report);
  CHECK(o.verdict == Verdict::Pass);
  CHECK(o.cpuBitComparisons == 1);
  expectDamageReported(gelu, vs,
                       "(split-chains in blocks of 4 iterations) --threads 2 against --no-tile -O3 --cpu x86-64 --threads 2] output y: "
                       "the loops in phases gave other bits");
}

TEST_CASE("random: every program's code for a CPU of another vector width gives the same bits", "[random]") {
  // SSE2's 4 lanes everywhere, and AVX2's 8 where the host has AVX-512: each against the same
  // pipeline's code for the host (the sum's order is the same on every CPU: loops/SumLanes.h).
  std::vector<Variant> vs;
  for (const Variant& v : variantsFor("host"))
    if (v.name.rfind("--no-tile -O3", 0) == 0) vs.push_back(v);
  const size_t others = crossCpuVariants("host").size();
  REQUIRE(others >= 1);
  REQUIRE(vs.size() == 1 + others);
  // Seed 400001's sums, shrunk: 64 terms in lanes, then the rest in order; before the lanes were
  // the same on every CPU, haswell's code gave other bits than the Intel Xeon's.
  const std::string sums = "input x : f32[3, 100]\ninput w : f64[2, 40]\noutput s[i] = sum(j: x[i, j] * x[i, j]) / sum(j: exp(x[i, j]))\n"
                           "output t[i] = sum(j: w[i, j] * w[i, j])\noutput p[i] = prod(j < 70: 1 + x[i, j] * 0.01)\n";
  Outcome o = checkProgram(sums, vs);
  INFO(o.report);
  CHECK(o.verdict == Verdict::Pass);
  CHECK(o.cpuBitComparisons == static_cast<int>(others));
  CHECK(runIsolated(sums, vs, 120).cpuBitComparisons == static_cast<int>(others));
  expectDamageReported(sums, vs,
                       "[--no-tile -O3 --cpu x86-64 --threads 2 against --no-tile -O3 --threads 2] output s: the code for x86-64 "
                       "gave other bits, first at element 0");
}

TEST_CASE("random: every program is compared fused against unfused bit for bit", "[random]") {
  // h is a fused bf16 producer: rounded where --fuse=none stores it, so every bit must agree.
  const std::string lowp = "input x : bf16[5, 3]\ninput b : bf16[3]\nh = x * 0.75 + b\noutput y = tanh(h) * h\n";
  std::vector<Variant> cpu;
  for (const Variant& v : variants())
    if (v.options.target == Target::Cpu) cpu.push_back(v);
  Outcome o = checkProgram(lowp, cpu);
  INFO(o.report);
  CHECK(o.verdict == Verdict::Pass);
  CHECK(o.fusionBitComparisons == 8);  // all and elementwise against none, at -O3 and -O0, 1 and 2 threads
  // Damaged by one step in the last place of the fused outputs: within any tolerance, but not the same bits.
  CheckOptions damage;
  damage.damageForTest = true;
  Outcome bad = checkProgram(lowp, cpu, damage);
  CHECK(bad.verdict == Verdict::Mismatch);
  CHECK(bad.report.find("[--fuse=all -O3 --threads 1 against --fuse=none] output y: fusion gave other bits than "
                        "--fuse=none, first at element 0") != std::string::npos);
  // Through the child process too.
  CHECK(runIsolated(lowp, cpu, 120).fusionBitComparisons == 8);
  // Sums too: texc fixes the order of their terms, the same in every kernel (seed 170191,
  // shrunk: LLVM added these 11 terms up in another order fused than unfused).
  Outcome sums = checkProgram("input x : f32[4, 6, 11]\nt[i < 4, k < 6] = max(j < 11: x[i, k, j])\n"
                              "output y[i < 4, k < 6, c < 2] = sum(j < 11: exp(x[i, k, j] - t[i, k]) * (j - 2 * c) * 0.125) / "
                              "sum(j < 11: exp(x[i, k, j] - t[i, k]))\n",
                              cpu);
  INFO(sums.report);
  CHECK(sums.verdict == Verdict::Pass);
  CHECK(sums.fusionBitComparisons == 8);
  Outcome small = checkProgram(kSmallProgram, cpu);
  INFO(small.report);
  CHECK(small.verdict == Verdict::Pass);
  CHECK(small.fusionBitComparisons == 8);
  // The f32 producer t, read by the f64 output, stays a kernel (seed 81471, shrunk; fused, it
  // was computed in f64 and gave other bits).
  Outcome mixed = checkProgram("input x : f64[6]\ninput b : bf16[2]\nt[i < 2] = sqrt(abs(.25) + .25)\noutput y[i < 6] = x[i] - t[1] + b[0]\n", cpu);
  INFO(mixed.report);
  CHECK(mixed.verdict == Verdict::Pass);
  CHECK(mixed.fusionBitComparisons == 8);
  // A division by a max computed once per row stays a division (seed 135065, shrunk; its
  // reciprocal gave the fused program another last bit).
  Outcome byMax = checkProgram("input x1 : f32[64]\noutput y2 = x1\noutput y3[i] = x1[i] / (abs(min(16 + max(k < 3: y2[0]), 1.41)) + 0.5)\n", cpu);
  INFO(byMax.report);
  CHECK(byMax.verdict == Verdict::Pass);
  CHECK(byMax.fusionBitComparisons == 8);
}
