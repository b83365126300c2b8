// Golden tests of the `sema` dump (printProgram, what `texc compile --emit sema` prints).
//
// The cases are every examples/*.tex (golden in tests/golden/sema/examples/NAME.expected, so the
// examples are not copied) and every tests/golden/sema/*.tex (golden beside it, NAME.expected).
// Each program is parsed and analysed as texc does it; the dump must equal the .expected file
// byte for byte. Diagnostics (the warnings of a valid program) must equal NAME.diagnostics, which
// exists only when there are some. A line `# golden: -D NAME=VALUE ...` in a .tex file gives the
// -D overrides it is analysed with.
//
// With TEXC_ACCEPT=1 in the environment the goldens are rewritten instead of compared (see
// scripts/accept-goldens.sh); review `git diff tests/golden` before committing them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
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

namespace fs = std::filesystem;

const fs::path kRoot = TEXC_SOURCE_DIR;
const fs::path kGoldenDir = kRoot / "tests" / "golden" / "sema";

bool acceptMode() {
  const char* v = std::getenv("TEXC_ACCEPT");
  return v && std::string(v) == "1";
}

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Writes `text` to `path` unless it already holds exactly that. Returns true when it wrote.
bool writeIfChanged(const fs::path& path, const std::string& text) {
  if (fs::exists(path) && readFile(path) == text) return false;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return true;
}

std::string repoPath(const fs::path& p) { return p.lexically_relative(kRoot).generic_string(); }

struct GoldenCase {
  std::string name;       // what the test reports: the source path from the repository root
  fs::path source;        // the .tex program
  fs::path expected;      // its printProgram output
  fs::path diagnostics;   // its rendered diagnostics, present only when there are any
};

std::vector<fs::path> texFilesIn(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const fs::directory_entry& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".tex") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

GoldenCase makeCase(const fs::path& source, const fs::path& goldenDir) {
  std::string stem = source.stem().string();
  return {repoPath(source), source, goldenDir / (stem + ".expected"), goldenDir / (stem + ".diagnostics")};
}

std::vector<GoldenCase> goldenCases() {
  std::vector<GoldenCase> cases;
  for (const fs::path& p : texFilesIn(kRoot / "examples")) cases.push_back(makeCase(p, kGoldenDir / "examples"));
  for (const fs::path& p : texFilesIn(kGoldenDir)) cases.push_back(makeCase(p, kGoldenDir));
  return cases;
}

// The -D overrides of `# golden: -D N=8 -D H=6` lines, or an error message.
std::optional<std::string> readOverrides(const std::string& text, LetOverrides& out) {
  std::istringstream lines(text);
  std::string line;
  const std::string marker = "# golden:";
  while (std::getline(lines, line)) {
    if (line.rfind(marker, 0) != 0) continue;
    std::istringstream words(line.substr(marker.size()));
    std::string word;
    while (words >> word) {
      if (word == "-D") {
        if (!(words >> word)) return "'-D' without NAME=VALUE in: " + line;
      } else if (word.rfind("-D", 0) == 0) {
        word = word.substr(2);
      } else {
        return "unknown option '" + word + "' in: " + line;
      }
      size_t eq = word.find('=');
      if (eq == std::string::npos || eq == 0) return "expected NAME=VALUE but found '" + word + "'";
      int64_t value = 0;
      const char* first = word.data() + eq + 1;
      const char* last = word.data() + word.size();
      auto [p, ec] = std::from_chars(first, last, value);
      if (ec != std::errc() || p != last || first == last) return "'" + word + "': the value is not an integer";
      out[word.substr(0, eq)] = value;
    }
  }
  return std::nullopt;
}

struct GoldenRun {
  std::string dump;         // printProgram, empty when analysis failed
  std::string diagnostics;  // rendered without colour, empty when there were none
  std::string failure;      // why the program could not be dumped, empty on success
};

GoldenRun runCase(const GoldenCase& c) {
  GoldenRun r;
  std::string text = readFile(c.source);
  LetOverrides overrides;
  if (auto err = readOverrides(text, overrides)) {
    r.failure = "bad '# golden:' line: " + *err;
    return r;
  }
  // Named by file name only, so rendered diagnostics do not depend on where the checkout is.
  SourceFile file(c.source.filename().string(), text);
  DiagnosticEngine diags(&file);
  Module module = parse(file, diags);
  std::optional<Program> program;
  if (!diags.hasErrors()) {
    if (auto err = checkOverrides(module, overrides)) {
      r.failure = "-D usage error: " + *err;
      return r;
    }
    program = analyze(module, diags, overrides);
  }
  r.diagnostics = diags.diagnostics().empty() ? "" : diags.render(false);
  if (program) r.dump = printProgram(*program);
  else r.failure = "the program has errors (goldens must be valid programs):\n" + r.diagnostics;
  return r;
}

