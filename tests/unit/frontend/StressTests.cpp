// Stress tests of the front end: hostile and huge inputs must give diagnostics, never a crash, a
// stack overflow or a hang, and a large valid program must check quickly. Also replays the inputs
// the fuzzer once failed on (tests/fuzz/regressions/).
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "frontend/AST.h"
#include "frontend/Diagnostics.h"
#include "frontend/Parser.h"
#include "frontend/Program.h"
#include "frontend/Sema.h"
#include "frontend/Source.h"

namespace texc {
namespace {

// One run of the front end over `text`: parse, then analyse when parsing gave no error.
class FrontEnd {
 public:
  explicit FrontEnd(std::string text, bool analyse = true) : file_("stress.tex", std::move(text)), diags_(&file_) {
    module_ = parse(file_, diags_);
    parsedClean_ = !diags_.hasErrors();
    if (analyse && parsedClean_) program_ = analyze(module_, diags_);
  }
  FrontEnd(const FrontEnd&) = delete;
  FrontEnd& operator=(const FrontEnd&) = delete;

  const SourceFile& file() const { return file_; }
  const DiagnosticEngine& diags() const { return diags_; }
  const Module& module() const { return module_; }
  const std::optional<Program>& program() const { return program_; }
  bool parsedClean() const { return parsedClean_; }

  std::vector<DiagId> ids() const {
    std::vector<DiagId> out;
    for (const Diagnostic& d : diags_.diagnostics()) out.push_back(d.id);
    return out;
  }
  bool has(DiagId id) const {
    std::vector<DiagId> all = ids();
    return std::find(all.begin(), all.end(), id) != all.end();
  }
  // Everything the run printed: the diagnostics and, on success, the analysed program.
  std::string output() const {
    std::string out = diags_.render(false);
    if (program_) out += printProgram(*program_);
    return out;
  }

 private:
  SourceFile file_;
  DiagnosticEngine diags_;
  Module module_;
  std::optional<Program> program_;
  bool parsedClean_ = false;
};

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

std::string randomBytes(uint32_t seed, size_t size) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::string out(size, '\0');
  for (char& c : out) c = static_cast<char>(byte(rng));
  return out;
}

// Random text of whole tokens separated by spaces: it lexes without an error, so the parser sees
// all of it (and gives up after DiagnosticEngine::kMaxErrors errors).
std::string tokenSoup(uint32_t seed, size_t size) {
  static const std::vector<std::string> tokens = {
      "let", "input", "output", "sum", "max", "min", "prod", "inf", "x", "y", "N", "f32", "exp",
      "select", "0", "1", "2.5", ".5", "1e-3", ";", "(", ")", "[", "]", ",", ":", "=", "<", "<=",
      ">", ">=", "==", "!=", "+", "-", "*", "/", "%", "!", "&&", "||", "\n", "# comment\n"};
  std::mt19937 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, tokens.size() - 1);
  std::string out;
  out.reserve(size + 16);
  while (out.size() < size) {
    out += tokens[pick(rng)];
    out += ' ';
  }
  return out;
}

// A program of `n` elementwise statements, each reading the one before:
//   t1 = t0 * 2 + b, ..., output tN = ...
std::string chainProgram(int n) {
  std::string src = "let N = 64\nlet D = 32\ninput t0 : f32[N, D]\ninput b : f32[D]\n";
  for (int i = 1; i <= n; ++i) {
    if (i == n) src += "output ";
    src += fmt::format("t{} = t{} * 2 + b\n", i, i - 1);
  }
  return src;
}

// The only error is one NestingTooDeep.
void requireSingleNestingError(const FrontEnd& fe) {
  INFO(fe.diags().render(false).substr(0, 2000));
  REQUIRE(fe.diags().errorCount() == 1);
  REQUIRE(fe.diags().diagnostics().size() == 1);
  CHECK(fe.diags().diagnostics()[0].id == DiagId::NestingTooDeep);
  CHECK_FALSE(fe.program().has_value());
}

}  // namespace

