// The fuse pass: which producers it fuses, why, and that fusion never changes results.
#include <catch2/catch.hpp>
#include <optional>

#include <cmath>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "compiler/analysis/Cost.h"
#include "compiler/passes/PassManager.h"
#include "compiler/passes/Pipeline.h"
#include "compiler/reference/Reference.h"

namespace {

using namespace texc;

struct Compiled {
  std::unique_ptr<SourceFile> file;
  std::unique_ptr<DiagnosticEngine> diags;
  CompileState state;
  Program analysed;  // as semantic analysis left it, before any graph pass
};

std::unique_ptr<Compiled> compile(const std::string& source, FuseMode mode, LetOverrides overrides = {}, bool tile = true,
                                  std::optional<loops::ConvMode> conv = std::nullopt, std::set<std::string> disabled = {}) {
  auto c = std::make_unique<Compiled>();
  c->file = std::make_unique<SourceFile>("t.tex", source);
  c->diags = std::make_unique<DiagnosticEngine>(c->file.get());
  c->state.file = c->file.get();
  c->state.diags = c->diags.get();
  c->state.overrides = overrides;
  c->state.options.fuse = mode;
  c->state.options.tile = tile;
  c->state.options.schedule.conv = conv;
  c->state.options.disabledPasses = std::move(disabled);
  Instrumentation inst;
  inst.verifyEachPass = true;
  std::vector<const PassInfo*> front = buildPipeline(c->state.options, Stage::Sema);
  bool ok = runPipeline(c->state, front, inst);
  INFO(c->diags->render());
  REQUIRE(ok);
  c->analysed = *c->state.graph;
  std::vector<const PassInfo*> graphPasses;
  // split-ops ... dce, then fuse and dce again when the mode fuses (buildPipeline leaves them out
  // under --fuse=none).
  for (const PassInfo* p : buildPipeline(c->state.options, Stage::Graph))
    if (p->stage == Stage::Graph) graphPasses.push_back(p);
  REQUIRE(runPipeline(c->state, graphPasses, inst));
  return c;
}

std::string source(const std::string& example) {
  std::ifstream in(std::string(TEXC_SOURCE_DIR) + "/examples/" + example);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

size_t kernels(const Compiled& c) {
  UNSCOPED_INFO(printStage(c.state, Stage::Graph));
  return c.state.graph->computations.size();
}

const FusionDecision* decision(const Compiled& c, const std::string& producer) {
  for (const FusionDecision& d : c.state.fusionDecisions)
    if (d.producer == producer) return &d;
  return nullptr;
}

// Runs the analysed program and the fused graph through the float64 reference on the same random
// inputs; fusion must not change any output beyond reassociation-free rounding (none here: the
// reference evaluates both in float64 in the same order within a term).
void requireSameResults(const Compiled& c) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<RefTensor> inputs;
  for (int id : c.analysed.inputs) {
    RefTensor t;
    t.shape = c.analysed.tensors[id].shape;
    t.data.resize(c.analysed.tensors[id].numElements());
    for (double& x : t.data) x = dist(rng);
    inputs.push_back(std::move(t));
  }
  std::vector<RefTensor> before = evaluateReference(c.analysed, inputs);
  std::vector<RefTensor> after = evaluateReference(*c.state.graph, inputs);
  REQUIRE(c.analysed.outputs.size() == c.state.graph->outputs.size());
  for (size_t k = 0; k < c.analysed.outputs.size(); ++k) {
    const RefTensor& a = before[c.analysed.outputs[k]];
    const RefTensor& b = after[c.state.graph->outputs[k]];
    REQUIRE(a.data.size() == b.data.size());
    ErrorStats e = compareToReference(a.data.data(), b.data.data(), a.data.size());
    CHECK(e.maxAbs <= 1e-12);
  }
}

}  // namespace

TEST_CASE("gelu with bias and residual becomes one kernel", "[fusion]") {
  auto c = compile(source("gelu.tex"), FuseMode::All, {{"N", 8}, {"D", 16}});
  CHECK(kernels(*c) == 1);
  CHECK(decision(*c, "h")->fused);
  requireSameResults(*c);
}

