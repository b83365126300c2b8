// Unit tests of semantic analysis that read the Program it builds (not its text): dtypes and
// shapes, index variables (extent, RangeSource, where the extent came from), the bounds analysis
// (index ranges, InBounds vs Guarded and the owning reduction), whole-tensor desugaring, dead
// tensor removal and -D overrides.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "frontend/AST.h"
#include "frontend/Diagnostics.h"
#include "frontend/Parser.h"
#include "frontend/Program.h"
#include "frontend/Sema.h"
#include "frontend/Source.h"

namespace texc {
namespace {

// One run of the front end. The file and the engine live on the heap: the engine and the
// program's ranges point into the file.
struct Analysed {
  std::unique_ptr<SourceFile> file;
  std::unique_ptr<DiagnosticEngine> diags;
  Module module;
  std::optional<Program> program;
};

Analysed analyse(const std::string& text, const LetOverrides& overrides = {}) {
  Analysed a;
  a.file = std::make_unique<SourceFile>("test.tex", text);
  a.diags = std::make_unique<DiagnosticEngine>(a.file.get());
  a.module = parse(*a.file, *a.diags);
  if (!a.diags->hasErrors()) a.program = analyze(a.module, *a.diags, overrides);
  return a;
}

// The program of a run that must have succeeded.
const Program& ok(const Analysed& a) {
  INFO(a.diags->render(false));
  REQUIRE(a.program.has_value());
  return *a.program;
}

// The errors (and warnings) a run gave, by id.
std::vector<DiagId> diagIds(const Analysed& a) {
  std::vector<DiagId> ids;
  for (const Diagnostic& d : a.diags->diagnostics()) ids.push_back(d.id);
  return ids;
}

const TensorInfo& tensor(const Program& p, const std::string& name) {
  int id = p.findTensor(name);
  INFO("tensor " << name);
  REQUIRE(id >= 0);
  return p.tensors[id];
}

const Computation& comp(const Program& p, const std::string& name) {
  const TensorInfo& t = tensor(p, name);
  INFO("computation of " << name);
  REQUIRE(t.computation >= 0);
  REQUIRE(t.computation < static_cast<int>(p.computations.size()));
  const Computation& c = p.computations[t.computation];
  REQUIRE(c.tensor == p.findTensor(name));
  return c;
}

// The index variable `name` of `c` (the first, when sibling reductions reuse a name).
const IndexVar& var(const Computation& c, const std::string& name) {
  for (const IndexVar& v : c.vars)
    if (v.name == name) return v;
  FAIL("no index variable " << name);
  return c.vars.front();
}

int varId(const Computation& c, const std::string& name) {
  for (size_t i = 0; i < c.vars.size(); ++i)
    if (c.vars[i].name == name) return static_cast<int>(i);
  FAIL("no index variable " << name);
  return -1;
}

std::vector<const Value*> accesses(const Computation& c) {
  std::vector<const Value*> out;
  forEachValue(c.body, [&](const Value& v) {
    if (v.kind == ValueKind::Access) out.push_back(&v);
  });
  return out;
}

// The `nth` access (in source order) of `c` to the tensor `name`.
const Value& access(const Program& p, const Computation& c, const std::string& name, int nth = 0) {
  for (const Value* v : accesses(c))
    if (p.tensors[v->tensor].name == name && nth-- == 0) return *v;
  FAIL("no access to " << name);
  return c.body;
}

std::vector<const Value*> reduces(const Computation& c) {
  std::vector<const Value*> out;
  forEachValue(c.body, [&](const Value& v) {
    if (v.kind == ValueKind::Reduce) out.push_back(&v);
  });
  return out;
}

using Range = std::pair<int64_t, int64_t>;
Range range(const Interval& r) { return {r.lo, r.hi}; }

std::vector<Range> ranges(const Value& access) {
  std::vector<Range> out;
  for (const Interval& r : access.indexRanges) out.push_back(range(r));
  return out;
}

// The 1-based line and column of the `nth` occurrence of `needle` in `text`, plus `shift` chars.
std::pair<uint32_t, uint32_t> lineCol(const std::string& text, const std::string& needle, size_t shift = 0, int nth = 0) {
  size_t at = text.find(needle);
  while (at != std::string::npos && nth-- > 0) at = text.find(needle, at + 1);
  REQUIRE(at != std::string::npos);
  at += shift;
  uint32_t line = 1, col = 1;
  for (size_t i = 0; i < at; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

std::pair<uint32_t, uint32_t> lineCol(SourceRange r) { return {r.begin.line, r.begin.column}; }

// ---- dtypes and shapes -----------------------------------------------------------------------

TEST_CASE("sema: a computed tensor has the widest dtype it reads, f32 if none", "[sema][dtype]") {
  Analysed a = analyse(
      "input a : f64[4]\n"
      "input f : f32[4]\n"
      "input h : f16[4]\n"
      "input g : bf16[4]\n"
      "input s : f64\n"
      "output wide[i] = a[i] + f[i]\n"
      "output half[i] = h[i] * 2\n"
      "output brain = g + 1\n"
      "output mixed[i] = h[i] + g[i]\n"
      "output hf[i] = h[i] + f[i]\n"
      "output ha[i] = h[i] + a[i]\n"
      "output gs[i] = g[i] * s\n"
      "output none[i < 4] = i + 1\n"
      "output constant = 2\n"
      "output red = sum(i: h[i])\n"
      "output chained[i] = half[i] + brain[i]\n");
  const Program& p = ok(a);
  CHECK(tensor(p, "a").dtype == DType::F64);
  CHECK(tensor(p, "g").dtype == DType::BF16);
  CHECK(tensor(p, "wide").dtype == DType::F64);
  CHECK(tensor(p, "half").dtype == DType::F16);
  CHECK(tensor(p, "brain").dtype == DType::BF16);
  CHECK(tensor(p, "mixed").dtype == DType::F32);  // neither f16 nor bf16 holds the other
  CHECK(tensor(p, "hf").dtype == DType::F32);
  CHECK(tensor(p, "ha").dtype == DType::F64);
  CHECK(tensor(p, "gs").dtype == DType::F64);  // a rank-0 f64 read bare
  CHECK(tensor(p, "none").dtype == DType::F32);
  CHECK(tensor(p, "constant").dtype == DType::F32);
  CHECK(tensor(p, "red").dtype == DType::F16);
  CHECK(tensor(p, "chained").dtype == DType::F32);  // reads f16 and bf16 tensors

  CHECK(computeDType(DType::F16) == DType::F32);
  CHECK(computeDType(DType::BF16) == DType::F32);
  CHECK(computeDType(DType::F32) == DType::F32);
  CHECK(computeDType(DType::F64) == DType::F64);
  CHECK(dtypeBytes(DType::F64) == 8);
  CHECK(dtypeBytes(DType::BF16) == 2);
}

TEST_CASE("sema: shapes of inputs and computed tensors", "[sema][shape]") {
  Analysed a = analyse(
      "let M = 6; let K = 4; let N = 5\n"
      "input A : f32[M, K]\n"
      "input B : f32[K, N]\n"
      "input s : f32\n"
      "output C[i, j] = sum(k: A[i, k] * B[k, j])\n"
      "output T[j, i] = C[i, j]\n"
      "output total = sum(i, j: C[i, j]) * s\n"
      "output P[i < M / 2, q < 7] = A[2 * i, 0] + q\n");
  const Program& p = ok(a);
  CHECK(tensor(p, "A").shape == std::vector<int64_t>{6, 4});
  CHECK(tensor(p, "s").shape.empty());
  CHECK(tensor(p, "C").shape == std::vector<int64_t>{6, 5});
  CHECK(tensor(p, "T").shape == std::vector<int64_t>{5, 6});
  CHECK(tensor(p, "total").shape.empty());
  CHECK(tensor(p, "total").numElements() == 1);
  CHECK(tensor(p, "P").shape == std::vector<int64_t>{3, 7});
  CHECK(tensor(p, "P").numElements() == 21);
  CHECK(p.inputs == std::vector<int>{p.findTensor("A"), p.findTensor("B"), p.findTensor("s")});
  CHECK(p.outputs == std::vector<int>{p.findTensor("C"), p.findTensor("T"), p.findTensor("total"), p.findTensor("P")});
  CHECK(tensor(p, "A").isInput);
  CHECK_FALSE(tensor(p, "A").isOutput);
  CHECK(tensor(p, "A").computation == -1);
}

// ---- index variables -------------------------------------------------------------------------

const std::string kConv =
    "let N = 1; let C = 4; let K = 8; let H = 6; let W = 6\n"
    "input I : f32[N, C, H, W]\n"
    "input Wt : f32[K, C, 3, 3]\n"
    "conv[n, k, y < H, x < W] = sum(c, r, s: I[n, c, y + r - 1, x + s - 1] * Wt[k, c, r, s])\n"
    "output pool[n, k, y < H / 2, x < W / 2] = max(dy < 2, dx < 2: conv[n, k, 2 * y + dy, 2 * x + dx])\n";

TEST_CASE("sema: index variables get an extent and the reason for it", "[sema][range]") {
  Analysed a = analyse(kConv);
  const Program& p = ok(a);
  const Computation& conv = comp(p, "conv");
  REQUIRE(conv.vars.size() == 7);
  CHECK(conv.numLhsVars == 4);
  CHECK_FALSE(conv.wholeTensorForm);
  std::vector<std::string> names;
  for (const IndexVar& v : conv.vars) names.push_back(v.name);
  CHECK(names == std::vector<std::string>{"n", "k", "y", "x", "c", "r", "s"});

  const IndexVar& n = var(conv, "n");
  CHECK(n.extent == 1);
  CHECK(n.source == RangeSource::Inferred);
  CHECK_FALSE(n.isReduction);
  CHECK(n.reduction == -1);
  CHECK(n.sourceText == "inferred from dimension 0 of 'I' (f32[1, 4, 6, 6])");
  CHECK(lineCol(n.sourceRange) == lineCol(kConv, "I[n", 2));  // the index `n` of I[n, ...]
  CHECK(lineCol(n.declRange) == lineCol(kConv, "conv[n", 5));

  const IndexVar& k = var(conv, "k");
  CHECK(k.extent == 8);
  CHECK(k.sourceText == "inferred from dimension 0 of 'Wt' (f32[8, 4, 3, 3])");

  const IndexVar& y = var(conv, "y");
  CHECK(y.extent == 6);
  CHECK(y.source == RangeSource::Bound);
  CHECK(y.sourceText == "bound H");
  CHECK(lineCol(y.sourceRange) == lineCol(kConv, "y < H", 4));

  const IndexVar& c = var(conv, "c");
  CHECK(c.isReduction);
  CHECK(c.reduction == 0);
  CHECK(c.extent == 4);
  CHECK(c.source == RangeSource::Inferred);
  CHECK(c.sourceText == "inferred from dimension 1 of 'I' (f32[1, 4, 6, 6])");

  // r is first used in `y + r - 1`, which is no evidence; Wt[k, c, r, s] is.
  const IndexVar& r = var(conv, "r");
  CHECK(r.extent == 3);
  CHECK(r.sourceText == "inferred from dimension 2 of 'Wt' (f32[8, 4, 3, 3])");
  CHECK(lineCol(r.sourceRange) == lineCol(kConv, "Wt[k, c, r", 9));

  const Computation& pool = comp(p, "pool");
  CHECK(var(pool, "y").extent == 3);
  CHECK(var(pool, "y").sourceText == "bound H / 2");
  CHECK(var(pool, "dy").extent == 2);
  CHECK(var(pool, "dy").isReduction);
  CHECK(var(pool, "dy").source == RangeSource::Bound);
  CHECK(var(pool, "dy").sourceText == "bound 2");
  CHECK(var(pool, "n").sourceText == "inferred from dimension 0 of 'conv' (f32[1, 8, 6, 6])");
  CHECK(tensor(p, "pool").shape == std::vector<int64_t>{1, 8, 3, 3});
}

TEST_CASE("sema: an explicit bound wins over the extents of the tensors it indexes", "[sema][range]") {
  SECTION("smaller than the extent: proven in bounds") {
    Analysed a = analyse("input x : f32[8]\ninput w : f32[4]\noutput head[i < 4] = x[i] * w[i]\n");
    const Program& p = ok(a);
    const Computation& c = comp(p, "head");
    CHECK(var(c, "i").extent == 4);
    CHECK(var(c, "i").source == RangeSource::Bound);
    CHECK(access(p, c, "x").check == AccessCheck::InBounds);
    CHECK(ranges(access(p, c, "x")) == std::vector<Range>{{0, 3}});
  }
  SECTION("larger than the extent inside a reduction: guarded") {
    Analysed a = analyse("input w : f32[4]\noutput over = sum(j < 6: w[j])\n");
    const Program& p = ok(a);
    const Computation& c = comp(p, "over");
    CHECK(var(c, "j").extent == 6);
    const Value& w = access(p, c, "w");
    CHECK(w.check == AccessCheck::Guarded);
    CHECK(w.ownerReduce == 0);
    CHECK(ranges(w) == std::vector<Range>{{0, 5}});
  }
  SECTION("larger than the extent outside a reduction: an error at the index") {
    std::string text = "input x : f32[8]\noutput y[i < 10] = x[i]\n";
    Analysed a = analyse(text);
    CHECK_FALSE(a.program.has_value());
    REQUIRE(diagIds(a) == std::vector<DiagId>{DiagId::OutOfBounds});
    CHECK(lineCol(a.diags->diagnostics()[0].range) == lineCol(text, "x[i]", 2));
  }
  SECTION("inferred extents that disagree are an error") {
    Analysed a = analyse("input x : f32[8]\ninput w : f32[4]\noutput y[i] = x[i] + w[i]\n");
    CHECK(diagIds(a) == std::vector<DiagId>{DiagId::RangeConflict});
  }
  SECTION("a variable used in no access alone needs a bound") {
    Analysed a = analyse("let N = 8\ninput x : f32[N]\noutput rev[i] = x[N - 1 - i]\n");
    CHECK(diagIds(a) == std::vector<DiagId>{DiagId::RangeUnknown});
  }
}

// ---- bounds analysis -------------------------------------------------------------------------

TEST_CASE("sema: accesses are in bounds or guarded by their innermost reduction", "[sema][bounds]") {
  SECTION("padded convolution and pooling") {
    Analysed a = analyse(kConv);
    const Program& p = ok(a);
    const Computation& conv = comp(p, "conv");
    CHECK(conv.numReduces == 1);
    const Value& in = access(p, conv, "I");
    CHECK(in.check == AccessCheck::Guarded);
    CHECK(in.ownerReduce == 0);
    CHECK(ranges(in) == std::vector<Range>{{0, 0}, {0, 3}, {-1, 6}, {-1, 6}});
    const Value& wt = access(p, conv, "Wt");
    CHECK(wt.check == AccessCheck::InBounds);
    CHECK(wt.ownerReduce == 0);
    CHECK(ranges(wt) == std::vector<Range>{{0, 7}, {0, 3}, {0, 2}, {0, 2}});

    const Computation& pool = comp(p, "pool");
    const Value& cv = access(p, pool, "conv");
    CHECK(cv.check == AccessCheck::InBounds);
    CHECK(cv.ownerReduce == 0);
    CHECK(ranges(cv) == std::vector<Range>{{0, 0}, {0, 7}, {0, 5}, {0, 5}});
  }
  SECTION("nested reductions") {
    Analysed a = analyse(
        "let B = 2; let N = 8; let M = 6\n"
        "input x : f32[B, N, M]\n"
        "output c[b] = sum(i: x[b, i, 0] * max(j: x[b, i, j]))\n"
        "output d[b, i < N] = sum(di < 3: max(j < 8: x[b, i + di - 1, j]))\n"
        "output e[b, i] = x[b, i, 0] + sum(j: x[b, i, j])\n");
    const Program& p = ok(a);

    const Computation& c = comp(p, "c");
    CHECK(c.numReduces == 2);
    std::vector<const Value*> rs = reduces(c);
    REQUIRE(rs.size() == 2);
    CHECK(rs[0]->reduceId == 0);
    CHECK(rs[0]->reduceKind == ReduceKind::Sum);
    CHECK(rs[1]->reduceId == 1);
    CHECK(rs[1]->reduceKind == ReduceKind::Max);
    CHECK(rs[0]->reduceVars == std::vector<int>{varId(c, "i")});
    CHECK(rs[1]->reduceVars == std::vector<int>{varId(c, "j")});
    CHECK(var(c, "i").reduction == 0);
    CHECK(var(c, "j").reduction == 1);
    CHECK(access(p, c, "x", 0).ownerReduce == 0);
    CHECK(access(p, c, "x", 1).ownerReduce == 1);

    // Both the row and the column overhang; the term skipped is the inner max's.
    const Value& xd = access(p, comp(p, "d"), "x");
    CHECK(xd.check == AccessCheck::Guarded);
    CHECK(xd.ownerReduce == 1);
    CHECK(ranges(xd) == std::vector<Range>{{0, 1}, {-1, 8}, {0, 7}});

    const Computation& e = comp(p, "e");
    CHECK(access(p, e, "x", 0).ownerReduce == -1);
    CHECK(access(p, e, "x", 0).check == AccessCheck::InBounds);
    CHECK(access(p, e, "x", 1).ownerReduce == 0);
    CHECK(access(p, e, "x", 1).check == AccessCheck::InBounds);
  }
}

// The range the analysis gives `index` over the box of the left-hand variables `lhs` (the access
// sits in a one-term reduction so that it may fall outside without an error).
Range indexRange(const std::string& lhs, const std::string& index) {
  Analysed a = analyse("input t : f32[1000]\noutput o[" + lhs + "] = sum(z < 1: t[" + index + "])\n");
  const Program& p = ok(a);
  const Value& v = access(p, comp(p, "o"), "t");
  REQUIRE(v.indexRanges.size() == 1);
  return range(v.indexRanges[0]);
}

TEST_CASE("sema: index ranges of affine, floor division and modulo indices", "[sema][bounds]") {
  CHECK(indexRange("y < 28, dy < 2", "2 * y + dy") == Range{0, 55});
  CHECK(indexRange("y < 28, dy < 3", "2 * y + dy - 1") == Range{-1, 55});
  CHECK(indexRange("i < 8", "7 - i") == Range{0, 7});
  CHECK(indexRange("i < 4, j < 4", "i - j") == Range{-3, 3});
  CHECK(indexRange("i < 4", "i - i") == Range{0, 0});  // coefficients are collected: exact
  CHECK(indexRange("i < 4", "2 * i - i + 1") == Range{1, 4});
  CHECK(indexRange("i < 4", "-(2 * i) + 6") == Range{0, 6});

  CHECK(indexRange("i < 8", "i / 2") == Range{0, 3});
  CHECK(indexRange("i < 9", "i / 2") == Range{0, 4});
  CHECK(indexRange("i < 3", "(i - 3) / 2") == Range{-2, -1});  // floor, not truncation
  CHECK(indexRange("i < 8", "-(i / 4)") == Range{-1, 0});

  CHECK(indexRange("i < 4", "i % 4") == Range{0, 3});
  CHECK(indexRange("i < 8", "i % 4") == Range{0, 3});
  CHECK(indexRange("i < 2", "i % 4") == Range{0, 1});        // within one period: tight
  CHECK(indexRange("i < 2", "(i + 2) % 4") == Range{2, 3});  // within one period: tight
  CHECK(indexRange("i < 3", "(i + 2) % 4") == Range{0, 3});  // [2, 4] crosses a period
  CHECK(indexRange("i < 3", "(i - 3) % 4") == Range{1, 3});  // [-3, -1] is one period (floor)
  CHECK(indexRange("i < 3", "(i + 5) % 4") == Range{1, 3});
  CHECK(indexRange("i < 8", "2 * (i % 4)") == Range{0, 6});
  CHECK(indexRange("i < 8", "i / 2 % 2") == Range{0, 1});
}

// Every index below, over every point of its box: the range contains every value (sound), and
// is attained at both ends (exact) when `exact` says so.
TEST_CASE("sema: index ranges are sound, and exact where the spec says so", "[sema][bounds]") {
  struct Case {
    std::string lhs, index;
    bool exact;
  };
  const std::vector<Case> cases = {
      {"i < 5, j < 3", "2 * i - 3 * j + 1", true},
      {"i < 5, j < 3", "i + j - i", true},
      {"i < 5, j < 3", "-(i - 2 * j) * 3", true},
      {"i < 7, j < 3", "(i + j) / 3", true},
      {"i < 7, j < 3", "(i - j - 4) / 3", true},
      {"i < 7, j < 3", "(2 * i - j) % 5", false},
      {"i < 2, j < 2", "(i + j + 4) % 8", true},
      {"i < 3, j < 2", "(i - j - 9) % 4", false},
      {"i < 7, j < 3", "i / 2 * 2 + i % 2", false},
      {"i < 7, j < 3", "i - 4 * (i / 4)", false},
      {"i < 9, j < 3", "i / 2 / 2 + j % 2 * 3", false},
      {"i < 9, j < 4", "(i % 4 + j) / 2", false},
  };
  for (const Case& k : cases) {
    INFO(k.lhs << ": " << k.index);
    Analysed a = analyse("input t : f32[1000]\noutput o[" + k.lhs + "] = sum(z < 1: t[" + k.index + "])\n");
    const Program& p = ok(a);
    const Computation& c = comp(p, "o");
    const Value& v = access(p, c, "t");
    REQUIRE(v.indexRanges.size() == 1);
    Interval r = v.indexRanges[0];
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
    std::vector<int64_t> vals(c.vars.size(), 0);
    for (int64_t i = 0; i < c.vars[0].extent; ++i) {
      for (int64_t j = 0; j < c.vars[1].extent; ++j) {
        vals[0] = i;
        vals[1] = j;
        int64_t x = evalIndex(v.indices[0], vals);
        lo = std::min(lo, x);
        hi = std::max(hi, x);
      }
    }
    CHECK(r.lo <= lo);
    CHECK(hi <= r.hi);
    if (k.exact) CHECK(Range{r.lo, r.hi} == Range{lo, hi});
  }
}

// ---- whole-tensor form -----------------------------------------------------------------------

TEST_CASE("sema: the whole-tensor form is desugared with numpy broadcasting", "[sema][broadcast]") {
  Analysed a = analyse(
      "input s : f32\n"
      "input row : f32[1, 3]\n"
      "input col : f32[4, 1]\n"
      "input x : f32[4, 3]\n"
      "input v : f32[3]\n"
      "input one : f32[1, 1]\n"
      "output y = x * s + row + col\n"
      "output z = v + one\n"
      "output total = sum(i, j: x[i, j])\n"
      "output w = x + sum(i0: x[0, i0])\n");
  const Program& p = ok(a);
  auto isVar = [](const IndexExpr& ix, int v) { return ix.kind == IndexExpr::Kind::Var && ix.var == v; };
  auto isZero = [](const IndexExpr& ix) { return ix.kind == IndexExpr::Kind::Const && ix.constant == 0; };

  const Computation& y = comp(p, "y");
  CHECK(y.wholeTensorForm);
  CHECK(tensor(p, "y").shape == std::vector<int64_t>{4, 3});
  REQUIRE(y.numLhsVars == 2);
  REQUIRE(y.vars.size() == 2);
  CHECK(y.vars[0].name == "i0");
  CHECK(y.vars[0].extent == 4);
  CHECK(y.vars[0].source == RangeSource::Broadcast);
  CHECK(y.vars[0].sourceText == "dimension 0 of the broadcast shape [4, 3]");
  CHECK(y.vars[1].name == "i1");
  CHECK(y.vars[1].extent == 3);
  const Value& xs = access(p, y, "x");
  REQUIRE(xs.indices.size() == 2);
  CHECK(isVar(xs.indices[0], 0));
  CHECK(isVar(xs.indices[1], 1));
  CHECK(access(p, y, "s").indices.empty());  // rank 0: no indices
  const Value& row = access(p, y, "row");
  REQUIRE(row.indices.size() == 2);
  CHECK(isZero(row.indices[0]));  // a dimension of 1 broadcast over 4 is read at 0
  CHECK(isVar(row.indices[1], 1));
  const Value& col = access(p, y, "col");
  REQUIRE(col.indices.size() == 2);
  CHECK(isVar(col.indices[0], 0));
  CHECK(isZero(col.indices[1]));
  for (const Value* acc : accesses(y)) {
    CHECK(acc->check == AccessCheck::InBounds);
    CHECK(acc->ownerReduce == -1);
  }

  // [3] + [1, 1] -> [1, 3]: shapes align on the right; a 1 that stays 1 is a variable.
  const Computation& z = comp(p, "z");
  CHECK(tensor(p, "z").shape == std::vector<int64_t>{1, 3});
  const Value& v = access(p, z, "v");
  REQUIRE(v.indices.size() == 1);
  CHECK(isVar(v.indices[0], 1));
  const Value& one = access(p, z, "one");
  REQUIRE(one.indices.size() == 2);
  CHECK(isVar(one.indices[0], 0));
  CHECK(isZero(one.indices[1]));
  CHECK(z.vars[0].extent == 1);

  // A reduction over everything gives rank 0: no left-hand variables.
  const Computation& total = comp(p, "total");
  CHECK(tensor(p, "total").shape.empty());
  CHECK(total.numLhsVars == 0);
  REQUIRE(total.vars.size() == 2);
  CHECK(total.vars[0].isReduction);

  // Fresh names avoid the names in use; reduction variables come after the fresh ones.
  const Computation& w = comp(p, "w");
  REQUIRE(w.vars.size() == 3);
  CHECK(w.vars[0].name != "i0");
  CHECK(w.vars[0].source == RangeSource::Broadcast);
  CHECK(w.vars[2].name == "i0");
  CHECK(w.vars[2].isReduction);
  const Value& inner = access(p, w, "x", 1);
  REQUIRE(inner.indices.size() == 2);
  CHECK(isVar(inner.indices[1], 2));
  CHECK(inner.ownerReduce == 0);
}

TEST_CASE("sema: broadcasting errors name both shapes", "[sema][broadcast]") {
  Analysed a = analyse("input x : f32[4, 3]\ninput v : f32[4]\noutput y = x + v\n");
  REQUIRE(diagIds(a) == std::vector<DiagId>{DiagId::ShapeMismatch});
  const std::string& msg = a.diags->diagnostics()[0].message;
  CHECK(msg.find("[4, 3]") != std::string::npos);
  CHECK(msg.find("[4]") != std::string::npos);
}

// ---- liveness --------------------------------------------------------------------------------

TEST_CASE("sema: computed tensors no output depends on are removed with a warning", "[sema][liveness]") {
  std::string text =
      "input x : f32[4]\n"
      "input unused : f32[2]\n"
      "dead[i] = x[i] * 2\n"
      "alsoDead = dead + 1\n"
      "live[i] = x[i] + 1\n"
      "output y[i] = live[i] * live[3 - i]\n";
  Analysed a = analyse(text);
  const Program& p = ok(a);
  CHECK_FALSE(a.diags->hasErrors());
  CHECK(a.diags->warningCount() == 2);
  REQUIRE(diagIds(a) == std::vector<DiagId>{DiagId::UnusedTensor, DiagId::UnusedTensor});
  const Diagnostic& d0 = a.diags->diagnostics()[0];
  const Diagnostic& d1 = a.diags->diagnostics()[1];
  CHECK(d0.severity == Severity::Warning);
  CHECK(d0.message.find("'dead'") != std::string::npos);
  CHECK(lineCol(d0.range) == lineCol(text, "dead[i]"));
  CHECK(d1.message.find("'alsoDead'") != std::string::npos);
  CHECK(lineCol(d1.range) == lineCol(text, "alsoDead"));

  std::vector<std::string> names;
  for (const TensorInfo& t : p.tensors) names.push_back(t.name);
  CHECK(names == std::vector<std::string>{"x", "unused", "live", "y"});  // inputs are never removed
  CHECK(p.findTensor("dead") == -1);
  CHECK(p.findTensor("alsoDead") == -1);
  REQUIRE(p.computations.size() == 2);
  CHECK(p.inputs == std::vector<int>{0, 1});
  CHECK(p.outputs == std::vector<int>{3});
  // Ids are renumbered consistently after the removal.
  CHECK(tensor(p, "live").computation == 0);
  CHECK(p.computations[0].tensor == 2);
  CHECK(p.computations[1].tensor == 3);
  for (const Value* acc : accesses(p.computations[1])) CHECK(p.tensors[acc->tensor].name == "live");
  CHECK(p.tensors[access(p, comp(p, "live"), "x").tensor].name == "x");
}

// ---- -D overrides ----------------------------------------------------------------------------

const std::string kLets =
    "let N = 64\n"
    "let H = 32\n"
    "let HALF = H / 2\n"
    "let NH = N * HALF + 1\n"
    "let K = 5\n"
    "input x : f32[N, H]\n"
    "output y[i, j < HALF] = x[i, 2 * j + 1]\n"
    "output z[k < NH] = sum(i < N, j: x[i, j]) + k + K\n";

TEST_CASE("sema: -D overrides literal lets and re-evaluates the lets computed from them", "[sema][overrides]") {
  Analysed a = analyse(kLets, {{"N", 8}, {"H", 6}});
  const Program& p = ok(a);
  REQUIRE(p.lets.size() == 5);
  auto let = [&](size_t i) { return std::make_tuple(p.lets[i].name, p.lets[i].value, p.lets[i].isLiteral, p.lets[i].overridden); };
  CHECK(let(0) == std::make_tuple(std::string("N"), int64_t{8}, true, true));
  CHECK(let(1) == std::make_tuple(std::string("H"), int64_t{6}, true, true));
  CHECK(let(2) == std::make_tuple(std::string("HALF"), int64_t{3}, false, false));
  CHECK(let(3) == std::make_tuple(std::string("NH"), int64_t{25}, false, false));
  CHECK(let(4) == std::make_tuple(std::string("K"), int64_t{5}, true, false));
  CHECK(tensor(p, "x").shape == std::vector<int64_t>{8, 6});
  CHECK(tensor(p, "y").shape == std::vector<int64_t>{8, 3});
  CHECK(tensor(p, "z").shape == std::vector<int64_t>{25});
  CHECK(ranges(access(p, comp(p, "y"), "x")) == std::vector<Range>{{0, 7}, {1, 5}});

  Analysed plain = analyse(kLets);
  const Program& q = ok(plain);
  CHECK(q.lets[0].value == 64);
  CHECK_FALSE(q.lets[0].overridden);
  CHECK(q.lets[3].value == 64 * 16 + 1);
}

TEST_CASE("sema: checkOverrides refuses names that are not literal lets", "[sema][overrides]") {
  Analysed a = analyse(kLets);
  const Module& m = a.module;
  CHECK_FALSE(checkOverrides(m, {}).has_value());
  CHECK_FALSE(checkOverrides(m, {{"N", 8}, {"K", 1}}).has_value());

  std::optional<std::string> notLet = checkOverrides(m, {{"Q", 3}});
  REQUIRE(notLet.has_value());
  CHECK(*notLet == "-D Q: the program has no 'let Q'");
  std::optional<std::string> tensorName = checkOverrides(m, {{"x", 3}});
  REQUIRE(tensorName.has_value());
  CHECK(*tensorName == "-D x: the program has no 'let x'");

  std::optional<std::string> computed = checkOverrides(m, {{"HALF", 2}});
  REQUIRE(computed.has_value());
  CHECK(*computed ==
        "-D HALF: 'let HALF' is computed from other sizes, so it cannot be overridden; override the literal sizes it depends on");

  std::optional<std::string> zero = checkOverrides(m, {{"N", 0}});
  REQUIRE(zero.has_value());
  CHECK(*zero == "-D N=0: sizes must be > 0");
}

// ---- the dump --------------------------------------------------------------------------------

// A bound written over several lines (newlines are allowed inside brackets) must still give a
// one-line reason: the dump has one index variable a line.
TEST_CASE("sema: a bound written over several lines is quoted on one line", "[sema][dump]") {
  Analysed a = analyse("let N = 8\ninput x : f32[N]\noutput y[i < (N  # half of it\n   / 2)] = x[i]\n");
  const Program& p = ok(a);
  const IndexVar& i = var(comp(p, "y"), "i");
  CHECK(i.extent == 4);
  INFO("sourceText: '" << i.sourceText << "'");
  CHECK(i.sourceText.find('\n') == std::string::npos);
  CHECK(i.sourceText.find('#') == std::string::npos);
  std::string dump = printProgram(p);
  INFO("dump:\n" << dump);
  CHECK(dump.find("  index i < 4: bound (N / 2) @3:14\n") != std::string::npos);
}

// A negation of a negation (or of a negative number) must not print as `--`, which reads as a
// decrement and is not how the value was written.
TEST_CASE("sema: the dump keeps nested negations apart", "[sema][dump]") {
  Analysed a = analyse("input x : f32[4]\noutput y = - -x + -(-1)\n");
  const Program& p = ok(a);
  std::string dump = printProgram(p);
  INFO("dump:\n" << dump);
  CHECK(dump.find("--") == std::string::npos);
}

// Spec 4: "Indexed accesses may appear in a whole-tensor statement only inside a reduction that
// binds all their variables". An access with constant indices outside any reduction is one.
TEST_CASE("sema: an indexed access outside a reduction in a whole-tensor statement is an error", "[sema][broadcast]") {
  Analysed a = analyse("input x : f32[4, 4]\ninput v : f32[4]\noutput z = v + x[0, 1]\n");
  INFO(a.diags->render(false));
  CHECK_FALSE(a.program.has_value());
  CHECK(a.diags->hasErrors());
}

}  // namespace
}  // namespace texc