TEST_CASE("random bytes give diagnostics, deterministically", "[stress]") {
  for (uint32_t seed : {1u, 2u, 3u, 42u, 1234u, 99991u}) {
    CAPTURE(seed);
    std::string text = randomBytes(seed, 64 * 1024);
    FrontEnd first(text);
    CHECK(first.diags().hasErrors());
    CHECK_FALSE(first.program().has_value());
    CHECK(first.diags().errorCount() <= DiagnosticEngine::kMaxErrors);
    FrontEnd second(text);
    CHECK(first.output() == second.output());
  }
}

TEST_CASE("random token soup gives diagnostics, deterministically", "[stress]") {
  for (uint32_t seed : {7u, 8u, 9u, 2024u}) {
    CAPTURE(seed);
    std::string text = tokenSoup(seed, 64 * 1024);
    FrontEnd first(text);
    CHECK(first.diags().hasErrors());
    CHECK(first.diags().errorCount() <= DiagnosticEngine::kMaxErrors);
    FrontEnd second(text);
    CHECK(first.output() == second.output());
  }
}

TEST_CASE("a 10 MB file of valid statements repeated", "[stress]") {
  const std::string block =
      "let N = 64; let D = 32   # sizes\n"
      "input x : f32[N, D]\n"
      "input g : f32[D]\n"
      "mean[i] = sum(j: x[i, j]) / D\n"
      "output y[i, j] = (x[i, j] - mean[i]) * g[j] + max(x[i, j], 0.5)\n";
  const size_t copies = 10 * 1024 * 1024 / block.size() + 1;
  std::string text = repeat(block, copies);
  REQUIRE(text.size() >= 10u * 1024 * 1024);

  auto start = Clock::now();
  FrontEnd fe(text);
  double t = secondsSince(start);
  std::printf("[stress] 10 MB of valid statements (%zu statements): parse + analyse %.3f s\n", copies * 6, t);

  // Every statement parses; the repeated names are redefinitions, and sema stops after the cap.
  REQUIRE(fe.parsedClean());
  CHECK(fe.module().stmts.size() == copies * 6);
  CHECK_FALSE(fe.program().has_value());
  CHECK(fe.diags().errorCount() == DiagnosticEngine::kMaxErrors);
  std::vector<DiagId> ids = fe.ids();
  REQUIRE(ids.size() == static_cast<size_t>(DiagnosticEngine::kMaxErrors) + 1);
  CHECK(std::count(ids.begin(), ids.end(), DiagId::Redefinition) == DiagnosticEngine::kMaxErrors);
  CHECK(ids.back() == DiagId::TooManyErrors);
  // The first redefinition is the second block's 'N', on line 6.
  CHECK(fe.diags().diagnostics()[0].range.begin.line == 6);
}

TEST_CASE("10 MB of garbage", "[stress]") {
  const size_t size = 10 * 1024 * 1024;
  SECTION("random bytes") {
    FrontEnd fe(randomBytes(5, size));
    CHECK(fe.diags().hasErrors());
    CHECK(fe.has(DiagId::TooManyErrors));
    CHECK_FALSE(fe.program().has_value());
  }
  SECTION("token soup") {
    auto start = Clock::now();
    FrontEnd fe(tokenSoup(6, size));
    std::printf("[stress] 10 MB of token soup: %.3f s\n", secondsSince(start));
    CHECK(fe.diags().hasErrors());
    CHECK(fe.diags().errorCount() <= DiagnosticEngine::kMaxErrors);
    CHECK_FALSE(fe.program().has_value());
  }
  SECTION("one unterminated parenthesis and then 10 MB of tokens") {
    FrontEnd fe("output y = (x\n" + repeat("x + 1\n", size / 6));
    CHECK(fe.diags().errorCount() == 1);
    CHECK(fe.has(DiagId::ExpectedToken));
  }
}