TEST_CASE("fuse=none keeps one kernel per operator", "[fusion]") {
  auto c = compile(source("gelu.tex"), FuseMode::None, {{"N", 8}, {"D", 16}});
  CHECK(kernels(*c) == 11);
  CHECK(c->state.fusionDecisions.empty());
}

TEST_CASE("matmul + bias + gelu is one kernel", "[fusion]") {
  auto c = compile(R"(
let M = 8; let K = 16; let N = 12
input A : f32[M, K]
input B : f32[K, N]
input bias : f32[N]
C[i, j] = sum(k: A[i, k] * B[k, j])
h = C + bias
output y = 0.5 * h * (1 + erf(h * 0.7071067811865476))
)",
                   FuseMode::All);
  CHECK(kernels(*c) == 1);
  CHECK(decision(*c, "C")->fused);
  requireSameResults(*c);
}

TEST_CASE("conv + scale/bias + 2x2 max pool is one kernel with --no-tile, conv is never allocated", "[fusion]") {
  auto c = compile(source("conv_pool.tex"), FuseMode::All, {{"C", 3}, {"K", 4}, {"H", 8}, {"W", 6}}, /*tile=*/false);
  CHECK(kernels(*c) == 1);
  CHECK(c->state.graph->findTensor("conv") < 0);
  CHECK(decision(*c, "conv")->fused);
  CHECK(decision(*c, "sb")->fused);
  requireSameResults(*c);
}

// With tiling on, a contraction read inside another reduction would stay untiled if fused:
// conv and its pointwise epilogue (scale/bias) form one kernel, which the tile pass makes an
// implicit GEMM, and the pool reads its result. A contraction read outside a reduction (matmul
// + bias + gelu) still fuses.
TEST_CASE("conv + scale/bias + 2x2 max pool with tiling: conv with scale/bias, then the pool", "[fusion]") {
  auto c = compile(source("conv_pool.tex"), FuseMode::All, {{"C", 3}, {"K", 4}, {"H", 8}, {"W", 6}});
  CHECK(kernels(*c) == 2);
  CHECK(c->state.graph->findTensor("conv") < 0);
  CHECK(c->state.graph->findTensor("sb") >= 0);
  REQUIRE(decision(*c, "conv"));
  CHECK(decision(*c, "conv")->fused);
  REQUIRE(decision(*c, "sb"));
  CHECK_FALSE(decision(*c, "sb")->fused);
  CHECK_THAT(decision(*c, "sb")->reason, Catch::Contains("pointwise epilogue of a contraction that will be tiled"));
  requireSameResults(*c);

  auto sumOfMax = compile("input A : f32[4, 8]\ninput B : f32[8, 5]\nC[i, j] = sum(k: A[i, k] * B[k, j])\n"
                          "output m[i] = max(j: C[i, j])\n",
                          FuseMode::All);
  REQUIRE(decision(*sumOfMax, "C"));
  CHECK_FALSE(decision(*sumOfMax, "C")->fused);
  CHECK_THAT(decision(*sumOfMax, "C")->reason, Catch::Contains("would not be tiled"));
  auto offTiles = compile("input A : f32[4, 8]\ninput B : f32[8, 5]\nC[i, j] = sum(k: A[i, k] * B[k, j])\n"
                          "output m[i] = max(j: C[i, j])\n",
                          FuseMode::All, {}, /*tile=*/false);
  CHECK(decision(*offTiles, "C")->fused);
}

