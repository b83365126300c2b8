// Regression tests of pass bugs found while writing the pass tests: each test states what is
// right and fails while the bug is there. Tagged [bug]. The comment above each says what went
// wrong; "(fixed)" marks those fixed since (commit 0c27635), whose tests now guard the fix.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "compiler/driver/Execution.h"
#include "PassTestSupport.h"
#include "compiler/backend/llvm/CpuExecutable.h"
#include "compiler/loops/LoopIR.h"
#include "compiler/passes/Pipeline.h"
#include "runtime/Buffer.h"
#include "runtime/Half.h"
#include "runtime/ThreadPool.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

namespace texc::passtest {
namespace {

// The graph of `program` right before the first run of pass `name`, and right after it.
void aroundPass(const TestProgram& program, const std::string& name, Graph& before, Graph& after, bool& changed) {
  std::unique_ptr<Session> s = startSession(program);
  const PassInfo* pass = findPass(name);
  REQUIRE(pass != nullptr);
  for (const PassInfo* p : buildPipeline(s->state().options, Stage::Graph)) {
    if (p == pass) break;
    s->runPass(*p);
  }
  REQUIRE(s->failure() == "");
  before = *s->state().graph;
  changed = s->runPass(*pass);
  REQUIRE(s->failure() == "");
  after = *s->state().graph;
}

// Reference outputs of the graphs before and after pass `name` on `inputs`: must be identical.
void requireSameReference(const TestProgram& program, const std::string& name, const std::vector<RefTensor>& inputs) {
  Graph before, after;
  bool changed = false;
  aroundPass(program, name, before, after, changed);
  std::string diff = compareOutputsExactly(before, referenceOutputs(before, inputs), after, referenceOutputs(after, inputs));
  INFO("before " << name << ":\n" << printGraph(before) << "after " << name << ":\n" << printGraph(after));
  CHECK(diff == "");
}

RefTensor vec(std::vector<double> v) {
  RefTensor t;
  t.shape = {static_cast<int64_t>(v.size())};
  t.data = std::move(v);
  return t;
}


void store(Tensor& t, int64_t i, double v) {
  switch (t.type) {
    case ElemType::F32: t.data.as<float>()[i] = static_cast<float>(v); break;
    case ElemType::F64: t.data.as<double>()[i] = v; break;
    case ElemType::F16: t.data.as<uint16_t>()[i] = floatToHalf(static_cast<float>(v)); break;
    case ElemType::BF16: t.data.as<uint16_t>()[i] = floatToBf16(static_cast<float>(v)); break;
  }
}

// Compiles `program` through the whole pipeline, runs it on one thread with `inputs` (one vector
// per input, stored in the input's dtype) and returns the first output as doubles.
// `loopsText`, when given, receives the final loop IR; `disabled` passes are left out; `cpu` is
// the CPU the code is for (--cpu; a named one gives the same caches on every host).
std::vector<double> runCompiled(const TestProgram& program, const std::vector<std::vector<double>>& inputs,
                                std::string* loopsText = nullptr, const std::set<std::string>& disabled = {},
                                const std::string& cpu = "host") {
  std::unique_ptr<Session> s = startSession(program);
  s->state().options.disabledPasses = disabled;
  s->state().options.cpu = cpu;
  REQUIRE(s->runThroughPassManager(buildPipeline(s->state().options, Stage::LLVM), Instrumentation{}));
  CompileState& st = s->state();
  if (loopsText) *loopsText = loops::printLoopProgram(*st.loops);
  const Graph& g = *st.graph;
  REQUIRE(inputs.size() == g.inputs.size());
  std::vector<Tensor> tensors;
  for (const TensorInfo& t : g.tensors) tensors.push_back(makeTensor(elemTypeOf(t.dtype), t.shape));
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    REQUIRE(static_cast<int64_t>(inputs[k].size()) == numElements(tensors[g.inputs[k]]));
    for (size_t i = 0; i < inputs[k].size(); ++i) store(tensors[g.inputs[k]], static_cast<int64_t>(i), inputs[k][i]);
  }
  std::vector<void*> ptrs;
  for (Tensor& t : tensors) ptrs.push_back(t.data.data());
  std::unique_ptr<CpuExecutable> exe =
      CpuExecutable::load(std::move(st.llvmContext), std::move(st.llvmModule), *st.loops, st.options.optLevel);
  ThreadPool pool(1);
  exe->run(ptrs.data(), pool);
  const Tensor& out = tensors[g.outputs.front()];
  std::vector<double> result;
  for (int64_t i = 0; i < numElements(out); ++i) result.push_back(loadElement(out, i));
  return result;
}

// (fixed) constant-fold evaluated relu, max and min with std::max/std::min, which return their
// first argument for -0 against +0, while the reference (`a > b ? a : b`) gave the second:
// relu(-0) folded to -0, max(-0, 0) to -0, min(0, -0) to +0, and the reference said the
// opposite. Dividing by the folded zero shows the sign. Both now treat -0 < +0.
TEST_CASE("bug: constant-fold gives relu/max/min of signed zeros the reference's result", "[passes][bug]") {
  TestProgram p = inlineProgram("signed_zeros",
                                "input x : f32[4]\n"
                                "output a[i] = sum(j < 1: x[i] / relu(-0))\n"
                                "output b[i] = sum(j < 1: x[i] / max(-0, 0))\n"
                                "output c[i] = sum(j < 1: x[i] / min(0, -0))\n");
  requireSameReference(p, "constant-fold", {vec({1, -1, 2, 0.5})});
}

// (fixed) constant-fold forwarded a constant node into its readers rounded to the node's dtype
// (f32), while the float64 reference keeps the stored value exact: rsqrt(3) was
// 0.5773502691896258 before the pass and 0.5773502588272095 (float(rsqrt(3))) after it, so y
// changed by a relative 1.8e-8. Now only exactly stored values are forwarded.
TEST_CASE("bug: constant-fold forwards constants without changing the reference's results", "[passes][bug]") {
  TestProgram p = inlineProgram("rounded_constant",
                                "let D = 3\n"
                                "input x : f64[4]\n"
                                "c[i < 4] = rsqrt(D)\n"
                                "output y[i] = x[i] * c[i]\n");
  requireSameReference(p, "constant-fold", {vec({1, -1, 2, 0.5})});
}

// (fixed) simplify rewrote x / c as x * (1/c) for a power of two c after checking that 1/c is
// finite in float64, but an f32 kernel computes in f32: for c = 2^-128 (a subnormal float)
// 1/c = 2^128 overflows to inf, so x * inf was +-inf (and 0 * inf NaN) where x / 2^-128 is
// finite (0.5 / 2^-128 = 2^127). Now only 2^-126..2^126 are rewritten.
TEST_CASE("bug: simplify's x / 2^k -> x * 2^-k keeps f32 results finite", "[passes][bug]") {
  TestProgram p = inlineProgram("tiny_divisor",
                                "input x : f32[4]\n"
                                "output y[i] = x[i] / 2.938735877055719e-39\n");
  std::vector<double> x = {0.5, -0.25, 1e-3, 0};
  std::vector<double> y = runCompiled(p, {x});
  REQUIRE(y.size() == x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    INFO("x = " << x[i]);
    double expected = static_cast<float>(static_cast<double>(static_cast<float>(x[i])) / 0x1p-128);
    CHECK(std::isfinite(y[i]));
    CHECK(y[i] == expected);
  }
}

// (fixed) split-ops gave the nodes it creates the statement's storage dtype; for an f16
// statement every intermediate was then stored as f16 under --fuse=none, though the statement
// computes in f32 (docs/architecture.md). (h + 1000) - 1000 is h in f32; with f16 intermediates
// h + 1000 was rounded to a multiple of 0.5 first (0.1 gave 0, 0.3 gave 0.5).
TEST_CASE("bug: --fuse=none computes an f16 statement as --fuse=all does", "[passes][bug]") {
  std::string text = "input h : f16[4]\noutput y = (h + 1000) - 1000\n";
  std::vector<double> h = {0.0999755859375, 0.300048828125, -0.7001953125, 0.12298583984375};  // f16 values
  ProgramOptions none;
  none.fuse = FuseMode::None;
  std::vector<double> fused = runCompiled(inlineProgram("f16_all", text), {h});
  std::vector<double> unfused = runCompiled(inlineProgram("f16_none", text, none), {h});
  CHECK(fused == h);
  CHECK(unfused == h);
}

// (fixed) cse returned true whenever it met a duplicate node, even one nobody reads (so
// redirecting its readers changed nothing). Here constant-fold has forwarded both rsqrt(16)
// nodes into their readers, which differ (x * 0.25 and 0.25 * x): cse changed nothing but said
// it did, and --print-after=cse printed the whole graph instead of "(unchanged)".
TEST_CASE("bug: cse returns false when it changes nothing", "[passes][bug]") {
  TestProgram p = inlineProgram("unread_duplicates",
                                "let D = 16\n"
                                "input x : f32[4]\n"
                                "output y[i] = x[i] * rsqrt(D) - rsqrt(D) * x[i]\n");
  Graph before, after;
  bool changed = true;
  aroundPass(p, "cse", before, after, changed);
  REQUIRE(graphStructure(before) == graphStructure(after));
  CHECK_FALSE(changed);

  // Run twice, cse must find nothing more the second time.
  TestProgram q = fileProgram(sourceRoot() / "tests" / "golden" / "passes" / "cse" / "within_statement.tex");
  aroundPass(q, "cse", before, after, changed);
  CHECK(changed);
  bool again = true;
  std::string error;
  Graph twice = applyGraphPass(*findPass("cse"), after, PipelineOptions{}, again, error);
  CHECK(graphStructure(twice) == graphStructure(after));
  CHECK_FALSE(again);
}

// constant-fold replaces select(c, a, b) with a constant condition by the branch it picks. Inside
// a reduction this drops the guarded accesses of the other branch, and with them the skipping of
// the terms where those accesses fall outside: the reference (and the loop IR's guard) skip a
// term when any guarded access it owns is outside, whichever branch select takes. Here
// count[0] counts the terms whose x[i + t - 1] is inside: 2 before the pass, 3 after it.
TEST_CASE("bug: constant-fold keeps the skipped terms of a select it folds", "[passes][bug]") {
  TestProgram p = inlineProgram("select_guard",
                                "let N = 6\n"
                                "input x : f32[N]\n"
                                "output count[i < N] = sum(t < 3: select(N > 4, 1, x[i + t - 1]))\n");
  requireSameReference(p, "constant-fold", {vec({1, 2, 3, 4, 5, 6})});
}

// Program.h: a Reduce's id is "unique within the computation". simplify rewrites pow(e, 2) as
// e * e with two copies of e; when e contains a reduction (a nested one, inside a reduction body
// that split-ops kept whole) the computation then holds two reductions with the same id, and
// computes the reduction twice: s[i] = sum(j: max(k: ...) * max(k: ...)), both max with id 1.
TEST_CASE("bug: the graph passes keep reduction ids unique within a computation", "[passes][bug]") {
  TestProgram p = inlineProgram("pow_of_reduction",
                                "let N = 4\n"
                                "input x : f32[N, N]\n"
                                "output s[i] = sum(j < N: pow(max(k < 3: x[i, j + k - 1]), 2))\n"
                                "output t[i] = pow(sum(k: x[i, k]), 2)\n");
  std::unique_ptr<Session> s = startSession(p);
  std::string duplicates;
  for (const PassInfo* pass : buildPipeline(s->state().options, Stage::Graph)) {
    s->runPass(*pass);
    REQUIRE(s->failure() == "");
    if (pass->stage != Stage::Graph) continue;
    const Graph& g = *s->state().graph;
    for (const Computation& c : g.computations) {
      std::vector<int> ids;
      forEachValue(c.body, [&](const Value& v) {
        if (v.kind == ValueKind::Reduce) ids.push_back(v.reduceId);
      });
      std::sort(ids.begin(), ids.end());
      auto twice = std::adjacent_find(ids.begin(), ids.end());
      if (twice != ids.end())
        duplicates += fmt::format("after {}: %{} has two reductions with id {}: {}", pass->name, g.tensors[c.tensor].name, *twice,
                                  printGraph(g));
    }
    if (!duplicates.empty()) break;  // the first pass that breaks it
  }
  CHECK(duplicates == "");
}

// The CPU code reduces max and min with one vmaxps/vminps per vector, which drops NaNs, and
// keeps a NaN flag per accumulator beside it (CodeGenLLVM combine): a NaN anywhere in a row, in
// the vector body or the scalar remainder, still makes the row's max and min NaN.
TEST_CASE("codegen: max and min reductions are NaN wherever the row holds a NaN", "[passes][codegen]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Rows of 100: the vector loop's body and its scalar remainder both see a NaN somewhere.
  std::vector<double> x(4 * 100);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>((i * 37) % 101) - 50;
  x[0 * 100 + 97] = nan;  // remainder
  x[1 * 100 + 5] = nan;   // vector body
  x[2 * 100 + 42] = 1000;
  x[3 * 100 + 99] = -1000;
  for (const char* op : {"max", "min"}) {
    INFO(op);
    TestProgram p = inlineProgram(std::string("nan_") + op, fmt::format("input x : f32[4, 100]\noutput m[i] = {}(j: x[i, j])\n", op));
    std::vector<double> m = runCompiled(p, {x});
    REQUIRE(m.size() == 4);
    CHECK(std::isnan(m[0]));
    CHECK(std::isnan(m[1]));
    const bool isMax = std::string(op) == "max";
    double e2 = isMax ? -1e9 : 1e9, e3 = e2;
    for (int j = 0; j < 100; ++j) {
      e2 = isMax ? std::max(e2, x[200 + j]) : std::min(e2, x[200 + j]);
      e3 = isMax ? std::max(e3, x[300 + j]) : std::min(e3, x[300 + j]);
    }
    CHECK(m[2] == e2);
    CHECK(m[3] == e3);
  }
}

// pair-bf16-lanes reads two bf16 as one word and computes the even and the odd element apart;
// every stored element must keep the bits of the element-by-element loop (NaN, infinities, signed
// zeros, subnormals, ties), and a row reduction only its value up to reordering. Rows of 34: the
// vector body and the scalar remainder of the pair loop both run.
TEST_CASE("codegen: bf16 pair lanes store the element-by-element loop's bits", "[passes][codegen]") {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> x(3 * 34), g(34);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (static_cast<double>((i * 37) % 101) - 50) / 7;
  for (size_t j = 0; j < g.size(); ++j) g[j] = 1 + static_cast<double>(j) / 64;
  x[3] = std::numeric_limits<double>::quiet_NaN();
  x[8] = inf;
  x[41] = -inf;
  x[50] = -0.0;
  x[77] = 3e-39;    // a bf16 subnormal
  x[78] = -1e-40;
  x[90] = 1.00390625;  // 1 + 2^-8: a tie once scaled, rounded to even
  const char* elementwise = "input x : bf16[3, 34]\ninput g : bf16[34]\noutput y[i, j] = x[i, j] * g[j] + 0.5 * x[i, j]\n";
  const std::set<std::string> unpaired = {"pair-bf16-lanes"};
  std::string loops;
  std::vector<double> y = runCompiled(inlineProgram("pairs", elementwise), {x, g}, &loops);
  CHECK(loops.find("for j < 34 vector bf16 pairs") != std::string::npos);
  std::vector<double> reference = runCompiled(inlineProgram("pairs", elementwise), {x, g}, &loops, unpaired);
  CHECK(loops.find("bf16 pairs") == std::string::npos);
  REQUIRE(y.size() == reference.size());
  for (size_t i = 0; i < y.size(); ++i) {
    INFO("element " << i << ": " << y[i] << " paired, " << reference[i] << " element by element");
    CHECK(std::memcmp(&y[i], &reference[i], sizeof(double)) == 0);  // bf16 -> double is exact; NaN bits too
  }
  const char* rows = "input x : bf16[3, 34]\ninput g : bf16[34]\noutput s[i] = sum(j: x[i, j] * g[j])\n";
  std::vector<double> finite = x;
  finite[3] = finite[8] = finite[41] = 1;
  std::vector<double> s = runCompiled(inlineProgram("pairs_sum", rows), {finite, g}, &loops);
  CHECK(loops.find("for j < 34 bf16 pairs") != std::string::npos);
  std::vector<double> sRef = runCompiled(inlineProgram("pairs_sum", rows), {finite, g}, nullptr, unpaired);
  for (size_t i = 0; i < s.size(); ++i) CHECK(s[i] == Approx(sRef[i]).epsilon(1e-2));
}

// split-chains runs a long chain in blocks, each as 2 or 3 loops that pass the values crossing a
// cut through arrays (compiler/backend/llvm/SplitPhases.h): every element must keep the bits of
// the loop in one phase, NaN, infinities, signed zeros, subnormals and tanh's clamp included.
// Rows of 600: two whole blocks of 256 and one of 88 (f32); 300 bf16 pairs, one block and 44.
TEST_CASE("codegen: loops split into phases store the one-loop bits", "[passes][codegen][split-chains]") {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> x(3 * 600), b(600);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (static_cast<double>((i * 7919) % 2003) - 1001) / 97;
  for (size_t j = 0; j < b.size(); ++j) b[j] = static_cast<double>(j % 13) / 16 - 0.4;
  x[3] = std::numeric_limits<double>::quiet_NaN();
  x[300] = inf;
  x[301] = -inf;
  x[302] = -0.0;
  x[303] = 1e-40;   // subnormal
  x[304] = -3e-39;
  x[1299] = 50;     // tanh rounds to 1
  x[1799] = -9.04;  // just inside tanh's clamp
  const std::set<std::string> whole = {"split-chains"};
  for (const char* dtype : {"f32", "bf16"}) {
    INFO(dtype);
    const std::string gelu = fmt::format(
        "input x : {0}[3, 600]\ninput b : {0}[600]\nh = x + b\n"
        "output y = 0.5 * h * (1 + tanh(0.7978845608 * (h + 0.044715 * h * h * h)))\n", dtype);
    const std::string logs = fmt::format("input x : {0}[3, 600]\ninput b : {0}[600]\noutput y = x * log(abs(x + b) + 1)\n", dtype);
    for (const std::string& text : {gelu, logs}) {
      std::string loops;
      std::vector<double> y = runCompiled(inlineProgram("phases", text), {x, b}, &loops, {}, "haswell");
      CHECK(loops.find(" phases of 256") != std::string::npos);
      std::vector<double> reference = runCompiled(inlineProgram("phases", text), {x, b}, &loops, whole, "haswell");
      CHECK(loops.find(" phases") == std::string::npos);
      REQUIRE(y.size() == reference.size());
      for (size_t i = 0; i < y.size(); ++i) {
        INFO("element " << i << ": " << y[i] << " in phases, " << reference[i] << " in one loop");
        CHECK(std::memcmp(&y[i], &reference[i], sizeof(double)) == 0);
      }
    }
  }
}

// pipeline-row-stores moves a row's streamed stores into the next row's last pass: every
// element keeps its value, bit for bit, with a row of NaN, one of -inf, one with +inf (NaN after the division) and signed zeros.
// Outputs over the 32 MiB last-level cache that a named CPU (haswell) is given, so that the
// stores stream on every host: 33 and 34 MiB, blocks of 33 and 34 rows (the steady loop takes
// two rows a step; an even block leaves one over).
TEST_CASE("codegen: pipelined row stores give the unpipelined bits", "[passes][codegen]") {
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t rows : {2112, 2176}) {
    INFO(rows << " rows");
    const int64_t cols = 4096;
    std::vector<double> x(static_cast<size_t>(rows * cols));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>((i * 7919) % 2003) / 97 - 10;
    x[5 * cols + 17] = std::numeric_limits<double>::quiet_NaN();
    for (int64_t j = 0; j < cols; ++j) x[static_cast<size_t>(6 * cols + j)] = -inf;
    x[7 * cols + 3] = inf;
    x[8 * cols + 9] = -0.0;
    x[static_cast<size_t>((rows - 1) * cols)] = 200;  // the last row, which the block's end stores
    const std::string text = fmt::format(
        "input x : f32[{}, {}]\nm[i] = max(j: x[i, j])\ne[i, j] = exp(x[i, j] - m[i])\ns[i] = sum(k: e[i, k])\noutput y[i, j] = e[i, j] / s[i]\n",
        rows, cols);
    std::string loops;
    std::vector<double> y = runCompiled(inlineProgram("pipelined", text), {x}, &loops, {}, "haswell");
    CHECK(loops.find("rows pipelined") != std::string::npos);
    CHECK(loops.find(fmt::format("blocks of {} rows", rows / 64)) != std::string::npos);
    std::vector<double> reference = runCompiled(inlineProgram("pipelined", text), {x}, &loops, {"pipeline-row-stores"}, "haswell");
    CHECK(loops.find("rows pipelined") == std::string::npos);
    REQUIRE(y.size() == reference.size());
    size_t differing = 0;
    for (size_t i = 0; i < y.size(); ++i) differing += std::memcmp(&y[i], &reference[i], sizeof(double)) != 0;
    CHECK(differing == 0);
    CHECK(std::isnan(y[5 * cols]));
    CHECK(y[static_cast<size_t>((rows - 1) * cols)] == 1);
  }
}

}  // namespace
}  // namespace texc::passtest