TEST_CASE("a 100,000-character identifier", "[stress]") {
  const std::string name(100000, 'n');
  SECTION("as a let, a dimension and a value") {
    FrontEnd fe("let " + name + " = 8\ninput x : f32[" + name + "]\noutput y = x * " + name + "\n");
    INFO(fe.diags().render(false).substr(0, 2000));
    CHECK(fe.diags().diagnostics().empty());
    REQUIRE(fe.program().has_value());
    REQUIRE(fe.program()->lets.size() == 1);
    CHECK(fe.program()->lets[0].name == name);
  }
  SECTION("undefined, in a diagnostic") {
    FrontEnd fe("output y = " + name + " + 1\n");
    REQUIRE(fe.diags().diagnostics().size() == 1);
    const Diagnostic& d = fe.diags().diagnostics()[0];
    CHECK(d.id == DiagId::UndefinedName);
    CHECK(d.range.begin.column == 12);
    CHECK(d.range.end.column == 12 + name.size());
    CHECK(fe.diags().render(false).size() > 2 * name.size());
  }
  SECTION("where the parser expects something else") {
    FrontEnd fe("let N " + name + "\n");
    REQUIRE(fe.diags().diagnostics().size() == 1);
    CHECK(fe.diags().diagnostics()[0].id == DiagId::ExpectedToken);
    // Token descriptions are cut short; the message does not repeat the whole name.
    CHECK(fe.diags().diagnostics()[0].message.size() < 200);
  }
}

TEST_CASE("a 100,000-character line", "[stress]") {
  SECTION("many statements on one line, an error at its end") {
    std::string line = "input x : f32[4]";
    int n = 0;
    while (line.size() < 100000) {
      line += fmt::format("; let a{} = {}", n, n + 1);
      ++n;
    }
    const uint32_t errorColumn = static_cast<uint32_t>(line.size()) + 3;
    line += "; @\noutput y = x\n";
    FrontEnd fe(line);
    REQUIRE(fe.diags().diagnostics().size() == 1);
    const Diagnostic& d = fe.diags().diagnostics()[0];
    CHECK(d.id == DiagId::UnexpectedCharacter);
    CHECK(d.range.begin.line == 1);
    CHECK(d.range.begin.column == errorColumn);
    std::string rendered = fe.diags().render(false);
    CHECK(rendered.find(std::string(errorColumn - 1, ' ') + "^\n") != std::string::npos);
  }
  SECTION("a 100,000-digit number") {
    FrontEnd fe("input x : f32[4]\noutput y = x * 0." + std::string(100000, '0') + "1 + " + std::string(100000, ' ') + "x\n");
    INFO(fe.diags().render(false).substr(0, 2000));
    CHECK(fe.diags().diagnostics().empty());
    CHECK(fe.program().has_value());
  }
  SECTION("a 100,000-digit integer is too large") {
    FrontEnd fe("let N = 1" + std::string(100000, '0') + "\n");
    REQUIRE(fe.diags().diagnostics().size() == 1);
    CHECK(fe.diags().diagnostics()[0].id == DiagId::IntegerTooLarge);
  }
  SECTION("a 100,000-character comment") {
    FrontEnd fe("input x : f32[4]\noutput y = x  # " + std::string(100000, 'c') + "\n");
    CHECK(fe.diags().diagnostics().empty());
    CHECK(fe.program().has_value());
  }
}

