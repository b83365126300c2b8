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
#include "tests/support/GoldenFiles.h"

namespace texc {
namespace {

namespace fs = std::filesystem;
using namespace testsupport;

const fs::path kRoot = TEXC_SOURCE_DIR;
const fs::path kGoldenDir = kRoot / "tests" / "golden" / "sema";

struct GoldenCase {
  std::string name;       // what the test reports: the source path from the repository root
  fs::path source;        // the .tex program
  fs::path expected;      // its printProgram output
  fs::path diagnostics;   // its rendered diagnostics, present only when there are any
};

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
