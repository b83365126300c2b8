// The reference's row-wise evaluation: rows that span several left-hand variables or are cut
// into chunks, accesses partly outside a row, lanes that take different select branches,
// indices that are not affine in the row, values the same in every lane, rank 0. Small cases
// are checked against hand-computed values; larger ones against a direct loop in the same
// order, which must agree bit for bit.
#include <cmath>
#include <stdexcept>

#include "RefTestUtil.h"

using namespace texc;
using namespace texc::test;

namespace {

// Bit-for-bit agreement (a NaN must meet a NaN).
void checkExact(const RefTensor& t, const std::vector<double>& expected) {
  REQUIRE(t.data.size() == expected.size());
  size_t bad = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    bool same = std::isnan(expected[i]) ? std::isnan(t.data[i])
                                        : t.data[i] == expected[i] && std::signbit(t.data[i]) == std::signbit(expected[i]);
    if (!same && bad++ < 5) {
      INFO("element " << i << ": expected " << expected[i] << ", got " << t.data[i]);
      CHECK(same);
    }
  }
  CHECK(bad == 0);
}

std::vector<double> wave(size_t n, double phase) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(0.37 * static_cast<double>(i) + phase) * 2;
  return v;
}

}  // namespace

TEST_CASE("2D convolution with padding: rows partly outside the input", "[reference]") {
  // 3x3 input and an all-ones 3x3 kernel with padding 1: each output is the sum of the
  // neighbourhood that lies inside. The row spans both output variables (9 lanes).
  RefRun r = runSource(R"(
input x : f64[3, 3]
input w : f64[3, 3]
output y[a < 3, b < 3] = sum(r, s: x[a + r - 1, b + s - 1] * w[r, s])
output m[a < 3, b < 3] = max(r < 3, s < 3: x[a + r - 1, b + s - 1])
)",
                       {{"x", {1, 2, 3, 4, 5, 6, 7, 8, 9}}, {"w", std::vector<double>(9, 1.0)}});
  checkTensor(r["y"], {3, 3}, {12, 21, 16, 27, 45, 33, 24, 39, 28});
  checkTensor(r["m"], {3, 3}, {5, 6, 6, 8, 9, 9, 8, 9, 9});
}

TEST_CASE("padded convolutions at sizes that cut rows into chunks match a direct loop", "[reference]") {
  // W = 300: a row is one output line; W = 20: rows of 51 lines x 20 columns, the last shorter.
  for (auto [H, W] : {std::pair<int, int>{37, 300}, std::pair<int, int>{300, 20}}) {
    INFO("H = " << H << ", W = " << W);
    const int C = 2, K = 3;
    std::vector<double> x = wave(static_cast<size_t>(C * H * W), 0.1), w = wave(static_cast<size_t>(K * C * 9), 0.7);
    RefRun r = runSource(R"(
let C = 2; let K = 3; let H = 4; let W = 4
input x : f64[C, H, W]
input w : f64[K, C, 3, 3]
output y[k, py < H, px < W] = sum(c, r, s: x[c, py + r - 1, px + s - 1] * w[k, c, r, s])
)",
                         {{"x", x}, {"w", w}}, {{"H", H}, {"W", W}});
    std::vector<double> expected;
    for (int k = 0; k < K; ++k)
      for (int py = 0; py < H; ++py)
        for (int px = 0; px < W; ++px) {
          double acc = 0;
          for (int c = 0; c < C; ++c)
            for (int dr = 0; dr < 3; ++dr)
              for (int ds = 0; ds < 3; ++ds) {
                int yy = py + dr - 1, xx = px + ds - 1;
                if (yy < 0 || yy >= H || xx < 0 || xx >= W) continue;
                double term = x[(c * H + yy) * W + xx] * w[((k * C + c) * 3 + dr) * 3 + ds];
                acc = acc + term;
              }
          expected.push_back(acc);
        }
    checkExact(r["y"], expected);
  }
}

TEST_CASE("a contraction over rows wider than one chunk matches a direct loop", "[reference]") {
  // 4100 columns: rows of 1024 lanes, the last of 4.
  const int M = 3, K = 5, N = 4100;
  std::vector<double> a = wave(M * K, 0.3), b = wave(static_cast<size_t>(K) * N, 1.1);
  RefRun r = runSource(R"(
let M = 3; let K = 5; let N = 4100
input A : f64[M, K]
input B : f64[K, N]
output C[i, j] = sum(k: A[i, k] * B[k, j])
output Ct[j, i] = sum(k: A[i, k] * B[k, j])
)",
                       {{"A", a}, {"B", b}});
  std::vector<double> c(static_cast<size_t>(M) * N), ct(c.size());
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double acc = 0;
      for (int k = 0; k < K; ++k) {
        double term = a[i * K + k] * b[static_cast<size_t>(k) * N + j];
        acc = acc + term;
      }
      c[static_cast<size_t>(i) * N + j] = acc;
      ct[static_cast<size_t>(j) * M + i] = acc;
    }
  checkExact(r["C"], c);
  checkExact(r["Ct"], ct);
}