TEST_CASE("deep nesting gives NestingTooDeep, not a stack overflow", "[stress]") {
  const int n = 10000;
  SECTION("10,000 nested parentheses") {
    FrontEnd fe("input x : f32[4]\noutput y = " + repeat("(", n) + "x" + repeat(")", n) + "\n");
    requireSingleNestingError(fe);
    CHECK(fe.diags().diagnostics()[0].range.begin.line == 2);
  }
  SECTION("10,000 nested unary minuses") {
    FrontEnd fe("input x : f32[4]\noutput y = " + repeat("-", n) + "x\n");
    requireSingleNestingError(fe);
  }
  SECTION("10,000 nested unary minuses with spaces") {
    FrontEnd fe("input x : f32[4]\noutput y = " + repeat("- ", n) + "x\n");
    requireSingleNestingError(fe);
  }
  SECTION("10,000 nested logical nots") {
    FrontEnd fe("input x : f32[4]\noutput y = select(" + repeat("!", n) + "(x > 0), x, x)\n");
    requireSingleNestingError(fe);
  }
  SECTION("10,000 nested sum reductions") {
    FrontEnd fe("input x : f32[4]\noutput y = " + repeat("sum(k: ", n) + "x[k]" + repeat(")", n) + "\n");
    requireSingleNestingError(fe);
  }
  SECTION("10,000 nested max reductions") {
    FrontEnd fe("input x : f32[4]\noutput y = " + repeat("max(k: ", n) + "x[k]" + repeat(")", n) + "\n");
    requireSingleNestingError(fe);
  }
  SECTION("10,000 nested binary max calls") {
    FrontEnd fe("input x : f32[4]\noutput y = " + repeat("max(x, ", n) + "x" + repeat(")", n) + "\n");
    requireSingleNestingError(fe);
  }
  SECTION("10,000 nested function calls") {
    FrontEnd fe("input x : f32[4]\noutput y = " + repeat("exp(", n) + "x" + repeat(")", n) + "\n");
    requireSingleNestingError(fe);
  }
  SECTION("10,000 nested brackets") {
    FrontEnd fe("input x : f32[4]\noutput y[i] = " + repeat("x[", n) + "i" + repeat("]", n) + "\n");
    requireSingleNestingError(fe);
  }
  SECTION("10,000 nested parentheses in a size expression") {
    FrontEnd fe("let N = " + repeat("(", n) + "4" + repeat(")", n) + "\n");
    requireSingleNestingError(fe);
  }
  SECTION("10,000 nested parentheses in a dimension and in a bound") {
    FrontEnd dim("input x : f32[" + repeat("(", n) + "4" + repeat(")", n) + "]\n");
    requireSingleNestingError(dim);
    FrontEnd bound("output y[i < " + repeat("-", n) + "4] = 1\n");
    requireSingleNestingError(bound);
  }
  SECTION("10,000 unclosed parentheses") {
    FrontEnd fe("input x : f32[4]\noutput y = " + repeat("(", n) + "x\n");
    requireSingleNestingError(fe);
  }
  SECTION("many deep statements stop at the error cap") {
    FrontEnd fe(repeat("y = " + repeat("(", 600) + "1" + repeat(")", 600) + "\n", 100));
    CHECK(fe.diags().errorCount() == DiagnosticEngine::kMaxErrors);
    CHECK(fe.has(DiagId::TooManyErrors));
  }
}

TEST_CASE("nesting just under the limit is accepted", "[stress]") {
  // The parenthesised expression needs one level for the whole right-hand side.
  const int ok = kMaxNestingDepth - 1;
  FrontEnd fe("input x : f32[4]\noutput y = " + repeat("(", ok) + "x" + repeat(")", ok) + "\n");
  INFO(fe.diags().render(false).substr(0, 2000));
  CHECK(fe.diags().diagnostics().empty());
  CHECK(fe.program().has_value());
}

TEST_CASE("a left-associative chain of 100,000 terms", "[stress]") {
  // The tree of a left-associative chain is as high as the chain is long, so the parser bounds
  // it like any other nesting: the 512th '+' makes the tree too high. The error is reported
  // once, at that operator, and the rest of the statement is skipped.
  const int terms = 100000;
  std::string rhs = "x";
  for (int i = 1; i < terms; ++i) rhs += " + x";
  const std::string text = "input x : f32[4]\noutput y = " + rhs + "\n";
  FrontEnd fe(text);
  requireSingleNestingError(fe);
  const Diagnostic& d = fe.diags().diagnostics()[0];
  CHECK(d.range.begin.line == 2);
  // "output y = x + x ...": the k-th '+' is at column 10 + 4k; the tree gets too high at the
  // kMaxNestingDepth-th one.
  CHECK(d.range.begin.column == 10 + 4 * kMaxNestingDepth);
  FrontEnd again(text);
  CHECK(fe.output() == again.output());

  SECTION("a chain just under the limit analyses") {
    std::string shortRhs = "x";
    for (int i = 1; i < kMaxNestingDepth; ++i) shortRhs += " + x";
    FrontEnd ok("input x : f32[4]\noutput y = " + shortRhs + "\n");
    INFO(ok.diags().render(false).substr(0, 2000));
    CHECK(ok.diags().diagnostics().empty());
    CHECK(ok.program().has_value());
  }
}