// Materialized attention (online-softmax left out): the row sum l[i] is read by the epilogue of
// O = sum(j: P V) / l[i]: fused, it would be lowered beside the contraction's loops (in the loop
// over i) and keep O untiled, so with tiling it gets a kernel of its own; --no-tile fuses it as
// before.
TEST_CASE("attention with tiling: the row sum its P V epilogue reads is a kernel of its own", "[fusion]") {
  const std::set<std::string> materialized = {"online-softmax"};
  auto c = compile(source("attention.tex"), FuseMode::All, {{"N", 9}, {"Dh", 4}}, true, std::nullopt, materialized);
  REQUIRE(decision(*c, "l"));
  CHECK_FALSE(decision(*c, "l")->fused);
  CHECK_THAT(decision(*c, "l")->reason, Catch::Contains("read by the epilogue of a contraction that will be tiled"));
  CHECK(c->state.graph->findTensor("l") >= 0);
  requireSameResults(*c);

  auto offTiles = compile(source("attention.tex"), FuseMode::All, {{"N", 9}, {"Dh", 4}}, /*tile=*/false, std::nullopt, materialized);
  REQUIRE(decision(*offTiles, "l"));
  CHECK(decision(*offTiles, "l")->fused);
  CHECK(kernels(*offTiles) + 1 == kernels(*c));

  // A reader with fewer than two output dimensions is never tiled: a cosine's dot products still
  // fuse into it.
  const char* cosine = "input x : f32[17]\ninput y : f32[17]\noutput dot = sum(i: x[i] * y[i])\n"
                       "output cosine = sum(i: x[i] * y[i]) / (sqrt(sum(i: x[i] * x[i])) * sqrt(sum(i: y[i] * y[i])))\n";
  auto tiled = compile(cosine, FuseMode::All);
  auto untiled = compile(cosine, FuseMode::All, {}, /*tile=*/false);
  CHECK(kernels(*tiled) == kernels(*untiled));
  requireSameResults(*tiled);
}

// --conv=direct: convolutions are not tiled, so nothing is kept apart for them (one kernel, as
// with --no-tile); a matmul read inside a reduction still is.
TEST_CASE("conv + scale/bias + 2x2 max pool with --conv=direct is one kernel", "[fusion]") {
  auto c = compile(source("conv_pool.tex"), FuseMode::All, {{"C", 3}, {"K", 4}, {"H", 8}, {"W", 6}}, /*tile=*/true,
                   loops::ConvMode::Direct);
  CHECK(kernels(*c) == 1);
  CHECK(decision(*c, "conv")->fused);
  CHECK(decision(*c, "sb")->fused);
  requireSameResults(*c);
  auto sumOfMax = compile("input A : f32[4, 8]\ninput B : f32[8, 5]\nC[i, j] = sum(k: A[i, k] * B[k, j])\n"
                          "output m[i] = max(j: C[i, j])\n",
                          FuseMode::All, {}, /*tile=*/true, loops::ConvMode::Direct);
  CHECK_FALSE(decision(*sumOfMax, "C")->fused);
}

TEST_CASE("softmax: one kernel, exp is recomputed twice, never stored, the row max runs once per row", "[fusion]") {
  auto c = compile(source("softmax.tex"), FuseMode::All, {{"R", 5}, {"D", 7}});
  CHECK(kernels(*c) == 1);
  const FusionDecision* e = decision(*c, "e");
  REQUIRE(e);
  CHECK(e->fused);
  CHECK(e->reason.find("2x") != std::string::npos);
  const FusionDecision* m = decision(*c, "m");
  REQUIRE(m);
  CHECK(m->fused);
  CHECK(m->reason.find("computed once") != std::string::npos);
  requireSameResults(*c);
}

TEST_CASE("a reduction read many times is not recomputed", "[fusion]") {
  // The column sum s[j] is read at every (i, j): inside y's loops it depends on the inner
  // variable, so fusing it would recompute it once per row, R = 4 times.
  auto c = compile(R"(
input x : f32[4, 8]
s[j] = sum(i: x[i, j])
output y[i, j] = x[i, j] / s[j]
)",
                   FuseMode::All);
  const FusionDecision* s = decision(*c, "s");
  REQUIRE(s);
  CHECK_FALSE(s->fused);
  CHECK(s->reason.find("4x") != std::string::npos);
  CHECK(kernels(*c) == 2);
  requireSameResults(*c);
}

TEST_CASE("row reductions are fused into the loop over their row and computed once per row", "[fusion]") {
  // layernorm: mean[i] and var[i] are read inside y's loop over j, but depend on i only; they
  // run once per row, before the loop over j, so the recomputation factor is 1.
  auto c = compile(source("layernorm.tex"), FuseMode::All, {{"R", 4}, {"D", 8}});
  CHECK(kernels(*c) == 1);
  for (const char* name : {"mean", "var"}) {
    const FusionDecision* d = decision(*c, name);
    REQUIRE(d);
    CHECK(d->fused);
    CHECK(d->reason.find("computed once") != std::string::npos);
  }
  requireSameResults(*c);

  auto softmax = compile(source("softmax.tex"), FuseMode::All, {{"R", 4}, {"D", 8}});
  CHECK(kernels(*softmax) == 1);
  requireSameResults(*softmax);
  // --fuse=elementwise keeps the reductions as kernels of their own.
  auto ew = compile(source("softmax.tex"), FuseMode::Elementwise, {{"R", 4}, {"D", 8}});
  CHECK(kernels(*ew) == 3);
}

