// The reference interpreter on reductions: the four kinds, nesting, contractions, and skipped
// terms (padding, all-skipped identities, guards owned by inner and outer reductions).
#include <cmath>
#include <fstream>
#include <sstream>

#include "RefTestUtil.h"

using namespace texc;
using namespace texc::test;

TEST_CASE("sum, prod, max and min over rows and columns", "[reference]") {
  RefRun r = runSource(R"(
input x : f64[2, 3]
output s[i] = sum(j: x[i, j])
output p[i] = prod(j: x[i, j])
output mx[i] = max(j: x[i, j])
output mn[i] = min(j: x[i, j])
output col[j] = sum(i: x[i, j])
output total = sum(i, j: x[i, j])
output centred = x - sum(i, j: x[i, j])
)",
                       {{"x", {1, 2, -3, 4, 5, 6}}});
  checkTensor(r["s"], {2}, {0, 15});
  checkTensor(r["p"], {2}, {-6, 120});
  checkTensor(r["mx"], {2}, {2, 6});
  checkTensor(r["mn"], {2}, {-3, 4});
  checkTensor(r["col"], {3}, {5, 7, 3});
  checkTensor(r["total"], {}, {15});
  checkTensor(r["centred"], {2, 3}, {-14, -13, -18, -11, -10, -9});
}

TEST_CASE("nested reductions", "[reference]") {
  RefRun r = runSource(R"(
input x : f64[2, 3]
output y[i] = sum(j: x[i, j] * max(k: x[k, j]))
output z = max(i: sum(j: x[i, j]) - min(j: x[i, j]))
)",
                       {{"x", {1, 2, 3, 4, 5, 6}}});
  // Column maxima are 4, 5, 6.
  checkTensor(r["y"], {2}, {32, 77});
  // Row sums minus row minima: 6 - 1, 15 - 4.
  checkTensor(r["z"], {}, {11});
}

TEST_CASE("matmul 2x3 by 3x2", "[reference]") {
  RefRun r = runSource(R"(
input A : f64[2, 3]
input B : f64[3, 2]
output C[i, j] = sum(k: A[i, k] * B[k, j])
)",
                       {{"A", {1, 2, 3, 4, 5, 6}}, {"B", {7, 8, 9, 10, 11, 12}}});
  checkTensor(r["C"], {2, 2}, {58, 64, 139, 154});
}

TEST_CASE("1D convolution with zero padding skips out-of-bounds terms", "[reference]") {
  RefRun r = runSource(R"(
input x : f64[4]
input w : f64[3]
output y[i < 4] = sum(k: x[i + k - 1] * w[k])
)",
                       {{"x", {1, 2, 3, 4}}, {"w", {1, 10, 100}}});
  checkTensor(r["y"], {4}, {210, 321, 432, 43});
}

TEST_CASE("max pooling with padding acts as -inf padding", "[reference]") {
  RefRun r = runSource(R"(
input x : f64[4]
output y[i < 3] = max(k < 2: x[2 * i + k - 1])
output z[i < 3] = min(k < 2: -x[2 * i + k - 1])
output p[i < 3] = prod(k < 2: x[2 * i + k - 1])
)",
                       {{"x", {-5, -2, -7, -1}}});
  // Zero padding would give 0, 0 at the ends; skipped terms leave the real elements.
  checkTensor(r["y"], {3}, {-5, -2, -1});
  checkTensor(r["z"], {3}, {5, 2, 1});
  checkTensor(r["p"], {3}, {-5, 14, -1});
}

TEST_CASE("a reduction whose every term is skipped yields its identity", "[reference]") {
  RefRun r = runSource(R"(
input x : f64[3]
output mx[i < 2] = max(k < 2: x[k + 5])
output mn[i < 2] = min(k < 2: x[k + 5])
output s[i < 2] = sum(k < 2: x[k + 5])
output p[i < 2] = prod(k < 2: x[k + 5])
output part[i < 2] = sum(k < 2: x[i + k + 2])
)",
                       {{"x", {1, 2, 3}}});
  checkTensor(r["mx"], {2}, {-kInf, -kInf});
  checkTensor(r["mn"], {2}, {kInf, kInf});
  checkTensor(r["s"], {2}, {0, 0});
  checkTensor(r["p"], {2}, {1, 1});
  // Row 0 keeps x[2] only; row 1 skips both terms.
  checkTensor(r["part"], {2}, {3, 0});
}

TEST_CASE("guards belong to the innermost reduction", "[reference]") {
  RefRun r = runSource(R"(
input x : f64[3]
input w : f64[2]
output inner[i < 3] = sum(j < 2: max(k < 2: x[i + j + k - 1]))
output outer[i < 3] = sum(j < 2: x[i + j - 1] * sum(k: w[k]))
)",
                       {{"x", {1, 5, 2}}, {"w", {1, 2}}});
  // The inner max skips its own terms only; the outer sum sees every inner result.
  checkTensor(r["inner"], {3}, {6, 10, 7});
  // The outer sum skips a whole term, the inner sum included.
  checkTensor(r["outer"], {3}, {3, 18, 21});
}

TEST_CASE("a term is skipped when any of its guarded accesses falls outside", "[reference]") {
  RefRun r = runSource(R"(
input x : f64[3]
output y[i < 3] = sum(k < 3: x[i + k - 1] * x[i - k + 1])
)",
                       {{"x", {1, 2, 3}}});
  // i = 0: k = 1 only (x0*x0); i = 1: x0*x2 + x1*x1 + x2*x0; i = 2: k = 1 only (x2*x2).
  checkTensor(r["y"], {3}, {1, 10, 9});
}

TEST_CASE("causal mask with select and -inf", "[reference]") {
  RefRun r = runSource(R"(
input S : f64[3, 3]
output m[i, j] = select(j <= i, S[i, j], -inf)
output rowmax[i] = max(j: m[i, j])
output denom[i] = sum(j: exp(m[i, j] - rowmax[i]))
)",
                       {{"S", {1, 2, 3, 4, 5, 6, 7, 8, 9}}});
  checkTensor(r["m"], {3, 3}, {1, -kInf, -kInf, 4, 5, -kInf, 7, 8, 9});
  checkTensor(r["rowmax"], {3}, {1, 5, 9});
  checkTensor(r["denom"], {3}, {1, 1.3678794411714423, 1.5032147244080551});
}

TEST_CASE("the avgpool_pad example counts in-bounds terms", "[reference]") {
  std::ifstream in(std::string(TEXC_SOURCE_DIR) + "/examples/avgpool_pad.tex");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  std::vector<double> x(16);
  for (int i = 0; i < 16; ++i) x[i] = i;  // x[0, y, z] = 4 * y + z
  RefRun r = runSource(text.str(), {{"x", x}}, {{"C", 1}, {"H", 4}, {"W", 4}});
  checkTensor(r["count"], {2, 2}, {4, 6, 6, 9});
  // Windows cover rows (and columns) {0, 1} or {1, 2, 3}; total = 4 * |cols| * sum(rows) + |rows| * sum(cols).
  checkTensor(r["total"], {1, 2, 2}, {10, 24, 51, 90});
  checkTensor(r["mx"], {1, 2, 2}, {5, 7, 13, 15});
  checkTensor(r["avg"], {1, 2, 2}, {2.5, 4, 8.5, 10});
}