TEST_CASE("a 10,000-statement program checks clean and fast", "[stress]") {
  const int n = 10000;
  const std::string src = chainProgram(n);

  auto start = Clock::now();
  SourceFile file("chain.tex", src);
  DiagnosticEngine diags(&file);
  Module module = parse(file, diags);
  double parseSeconds = secondsSince(start);
  REQUIRE_FALSE(diags.hasErrors());
  REQUIRE(module.stmts.size() == static_cast<size_t>(n) + 4);

  start = Clock::now();
  std::optional<Program> program = analyze(module, diags);
  double analyseSeconds = secondsSince(start);
  std::printf("[stress] %d-statement program: parse %.3f s, analyse %.3f s\n", n, parseSeconds, analyseSeconds);

  INFO(diags.render(false).substr(0, 2000));
  CHECK(diags.diagnostics().empty());
  REQUIRE(program.has_value());
  CHECK(program->computations.size() == static_cast<size_t>(n));
  CHECK(program->tensors.size() == static_cast<size_t>(n) + 2);
  REQUIRE(program->outputs.size() == 1);
  CHECK(program->tensors[program->outputs[0]].name == fmt::format("t{}", n));
  CHECK(program->tensors[program->outputs[0]].shape == std::vector<int64_t>{64, 32});
#if defined(__SANITIZE_ADDRESS__)
  // The sanitizer stage (scripts/sanitize.sh) runs analysis several times slower: it checks
  // memory safety here, the plain Release build checks speed.
  CHECK(analyseSeconds < 10.0);
#elif defined(NDEBUG)
  CHECK(analyseSeconds < 1.0);
#else
  CHECK(analyseSeconds < 30.0);
#endif
}

TEST_CASE("the 10,000-statement program survives printModule and reparsing", "[stress]") {
  const std::string src = chainProgram(10000);
  SourceFile file("chain.tex", src);
  DiagnosticEngine diags(&file);
  Module module = parse(file, diags);
  REQUIRE_FALSE(diags.hasErrors());

  std::string printed = printModule(module);
  SourceFile again("chain-printed.tex", printed);
  DiagnosticEngine diags2(&again);
  Module reparsed = parse(again, diags2);
  INFO(diags2.render(false).substr(0, 2000));
  REQUIRE_FALSE(diags2.hasErrors());
  CHECK(equalModules(module, reparsed));
  CHECK(printModule(reparsed) == printed);

  // And the comparison is not trivially true.
  reparsed.stmts[5000].name = "changed";
  CHECK_FALSE(equalModules(module, reparsed));
}