TEST_CASE("an elementwise producer read by a contraction is not recomputed per output", "[fusion]") {
  auto c = compile(R"(
input A : f32[8, 16]
input B : f32[16, 32]
R = relu(A)
output C[i, j] = sum(k: R[i, k] * B[k, j])
)",
                   FuseMode::All);
  const FusionDecision* r = decision(*c, "R");
  REQUIRE(r);
  CHECK_FALSE(r->fused);
  CHECK(r->reason.find("32x") != std::string::npos);
  requireSameResults(*c);
}

TEST_CASE("a read that may fall outside the producer blocks fusion", "[fusion]") {
  auto c = compile(R"(
input x : f32[16]
input w : f32[3]
t = x * 2
output y[i < 16] = sum(r: t[i + r - 1] * w[r])
)",
                   FuseMode::All);
  const FusionDecision* t = decision(*c, "t");
  REQUIRE(t);
  CHECK_FALSE(t->fused);
  requireSameResults(*c);
}

TEST_CASE("bf16 gelu with bias and residual is one kernel that rounds where the unfused program stored", "[fusion]") {
  // The lecture's demo 2 in bf16: h and y are bf16 tensors. Fused, each is rounded to bf16 where
  // it was stored (an explicit round_bf16 node); the decision says so.
  auto c = compile(R"(
input x : bf16[8, 16]
input b : bf16[16]
input r : bf16[8, 16]
h = x + b
y = 0.5 * h * (1 + tanh(0.7978845608 * (h + 0.044715 * h * h * h)))
output out = y + r
)",
                   FuseMode::All);
  CHECK(kernels(*c) == 1);
  const FusionDecision* y = decision(*c, "y");
  REQUIRE(y);
  CHECK(y->fused);
  CHECK(y->reason.find("rounded to bf16 where it was stored (round_bf16)") != std::string::npos);
  CHECK(decision(*c, "h")->fused);
  const std::string graph = printStage(c->state, Stage::Graph);
  CHECK(graph.find("round_bf16(x[i0, i1] + b[i1])") != std::string::npos);
  // The reference computes exactly: rounding nodes leave its values unchanged.
  requireSameResults(*c);
}

TEST_CASE("an f16 producer read by a node computed in f64 is not fused", "[fusion]") {
  // Its f32 arithmetic would be redone in f64 before the rounding: not the same bits.
  auto c = compile(R"(
input x : f16[8]
input w : f64[8]
h = x * 3
output y[i] = h[i] * w[i]
)",
                   FuseMode::All);
  const FusionDecision* h = decision(*c, "h");
  REQUIRE(h);
  CHECK_FALSE(h->fused);
  CHECK(h->reason.find("computed in f32 and stored as f16 and read by a node computed in f64") != std::string::npos);
}

TEST_CASE("an f32 producer read by a node computed in f64 is not fused", "[fusion]") {
  // Fused, sqrt would be computed in f64 and never rounded to f32 where the unfused program
  // stores t: other bits (random program seed 81471). An f64 producer still fuses into f64.
  auto c = compile(R"(
input x : f64[8]
t[i < 2] = sqrt(abs(.25) + .25)
u = x * 2
output y[i] = u[i] - t[1]
)",
                   FuseMode::All);
  const FusionDecision* t = decision(*c, "t");
  REQUIRE(t);
  CHECK_FALSE(t->fused);
  CHECK(t->reason == "not fused: it is computed in f32 and read by a node computed in f64, where its f32 arithmetic would not be "
                     "repeated bit for bit");
  CHECK(decision(*c, "u")->fused);
  CHECK(kernels(*c) == 2);
  requireSameResults(*c);
}