TEST_CASE("broadcasting along and across rows", "[reference]") {
  RefRun r = runSource(R"(
input x : f64[2, 3]
input b : f64[3]
input c : f64[2]
input s : f64
output rowb = x + b
output colb[i, j] = x[i, j] * c[i]
output scal = x * s - b
)",
                       {{"x", {1, 2, 3, 4, 5, 6}}, {"b", {10, 20, 30}}, {"c", {-1, 2}}, {"s", {0.5}}});
  checkTensor(r["rowb"], {2, 3}, {11, 22, 33, 14, 25, 36});
  checkTensor(r["colb"], {2, 3}, {-1, -2, -3, 8, 10, 12});
  checkTensor(r["scal"], {2, 3}, {-9.5, -19, -28.5, -8, -17.5, -27});
}

TEST_CASE("max and min reductions keep each lane's NaN and signed zero", "[reference]") {
  RefRun r = runSource(R"(
input x : f64[3, 4]
output mx[j] = max(k: x[k, j])
output mn[j] = min(k: x[k, j])
)",
                       {{"x", {1, -0.0, kNaN, -5, 3, 0.0, 2, -kInf, 2, -0.0, 1, -7}}});
  checkExact(r["mx"], {3, 0.0, kNaN, -5});
  checkExact(r["mn"], {1, -0.0, kNaN, -kInf});
}

TEST_CASE("nested reductions that vary along the row and that do not", "[reference]") {
  RefRun r = runSource(R"(
input x : f64[2, 3]
output y[i, j] = sum(k: x[i, k] * max(l: x[l, k] * x[l, j]))
output z[i, j] = x[i, j] - sum(a, b: x[a, b])
)",
                       {{"x", {1, 2, 3, 4, 5, 6}}});
  // The inner max is x[1, k] * x[1, j]; x[0] . x[1] = 32, x[1] . x[1] = 77.
  checkTensor(r["y"], {2, 3}, {128, 160, 192, 308, 385, 462});
  // The total, 21, is the same in every lane.
  checkTensor(r["z"], {2, 3}, {-20, -19, -18, -17, -16, -15});
}

TEST_CASE("rank-0 results: one lane", "[reference]") {
  RefRun r = runSource(R"(
input v : f64[3]
t = sum(i: v[i])
output u = t * 2
output q = max(i: v[i] * t)
output k = 3
)",
                       {{"v", {1, 2, 3}}});
  checkTensor(r["u"], {}, {12});
  checkTensor(r["q"], {}, {18});
  checkTensor(r["k"], {}, {3});
}

TEST_CASE("select: lanes that take different branches", "[reference]") {
  RefRun r = runSource(R"(
input x : f64[2, 3]
output y[i < 2, j < 3] = select(j <= i, sum(k: x[i, k]), -1)
output z[i < 2, j < 3] = select(j > 5, log(x[i, j] - 100), x[i, j])
)",
                       {{"x", {1, 2, 3, 4, 5, 6}}});
  checkTensor(r["y"], {2, 3}, {6, -1, -1, 15, 15, -1});
  // No lane takes the first branch.
  checkTensor(r["z"], {2, 3}, {1, 2, 3, 4, 5, 6});
}

TEST_CASE("indices that are not affine in the row are evaluated lane by lane", "[reference]") {
  RefRun r = runSource(R"(
input x : f64[4, 3]
input v : f64[2]
output y[i < 10] = x[i / 3, i % 3]
output z[i < 6] = sum(k < 2: v[(i + k) / 2 - 1])
output w[i < 3, j < 4] = i * 10 + j
)",
                       {{"x", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}}, {"v", {10, 20}}});
  checkTensor(r["y"], {10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  // (i + k) / 2 - 1 is -1 for i + k < 2 and 2 for i + k = 6: those terms are skipped.
  checkTensor(r["z"], {6}, {0, 10, 20, 30, 40, 20});
  checkTensor(r["w"], {3, 4}, {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23});
}

TEST_CASE("an unguarded access outside its tensor is an error, not a read", "[reference]") {
  Program p = analyzeSource("input x : f64[3]\noutput y[i < 3] = sum(k < 2: x[i + k])\n");
  // Drop the guard that semantic analysis put on x[i + k]: lane i = 2, k = 1 now reads outside.
  Value& access = p.computations.back().body.args.at(0);
  REQUIRE(access.kind == ValueKind::Access);
  REQUIRE(access.check == AccessCheck::Guarded);
  access.check = AccessCheck::InBounds;
  CHECK_THROWS_AS(evaluateReference(p, {{{3}, {1, 2, 3}}}), std::logic_error);
}