// ---- a line diff for mismatch reports ----------------------------------------------------------

std::vector<std::string> splitLines(const std::string& s) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < s.size()) {
    size_t nl = s.find('\n', start);
    if (nl == std::string::npos) nl = s.size();
    lines.push_back(s.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

struct DiffOp {
  char tag;  // ' ' both, '-' expected only, '+' actual only
  size_t a;  // 0-based line in expected (the next one, for '+')
  size_t b;  // 0-based line in actual (the next one, for '-')
};

// A shortest edit script from the longest common subsequence of lines.
std::vector<DiffOp> diffLines(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  size_t n = a.size(), m = b.size();
  std::vector<std::vector<uint32_t>> lcs(n + 1, std::vector<uint32_t>(m + 1, 0));
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  std::vector<DiffOp> ops;
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] == b[j]) {
      ops.push_back({' ', i++, j++});
    } else if (i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1])) {
      ops.push_back({'-', i++, j});
    } else {
      ops.push_back({'+', i, j++});
    }
  }
  return ops;
}

// Unified-diff hunks with `context` unchanged lines around each change.
std::string unifiedDiff(const std::vector<std::string>& a, const std::vector<std::string>& b, size_t context = 3) {
  std::vector<DiffOp> ops = diffLines(a, b);
  std::string out = "--- expected\n+++ actual\n";
  size_t k = 0;
  while (k < ops.size()) {
    while (k < ops.size() && ops[k].tag == ' ') ++k;
    if (k == ops.size()) break;
    size_t begin = k >= context ? k - context : 0;
    // Extend the hunk while the next change is within 2 * context unchanged lines.
    size_t end = k;
    size_t same = 0;
    for (size_t q = k; q < ops.size(); ++q) {
      if (ops[q].tag == ' ') {
        if (++same > 2 * context) break;
      } else {
        same = 0;
        end = q;
      }
    }
    end = std::min(ops.size(), end + 1 + context);
    size_t aLen = 0, bLen = 0;
    for (size_t q = begin; q < end; ++q) {
      if (ops[q].tag != '+') ++aLen;
      if (ops[q].tag != '-') ++bLen;
    }
    out += "@@ -" + std::to_string(ops[begin].a + 1) + "," + std::to_string(aLen) + " +" +
           std::to_string(ops[begin].b + 1) + "," + std::to_string(bLen) + " @@\n";
    for (size_t q = begin; q < end; ++q) {
      const std::string& line = ops[q].tag == '+' ? b[ops[q].b] : a[ops[q].a];
      out += ops[q].tag + line + "\n";
    }
    k = end;
  }
  return out;
}

// The mismatch report: the first differing line, a unified diff, then both texts whole.
std::string mismatchReport(const std::string& what, const std::string& expected, const std::string& actual) {
  std::vector<std::string> a = splitLines(expected), b = splitLines(actual);
  size_t first = 0;
  while (first < a.size() && first < b.size() && a[first] == b[first]) ++first;
  auto lineAt = [](const std::vector<std::string>& v, size_t i) { return i < v.size() ? "'" + v[i] + "'" : "(end of text)"; };
  std::string out = what + " differs from the golden\n";
  if (first == a.size() && first == b.size()) {
    out += "the lines are equal; the texts differ in the newline at the end\n";
  } else {
    out += "first difference at line " + std::to_string(first + 1) + ":\n";
    out += "  expected: " + lineAt(a, first) + "\n";
    out += "  actual:   " + lineAt(b, first) + "\n";
  }
  out += unifiedDiff(a, b);
  out += "======== expected ========\n" + expected;
  out += "======== actual ==========\n" + actual;
  out += "==========================\n";
  out += "if the new text is right, run scripts/accept-goldens.sh and review git diff tests/golden\n";
  return out;
}

// Fails the current section with the report. Catch wraps long lines of its messages, so the
// report also goes to stderr exactly as it is.
void reportMismatch(const std::string& what, const std::string& expected, const std::string& actual) {
  std::string report = mismatchReport(what, expected, actual);
  std::cerr << report << std::flush;
  FAIL_CHECK(report);
}

// ---- the tests -------------------------------------------------------------------------------

