// The reference interpreter on elementwise code: broadcasting, builtins, booleans, index values.
#include <stdexcept>

#include "RefTestUtil.h"

using namespace texc;
using namespace texc::test;

TEST_CASE("whole-tensor form broadcasts like numpy", "[reference]") {
  RefRun r = runSource(R"(
input a : f64[2, 3]
input b : f64[3]
input s : f64
input c : f64[2, 1]
input d : f64[1, 3]
input e : f64[1]
output y = a + b * s - c
output z = c * d
output t = s * 2 + 1
output u = s + a
output f = b + e
)",
                       {{"a", {1, 2, 3, 4, 5, 6}},
                        {"b", {10, 20, 30}},
                        {"s", {0.5}},
                        {"c", {100, 200}},
                        {"d", {1, 2, 3}},
                        {"e", {7}}});
  checkTensor(r["y"], {2, 3}, {-94, -88, -82, -191, -185, -179});
  checkTensor(r["z"], {2, 3}, {100, 200, 300, 200, 400, 600});
  checkTensor(r["t"], {}, {2});
  checkTensor(r["u"], {2, 3}, {1.5, 2.5, 3.5, 4.5, 5.5, 6.5});
  checkTensor(r["f"], {3}, {17, 27, 37});
  // Inputs come back unchanged.
  checkTensor(r["a"], {2, 3}, {1, 2, 3, 4, 5, 6});
}

TEST_CASE("index form reads rank-0 tensors bare and broadcasts by hand", "[reference]") {
  RefRun r = runSource(R"(
input a : f64[2, 3]
input s : f64
t = s * s
output y[i, j] = a[i, j] * t - a[0, j]
output v[j < 3] = t
)",
                       {{"a", {1, 2, 3, 4, 5, 6}}, {"s", {3}}});
  checkTensor(r["t"], {}, {9});
  checkTensor(r["y"], {2, 3}, {8, 16, 24, 35, 43, 51});
  checkTensor(r["v"], {3}, {9, 9, 9});
}

TEST_CASE("unary builtins", "[reference]") {
  struct Case {
    const char* name;
    double x0, x1, y0, y1;
  };
  const Case cases[] = {
      {"exp", 0, 1, 1, 2.718281828459045},
      {"log", 1, 2.718281828459045, 0, 1},
      {"sqrt", 4, 2, 2, 1.4142135623730951},
      {"rsqrt", 4, 0.25, 0.5, 2},
      {"tanh", 0, 1, 0, 0.7615941559557649},
      {"sigmoid", 0, 2, 0.5, 0.8807970779778823},
      {"relu", -1, 2.5, 0, 2.5},
      {"abs", -3, 2, 3, 2},
      {"erf", 0, 1, 0, 0.8427007929497149},
      {"sin", 0, 1.5707963267948966, 0, 1},
      {"cos", 0, 3.141592653589793, 1, -1},
      {"floor", -1.5, 2.5, -2, 2},
      {"ceil", -1.5, 2.1, -1, 3},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    RefRun r = runSource(std::string("input x : f64[2]\noutput y = ") + c.name + "(x)\n", {{"x", {c.x0, c.x1}}});
    checkTensor(r["y"], {2}, {c.y0, c.y1});
  }
}

TEST_CASE("binary builtins and select", "[reference]") {
  RefRun r = runSource(R"(
input x : f64[3]
input y : f64[3]
output p = pow(x, y)
output lo = min(x, y)
output hi = max(x, y)
output sel = select(x < y, x * 10, y - 1)
)",
                       {{"x", {2, 9, -3}}, {"y", {10, 0.5, -4}}});
  checkTensor(r["p"], {3}, {1024, 3, 1.0 / 81});
  checkTensor(r["lo"], {3}, {2, 0.5, -4});
  checkTensor(r["hi"], {3}, {10, 9, -3});
  checkTensor(r["sel"], {3}, {20, -0.5, -5});
}

