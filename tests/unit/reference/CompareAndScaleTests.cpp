// compareToReference, and the reference on realistic sizes checked against a direct loop.
#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>

#include "RefTestUtil.h"
#include "compiler/reference/Tolerance.h"

using namespace texc;
using namespace texc::test;

TEST_CASE("compareToReference: finite values", "[reference]") {
  const double ref[] = {1, -2, 0.5, 4};
  const double same[] = {1, -2, 0.5, 4};
  ErrorStats s = compareToReference(ref, same, 4);
  CHECK(s.maxAbs == 0);
  CHECK(s.maxRel == 0);

  const double got[] = {1.5, -2, 0.5, 3.5};
  s = compareToReference(ref, got, 4);
  CHECK(s.maxAbs == 0.5);
  CHECK(s.maxRel == 0.5);  // 0.5 / 1 beats 0.5 / 4

  s = compareToReference(ref, got, 0);
  CHECK(s.maxAbs == 0);
  CHECK(s.maxRel == 0);
}

TEST_CASE("compareToReference: an all-zero reference divides by the smallest normal", "[reference]") {
  const double ref[] = {0};
  const double got[] = {1e-300};
  ErrorStats s = compareToReference(ref, got, 1);
  CHECK(s.maxAbs == 1e-300);
  CHECK(s.maxRel == 1e-300 / kRelErrorTiny);
}

TEST_CASE("compareToReference: tiny elements are judged against a millionth of the largest", "[reference]") {
  const double ref[] = {0, 1e-9, 4};
  const double got[] = {1e-7, 1e-9, 4};
  ErrorStats s = compareToReference(ref, got, 3);
  CHECK(s.maxAbs == 1e-7);
  CHECK(s.maxRel == Approx(1e-7 / 4e-6));
}

TEST_CASE("compareToReference: infinities and NaN", "[reference]") {
  const double ref[] = {kInf, -kInf, kNaN, 1};
  const double got[] = {kInf, -kInf, kNaN, 1};
  ErrorStats s = compareToReference(ref, got, 4);
  CHECK(s.maxAbs == 0);
  CHECK(s.maxRel == 0);

  const double mismatches[][2] = {{kInf, -kInf}, {kInf, 1}, {1, kInf}, {kNaN, 1}, {1, kNaN}, {kNaN, kInf}, {-kInf, kNaN}};
  for (const auto& m : mismatches) {
    INFO("ref " << m[0] << ", got " << m[1]);
    ErrorStats e = compareToReference(&m[0], &m[1], 1);
    CHECK(e.maxAbs == kInf);
    CHECK(e.maxRel == kInf);
  }
}

TEST_CASE("compareValues: an infinity is right where the output's dtype overflows", "[reference]") {
  const std::vector<int64_t> shape = {5};
  const double inf = std::numeric_limits<double>::infinity();
  // exp(100) in f32: 2.7e43 does not fit, so +inf is right; -inf is not, nor is inf for a value
  // that fits with room (3e38), nor a finite result beyond the tolerance.
  const std::vector<double> ref = {2.6881171418161356e43, 2.6881171418161356e43, 3e38, -1e39, 1e39};
  const std::vector<double> bounds = {1.6e36, 1.6e36, 0, 6e31, 6e31};
  const std::vector<double> got = {inf, -inf, inf, -inf, 3.4028234663852886e38};
  Comparison f32 = compareValues(ref, bounds, got, shape, toleranceFor(DType::F32));
  auto lists = [](const Comparison& c, const char* index) { return c.details.find(index) != std::string::npos; };
  CHECK(f32.mismatches == 3);  // elements 1, 2 and 4
  CHECK(lists(f32, "[1]"));
  CHECK(lists(f32, "[2]"));
  CHECK(lists(f32, "[4]"));
  CHECK_FALSE(lists(f32, "[0]"));
  CHECK_FALSE(lists(f32, "[3]"));
  // In f64 nothing overflows: every infinity against a finite reference is a mismatch.
  CHECK(compareValues(ref, bounds, got, shape, toleranceFor(DType::F64)).mismatches == 5);
  // f16 overflows from 65520 (halfway to 2^16); 65000 is more than its tolerance (64) below.
  const std::vector<double> half = {65520, 65000, 70000, 1e5, 1e5};
  const std::vector<double> none(5, 0.0);
  Comparison f16 = compareValues(half, none, {inf, inf, inf, inf, -inf}, shape, toleranceFor(DType::F16));
  CHECK(f16.mismatches == 2);  // 65000 and the wrong sign
  CHECK(lists(f16, "[1]"));
  CHECK(lists(f16, "[4]"));
}

TEST_CASE("layernorm 256x256 matches a direct loop", "[reference]") {
  std::ifstream in(std::string(TEXC_SOURCE_DIR) + "/examples/layernorm.tex");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  const int n = 256;
  std::vector<double> x(n * n), gamma(n), beta(n);
  for (int i = 0; i < n * n; ++i) x[i] = std::sin(0.37 * i) * 3 + (i % 7);
  for (int j = 0; j < n; ++j) {
    gamma[j] = 1 + 0.01 * j;
    beta[j] = -0.5 + 0.002 * j;
  }
  RefRun r = runSource(text.str(), {{"x", x}, {"gamma", gamma}, {"beta", beta}}, {{"R", n}, {"D", n}});

  std::vector<double> expected(n * n);
  for (int i = 0; i < n; ++i) {
    double mean = 0, var = 0;
    for (int j = 0; j < n; ++j) mean += x[i * n + j];
    mean /= n;
    for (int j = 0; j < n; ++j) var += (x[i * n + j] - mean) * (x[i * n + j] - mean);
    var /= n;
    for (int j = 0; j < n; ++j)
      expected[i * n + j] = (x[i * n + j] - mean) * (1 / std::sqrt(var + 1e-5)) * gamma[j] + beta[j];
  }
  checkTensor(r["y"], {n, n}, expected);
}

TEST_CASE("ten million elements evaluate in seconds", "[reference]") {
  const int64_t n = 10'000'000;
  Program p = analyzeSource("let N = 10000000\ninput x : f64[N]\noutput y = relu(x * 2 - 1)\n");
  std::vector<double> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<double>(i % 3);
  auto start = std::chrono::steady_clock::now();
  std::vector<RefTensor> out = evaluateReference(p, {{{n}, x}});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const RefTensor& y = out[p.findTensor("y")];
  REQUIRE(y.data.size() == static_cast<size_t>(n));
  CHECK(y.data[0] == 0);
  CHECK(y.data[1] == 1);
  CHECK(y.data[n - 2] == 3);  // 9999998 % 3 == 2
  CHECK(y.data[n - 1] == 0);  // 9999999 % 3 == 0
  // About 2 s in a Debug build; the bound leaves room for sanitizer builds.
  INFO("10^7 elements took " << seconds << " s");
  CHECK(seconds < 30);
}