TEST_CASE("sema goldens: every program's dump equals its .expected", "[golden][sema]") {
  std::vector<GoldenCase> cases = goldenCases();
  REQUIRE(!cases.empty());
  bool accept = acceptMode();
  for (const GoldenCase& c : cases) {
    DYNAMIC_SECTION(c.name) {
      GoldenRun run = runCase(c);
      if (!run.failure.empty()) FAIL(c.name << ": " << run.failure);
      if (accept) {
        fs::create_directories(c.expected.parent_path());
        if (writeIfChanged(c.expected, run.dump)) WARN("updated " << repoPath(c.expected));
        if (!run.diagnostics.empty()) {
          if (writeIfChanged(c.diagnostics, run.diagnostics)) WARN("updated " << repoPath(c.diagnostics));
        } else if (fs::exists(c.diagnostics)) {
          fs::remove(c.diagnostics);
          WARN("removed " << repoPath(c.diagnostics));
        }
        continue;
      }
      if (!fs::exists(c.expected)) {
        FAIL_CHECK(repoPath(c.expected) << " is missing; create it with scripts/accept-goldens.sh\n"
                                        << "the dump is:\n" << run.dump);
      } else {
        std::string expected = readFile(c.expected);
        if (expected != run.dump) reportMismatch("the dump of " + c.name, expected, run.dump);
      }
      std::string expectedDiags = fs::exists(c.diagnostics) ? readFile(c.diagnostics) : "";
      if (expectedDiags != run.diagnostics)
        reportMismatch("the diagnostics of " + c.name + " (" + repoPath(c.diagnostics) + ")", expectedDiags,
                       run.diagnostics);
    }
  }
}

TEST_CASE("sema goldens: the set of goldens is complete and has no stale files", "[golden][sema]") {
  std::vector<GoldenCase> cases = goldenCases();
  size_t examples = texFilesIn(kRoot / "examples").size();
  CHECK(examples >= 7);
  // At least 12 programs beyond the examples.
  CHECK(cases.size() >= examples + 12);

  std::set<fs::path> owned;
  for (const GoldenCase& c : cases) {
    owned.insert(c.expected);
    owned.insert(c.diagnostics);
  }
  std::vector<fs::path> stale;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(kGoldenDir)) {
    std::string ext = e.path().extension().string();
    if (!e.is_regular_file() || (ext != ".expected" && ext != ".diagnostics")) continue;
    if (!owned.count(e.path())) stale.push_back(e.path());
  }
  if (acceptMode()) {
    for (const fs::path& p : stale) {
      fs::remove(p);
      WARN("removed stale golden " << repoPath(p));
    }
    return;
  }
  for (const fs::path& p : stale)
    FAIL_CHECK(repoPath(p) << " belongs to no program (its .tex was removed or renamed); run scripts/accept-goldens.sh");
}

TEST_CASE("sema goldens: the mismatch report shows the first difference and a diff", "[golden][sema]") {
  std::string expected = "a\nb\nc\nd\n";
  std::string actual = "a\nB\nc\nd\ne\n";
  std::string report = mismatchReport("x", expected, actual);
  CHECK(report.find("first difference at line 2:\n  expected: 'b'\n  actual:   'B'\n") != std::string::npos);
  CHECK(report.find("@@ -1,4 +1,5 @@\n a\n-b\n+B\n c\n d\n+e\n") != std::string::npos);
  CHECK(mismatchReport("x", "a\n", "a").find("newline at the end") != std::string::npos);

  // Far-apart changes make separate hunks.
  std::vector<std::string> a, b;
  for (int i = 0; i < 20; ++i) a.push_back(std::to_string(i));
  b = a;
  b[1] = "one";
  b[18] = "eighteen";
  std::string diff = unifiedDiff(a, b);
  CHECK(diff.find("@@ -1,5 +1,5 @@\n 0\n-1\n+one\n 2\n 3\n 4\n") != std::string::npos);
  CHECK(diff.find("@@ -16,5 +16,5 @@\n 15\n 16\n 17\n-18\n+eighteen\n 19\n") != std::string::npos);
}

TEST_CASE("sema goldens: '# golden:' lines give -D overrides", "[golden][sema]") {
  LetOverrides o;
  CHECK_FALSE(readOverrides("# golden: -D N=8 -DH=6\nlet N = 2\n", o));
  CHECK(o == LetOverrides{{"N", 8}, {"H", 6}});
  LetOverrides bad;
  CHECK(readOverrides("# golden: -D N=x\n", bad));
  CHECK(readOverrides("# golden: -O2\n", bad));
  CHECK(readOverrides("# golden: -D\n", bad));
}

}  // namespace
}  // namespace texc