TEST_CASE("comparisons and logic give 0/1 to select", "[reference]") {
  RefRun r = runSource(R"(
input x : f64[4]
input y : f64[4]
output lt = select(x < y, 1, 0)
output le = select(x <= y, 1, 0)
output gt = select(x > y, 1, 0)
output ge = select(x >= y, 1, 0)
output eq = select(x == y, 1, 0)
output ne = select(x != y, 1, 0)
output both = select(x > 0 && y > 0, 1, 0)
output either = select(x > 0 || y > 0, 1, 0)
output neither = select(!(x > 0 || y > 0), 1, 0)
)",
                       {{"x", {1, 2, -3, 0}}, {"y", {2, 2, -4, -1}}});
  checkTensor(r["lt"], {4}, {1, 0, 0, 0});
  checkTensor(r["le"], {4}, {1, 1, 0, 0});
  checkTensor(r["gt"], {4}, {0, 0, 1, 1});
  checkTensor(r["ge"], {4}, {0, 1, 1, 1});
  checkTensor(r["eq"], {4}, {0, 1, 0, 0});
  checkTensor(r["ne"], {4}, {1, 0, 1, 1});
  checkTensor(r["both"], {4}, {1, 1, 0, 0});
  checkTensor(r["either"], {4}, {1, 1, 0, 0});
  checkTensor(r["neither"], {4}, {0, 0, 1, 1});
}

TEST_CASE("max, min and relu propagate NaN as numpy does", "[reference]") {
  RefRun r = runSource(R"(
input x : f64[2]
input y : f64[2]
output hi = max(x, y)
output lo = min(x, y)
output rl = relu(x)
output m = max(k: x[k])
output n = min(k: y[k])
)",
                       {{"x", {kNaN, 1}}, {"y", {1, kNaN}}});
  checkTensor(r["hi"], {2}, {kNaN, kNaN});
  checkTensor(r["lo"], {2}, {kNaN, kNaN});
  checkTensor(r["rl"], {2}, {kNaN, 1});
  checkTensor(r["m"], {}, {kNaN});
  checkTensor(r["n"], {}, {kNaN});
}

TEST_CASE("arithmetic follows IEEE doubles", "[reference]") {
  RefRun r = runSource(R"(
input x : f64[3]
output q = x / 0
output n = -x
output i = x * 0 + inf
)",
                       {{"x", {1, -1, 0}}});
  checkTensor(r["q"], {3}, {kInf, -kInf, kNaN});
  checkTensor(r["n"], {3}, {-1, 1, 0});
  checkTensor(r["i"], {3}, {kInf, kInf, kInf});
}

TEST_CASE("index variables and lets used as values are floats", "[reference]") {
  RefRun r = runSource(R"(
let D = 4
input x : f64[3]
output y[i < 3, j < 2] = i * 10 + j
output q[i < 3] = i / D
output h[i] = x[i] + i / 2
output s = sum(k < 5: k)
output tri[i < 4] = sum(k < 4: select(k <= i, k, 0))
)",
                       {{"x", {100, 200, 300}}});
  checkTensor(r["y"], {3, 2}, {0, 1, 10, 11, 20, 21});
  checkTensor(r["q"], {3}, {0, 0.25, 0.5});
  checkTensor(r["h"], {3}, {100, 200.5, 301});
  checkTensor(r["s"], {}, {10});
  checkTensor(r["tri"], {4}, {0, 1, 3, 6});
}

TEST_CASE("floor division and modulo in indices round toward -infinity", "[reference]") {
  RefRun r = runSource(R"(
input x : f64[6]
output y[i < 6] = x[i / 2 + 3 * (i % 2)]
output fd[i < 4] = x[(i - 3) / 2 + 2]
output md[i < 4] = x[(i - 3) % 4]
)",
                       {{"x", {10, 11, 12, 13, 14, 15}}});
  checkTensor(r["y"], {6}, {10, 13, 11, 14, 12, 15});
  // (i - 3) / 2 for i = 0..3 is -2, -1, -1, 0.
  checkTensor(r["fd"], {4}, {10, 11, 11, 12});
  // (i - 3) % 4 for i = 0..3 is 1, 2, 3, 0.
  checkTensor(r["md"], {4}, {11, 12, 13, 10});
}

TEST_CASE("evaluateReference refuses inputs that do not match", "[reference]") {
  Program p = analyzeSource("input x : f64[2, 3]\noutput y = x * 2\n");
  CHECK_THROWS_AS(evaluateReference(p, {}), std::invalid_argument);
  CHECK_THROWS_AS(evaluateReference(p, {{{3, 2}, std::vector<double>(6, 1.0)}}), std::invalid_argument);
  CHECK_THROWS_AS(evaluateReference(p, {{{2, 3}, std::vector<double>(5, 1.0)}}), std::invalid_argument);
  std::vector<RefTensor> out = evaluateReference(p, {{{2, 3}, std::vector<double>(6, 1.5)}});
  REQUIRE(out.size() == p.tensors.size());
  checkTensor(out[p.findTensor("y")], {2, 3}, std::vector<double>(6, 3.0));
}