TEST_CASE("round_f16 and round_bf16 are not names a program can call", "[fusion]") {
  CHECK_FALSE(lookupBuiltin("round_f16"));
  CHECK_FALSE(lookupBuiltin("round_bf16"));
  CHECK(lookupBuiltin("tanh"));
}

TEST_CASE("fuse=elementwise keeps reductions as their own kernels", "[fusion]") {
  auto c = compile(source("conv_pool.tex"), FuseMode::Elementwise, {{"C", 3}, {"K", 4}, {"H", 8}, {"W", 6}});
  CHECK_FALSE(decision(*c, "conv")->fused);
  CHECK(kernels(*c) == 2);
  requireSameResults(*c);
}

TEST_CASE("fusion preserves every example's results", "[fusion]") {
  const std::vector<std::pair<std::string, LetOverrides>> programs = {
      {"gelu.tex", {{"N", 3}, {"D", 5}}},          {"matmul.tex", {{"M", 3}, {"K", 5}, {"N", 4}}},
      {"softmax.tex", {{"R", 3}, {"D", 9}}},       {"layernorm.tex", {{"R", 3}, {"D", 9}}},
      {"attention.tex", {{"N", 9}, {"Dh", 4}}},    {"avgpool_pad.tex", {{"C", 2}, {"H", 7}, {"W", 5}}},
      {"conv_pool.tex", {{"C", 2}, {"K", 3}, {"H", 6}, {"W", 4}}},
  };
  for (const auto& [file, overrides] : programs) {
    for (FuseMode mode : {FuseMode::All, FuseMode::Elementwise}) {
      DYNAMIC_SECTION(file << (mode == FuseMode::All ? " all" : " elementwise")) {
        auto c = compile(source(file), mode, overrides);
        requireSameResults(*c);
      }
    }
  }
}

TEST_CASE("cost model: a row reduction fused into its row is counted once per row", "[fusion][cost]") {
  // Fused softmax at R x D: per row, D max steps, D subtractions, exps and sum steps, then per
  // element a subtraction, an exp (counted again: the graph computes it twice) and a
  // multiplication by the sum's reciprocal, itself once per row (reciprocal-of-sums).
  const double R = 6, D = 10;
  auto c = compile(source("softmax.tex"), FuseMode::All, {{"R", 6}, {"D", 10}});
  REQUIRE(kernels(*c) == 1);
  std::vector<KernelCost> costs = costOfKernels(*c->state.graph);
  REQUIRE(costs.size() == 1);
  CHECK(costs[0].flops == R * D * 4 + R * D * 3 + R);
  // The two copies of the row max (fusion inlined m twice) count once, as lowering computes
  // them once. Loads: x in the max, in the sum and in the row, then the store: 4 per element.
  CHECK(costs[0].accesses == 4 * R * D);
  CHECK(costs[0].flops < R * D * R * D);  // not once per element of the output
}

TEST_CASE("cost model: E = D + (A+B)*C moves 9 arrays op by op and 5 fused, 1/3 -> 3/5 ops per access", "[fusion][cost]") {
  const std::string src = "let N = 1000\ninput A : f32[N]\ninput B : f32[N]\ninput C : f32[N]\ninput D : f32[N]\noutput E = D + (A + B) * C\n";
  auto totals = [](const Compiled& c) {
    double flops = 0, accesses = 0, bytes = 0;
    int arrays = 0;
    for (const KernelCost& k : costOfKernels(*c.state.graph)) {
      flops += k.flops;
      accesses += k.accesses;
      bytes += k.bytes();
      arrays += k.arrays;
    }
    return std::make_tuple(flops, accesses, bytes, arrays);
  };
  auto [f0, a0, b0, n0] = totals(*compile(src, FuseMode::None));
  auto [f1, a1, b1, n1] = totals(*compile(src, FuseMode::All));
  CHECK(n0 == 9);
  CHECK(n1 == 5);
  CHECK(f0 == 3000);
  CHECK(f1 == 3000);
  CHECK(f0 / a0 == Approx(1.0 / 3));
  CHECK(f1 / a1 == Approx(3.0 / 5));
  CHECK(b0 == 9 * 4000);
  CHECK(b1 == 5 * 4000);
}
