// Round trip of the parser and printModule: for every examples/*.tex and tests/golden/**/*.tex,
// and for a list of tricky snippets, parsing the printed module gives an equal module
// (equalModules), and printing that module again gives the same text (a fixpoint).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "frontend/AST.h"
#include "frontend/Diagnostics.h"
#include "frontend/Parser.h"
#include "frontend/Source.h"

namespace texc {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = TEXC_SOURCE_DIR;

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<fs::path> roundTripFiles() {
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(kRoot / "examples"))
    if (e.is_regular_file() && e.path().extension() == ".tex") files.push_back(e.path());
  fs::path golden = kRoot / "tests" / "golden";
  if (fs::is_directory(golden))
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(golden))
      if (e.is_regular_file() && e.path().extension() == ".tex") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

// Parses `text`; the module must come without diagnostics of any kind.
Module parseClean(const std::string& name, const std::string& text) {
  SourceFile file(name, text);
  DiagnosticEngine diags(&file);
  Module m = parse(file, diags);
  INFO("parsing " << name << ":\n" << text);
  INFO(diags.render(false));
  REQUIRE(diags.diagnostics().empty());
  return m;
}

void checkRoundTrip(const std::string& name, const std::string& text) {
  Module first = parseClean(name, text);
  std::string printed = printModule(first);
  Module second = parseClean(name + " (printed)", printed);
  INFO("source " << name << ":\n" << text << "\nprinted:\n" << printed);
  REQUIRE(equalModules(first, second));
  REQUIRE(second.stmts.size() == first.stmts.size());
  std::string reprinted = printModule(second);
  REQUIRE(reprinted == printed);
}

TEST_CASE("round trip: every example and golden program", "[roundtrip][parser]") {
  std::vector<fs::path> files = roundTripFiles();
  REQUIRE(files.size() >= 7);
  for (const fs::path& f : files) {
    std::string name = f.lexically_relative(kRoot).generic_string();
    DYNAMIC_SECTION(name) { checkRoundTrip(name, readFile(f)); }
  }
}

TEST_CASE("round trip: tricky snippets", "[roundtrip][parser]") {
  const std::vector<std::string> snippets = {
      // sizes: precedence, floor division and modulo, parentheses, negation
      "let A = 2 * (3 + 4) % 5 - 1\nlet B = -(A - 10) / 3\ninput x : f32[A, B]\noutput y = x\n",
      // numbers as written: fractions, exponents, leading dot, inf
      "input x : f32[4]\noutput y = x * .5 + 1e-3 - 2.5E+4 + 0.0 + 7\noutput z = max(x, -inf) + min(x, inf)\n",
      // unary chains and left associativity
      "input x : f32[4]\noutput y = - -x - (x - x) - x - x / x / x * x\n",
      // booleans: comparisons, logic, negation, select
      "input x : f32[4, 4]\noutput y[i, j] = select(!(i < j) || i >= j && i != j, x[i, j], select(i == j, 1, -1))\n",
      // statements separated by ';', blank lines, comments, CRLF, newlines inside brackets
      "let N = 4; let M = 2;;\r\n\r\ninput x : f32[N,\r\n  M]  # a comment\r\noutput y[i, j] = x[i,\r\n j]\r\n",
      // rank 0, f64/f16/bf16, bounds everywhere, nested reductions of every kind
      "input s : f64\ninput h : f16[3]\ninput g : bf16[3]\n"
      "output r[a < 2] = sum(i < 3, j: prod(k < 2: min(l < 1: max(m < 1: h[i] * g[j] * s + a + k + l + m))))\n",
      // index expressions: affine, floor division and modulo by constants
      "let N = 8\ninput x : f32[N]\noutput y[i < N] = sum(k < 3: x[(2 * i + k - 1) / 2 % N] * x[-i + N - 1] + x[(i % 4) * 2])\n",
      // builtins
      "input x : f32[4]\noutput y = exp(log(sqrt(rsqrt(tanh(sigmoid(relu(abs(erf(sin(cos(floor(ceil(pow(x, 2))))))))))))))\n",
  };
  for (size_t i = 0; i < snippets.size(); ++i) {
    DYNAMIC_SECTION("snippet " << i) { checkRoundTrip("snippet" + std::to_string(i) + ".tex", snippets[i]); }
  }
}

TEST_CASE("round trip: printModule puts every binary operation in parentheses", "[roundtrip][parser]") {
  Module m = parseClean("p.tex", "let N = 2 + 3 * 4\ninput x : f32[N]\noutput y[i < N / 2] = x[i] - 1 - 2\n");
  CHECK(printModule(m) == "let N = (2 + (3 * 4))\ninput x : f32[N]\noutput y[i < (N / 2)] = ((x[i] - 1) - 2)\n");
}

TEST_CASE("round trip: equalModules sees every difference", "[roundtrip][parser]") {
  auto differ = [](const std::string& a, const std::string& b) {
    Module ma = parseClean("a.tex", a), mb = parseClean("b.tex", b);
    return !equalModules(ma, mb);
  };
  const std::string base = "input x : f32[4]\noutput y[i] = x[i] + 1\n";
  CHECK_FALSE(differ(base, "input x : f32[4]\n\n  output y[i]=x[i]+1 # same tree\n"));
  CHECK(differ(base, "input x : f64[4]\noutput y[i] = x[i] + 1\n"));
  CHECK(differ(base, "input x : f32[5]\noutput y[i] = x[i] + 1\n"));
  CHECK(differ(base, "input x : f32[4]\ny[i] = x[i] + 1\noutput z = y\n"));
  CHECK(differ(base, "input x : f32[4]\noutput y[i < 4] = x[i] + 1\n"));
  CHECK(differ(base, "input x : f32[4]\noutput y[i] = x[i] - 1\n"));
  CHECK(differ(base, "input x : f32[4]\noutput y[i] = x[i] + 1.0\n"));
  CHECK(differ(base, "input x : f32[4]\noutput y = x + 1\n"));
  CHECK(differ("input x : f32[4]\noutput y = sum(i: x[i])\n", "input x : f32[4]\noutput y = max(i: x[i])\n"));
  CHECK(differ("input x : f32[4]\noutput y = sum(i: x[i])\n", "input x : f32[4]\noutput y = sum(i < 4: x[i])\n"));
}

}  // namespace
}  // namespace texc