TEST_CASE("long lists of dimensions and index variables stay linear", "[stress]") {
  auto names = [](int n, const char* bound) {
    std::string out;
    for (int i = 0; i < n; ++i) out += fmt::format("{}v{}{}", i ? ", " : "", i, bound);
    return out;
  };
  SECTION("a reduction over 20,000 unbounded variables") {
    auto start = Clock::now();
    FrontEnd fe("input x : f32[4]\noutput y = sum(" + names(20000, "") + ": x[v0])\n");
    std::printf("[stress] reduction over 20,000 variables: %.3f s\n", secondsSince(start));
    CHECK(fe.diags().errorCount() == DiagnosticEngine::kMaxErrors);
    CHECK(fe.has(DiagId::RangeUnknown));
    CHECK(fe.has(DiagId::TooManyErrors));
  }
  SECTION("a reduction over 20,000 bounded variables") {
    auto start = Clock::now();
    FrontEnd fe("output y = sum(" + names(20000, " < 2") + ": 1)\n");
    std::printf("[stress] reduction over 20,000 bounded variables: %.3f s\n", secondsSince(start));
    INFO(fe.diags().render(false).substr(0, 2000));
    CHECK(fe.diags().diagnostics().empty());
    REQUIRE(fe.program().has_value());
    CHECK(fe.program()->computations[0].vars.size() == 20000u);
  }
  SECTION("a duplicate deep in a long list of variables") {
    FrontEnd fe("output y = sum(" + names(5000, " < 2") + ", v4321 < 2: 1)\n");
    REQUIRE(fe.diags().errorCount() == 1);
    CHECK(fe.diags().diagnostics()[0].id == DiagId::IndexVarShadows);
  }
  SECTION("an input of 100,000 dimensions") {
    std::string dims = "1";
    for (int i = 1; i < 100000; ++i) dims += ", 1";
    FrontEnd fe("input x : f32[" + dims + "]\noutput y = x + x\n");
    REQUIRE(fe.diags().diagnostics().size() >= 1);
    const Diagnostic& d = fe.diags().diagnostics()[0];
    CHECK(d.id == DiagId::RankTooLarge);
    // At the first dimension past the limit: "input x : f32[" then "1, " per dimension.
    CHECK(d.range.begin.column == 15 + 3 * kMaxRank);
  }
  SECTION("an index-form statement of 20,000 dimensions") {
    FrontEnd fe("output y[" + names(20000, " < 2") + "] = 1\n");
    REQUIRE(fe.diags().errorCount() == 1);
    CHECK(fe.diags().diagnostics()[0].id == DiagId::RankTooLarge);
  }
  SECTION("the largest rank, broadcast over many bare uses") {
    // Every bare use of x gets kMaxRank index expressions; the work is linear in the uses.
    // 2^20 elements: within TensorTooLarge's 2^62 bytes.
    std::string dims = "1";
    for (size_t i = 1; i < kMaxRank; ++i) dims += i <= 20 ? ", 2" : ", 1";
    std::string group = "(x" + repeat(" + x", 199) + ")";
    auto start = Clock::now();
    FrontEnd fe("input x : f32[" + dims + "]\noutput y = " + group + repeat(" * " + group, 9) + "\n");
    std::printf("[stress] rank-%zu whole-tensor statement with 2,000 uses: %.3f s\n", kMaxRank, secondsSince(start));
    INFO(fe.diags().render(false).substr(0, 2000));
    CHECK(fe.diags().diagnostics().empty());
    REQUIRE(fe.program().has_value());
    CHECK(fe.program()->tensors.back().shape.size() == kMaxRank);
  }
  SECTION("2 MB of max calls nested 500 deep") {
    // Telling max(a, b) from max(k: ...) must not rescan the tokens at every level.
    const std::string deep = repeat("max(x, ", 500) + "x" + repeat(")", 500);
    std::string text = "input x : f32[4]\n";
    int n = 0;
    while (text.size() < 2u * 1024 * 1024) text += fmt::format("{}t{} = {}\n", n == 0 ? "output " : "", n, deep), ++n;
    auto start = Clock::now();
    FrontEnd fe(text, false);
    std::printf("[stress] 2 MB of max calls nested 500 deep: parse %.3f s\n", secondsSince(start));
    CHECK(fe.diags().diagnostics().empty());
    CHECK(fe.module().stmts.size() == static_cast<size_t>(n) + 1);
  }
}

TEST_CASE("fuzzer regression inputs", "[stress]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(TEXC_SOURCE_DIR) / "tests" / "fuzz" / "regressions";
  REQUIRE(fs::is_directory(dir));
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() != ".md") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  CHECK_FALSE(files.empty());
  for (const fs::path& path : files) {
    CAPTURE(path.filename().string());
    std::ifstream in(path, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // The properties the fuzzer checks: no crash, a program exactly when there is no error, and
    // printModule round-trips.
    FrontEnd fe(text);
    if (fe.parsedClean()) CHECK(fe.program().has_value() != fe.diags().hasErrors());
    CHECK_FALSE((fe.output().empty() && fe.diags().hasErrors()));
    SourceFile printed("printed.tex", printModule(fe.module()));
    DiagnosticEngine diags(&printed);
    Module reparsed = parse(printed, diags);
    if (!diags.hasErrors()) CHECK(equalModules(fe.module(), reparsed));
    for (const Diagnostic& d : diags.diagnostics())
      CHECK((d.id == DiagId::NestingTooDeep || d.id == DiagId::TooManyErrors));
  }
}

}  // namespace texc
