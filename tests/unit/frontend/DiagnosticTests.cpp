// Diagnostics, end to end.
//
// tests/errors/ holds one small program per diagnostic id (`<Id>.tex`, variants `<Id>-2.tex` ...).
// Each program states what it must produce in comment lines at its top:
//
//   # expect: error 4:9 use of undefined name 'z'
//   # expect: note 2:7 'z' is defined later, here; names must be defined before they are used
//   # expect: note - a note without a location
//
// (severity, LINE:COL or '-', the exact message). A note belongs to the error or warning listed
// above it. Every error and warning produced must be listed; notes that are not listed are
// allowed. A program must also produce the diagnostic its file is named after.
//
// Further tests: a meta-test that every id has a program, the rendered gcc/clang format, and the
// exit statuses of `texc check` (run as a process).
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "frontend/AST.h"
#include "frontend/Diagnostics.h"
#include "frontend/Parser.h"
#include "frontend/Sema.h"
#include "frontend/Source.h"

namespace texc {
namespace {

namespace fs = std::filesystem;

const fs::path kSourceDir = TEXC_SOURCE_DIR;
const fs::path kErrorsDir = kSourceDir / "tests" / "errors";
const fs::path kExamplesDir = kSourceDir / "examples";

std::string readBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<fs::path> texFilesIn(const fs::path& dir) {
  std::vector<fs::path> files;
  if (!fs::is_directory(dir)) return files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".tex") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

const char* severityName(Severity s) {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Note: return "note";
  }
  return "?";
}

std::optional<Severity> parseSeverity(const std::string& s) {
  if (s == "error") return Severity::Error;
  if (s == "warning") return Severity::Warning;
  if (s == "note") return Severity::Note;
  return std::nullopt;
}

// The id a file in tests/errors/ is named after: "RangeConflict-2.tex" -> "RangeConflict".
std::string idOfFile(const fs::path& path) {
  std::string stem = path.stem().string();
  size_t dash = stem.find('-');
  return dash == std::string::npos ? stem : stem.substr(0, dash);
}

const DiagInfo* findDiag(const std::string& name) {
  for (const DiagInfo& info : allDiagnostics())
    if (name == info.name) return &info;
  return nullptr;
}

// ---- expectations ------------------------------------------------------------------------------

// One `# expect:` line. line == 0 stands for '-' (no location).
struct Expected {
  Severity severity = Severity::Error;
  uint32_t line = 0;
  uint32_t column = 0;
  std::string message;
  int fileLine = 0;             // where the expect line is, for failure messages
  std::vector<Expected> notes;  // for errors and warnings: the notes listed below them
};

std::string describe(Severity sev, uint32_t line, uint32_t column, const std::string& message) {
  std::string loc = line == 0 ? "-" : std::to_string(line) + ":" + std::to_string(column);
  return std::string(severityName(sev)) + " " + loc + " " + message;
}

std::string describe(const Expected& e) { return describe(e.severity, e.line, e.column, e.message); }

// Reads the `# expect:` lines of `text`. Malformed lines are appended to `problems`.
std::vector<Expected> parseExpectations(const std::string& text, std::vector<std::string>& problems) {
  const std::string prefix = "# expect:";
  std::vector<Expected> out;
  std::istringstream in(text);
  std::string line;
  for (int lineNo = 1; std::getline(in, line); ++lineNo) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.compare(0, prefix.size(), prefix) != 0) continue;
    std::istringstream fields(line.substr(prefix.size()));
    std::string sevText, locText;
    fields >> sevText >> locText;
    std::string message;
    std::getline(fields, message);
    if (!message.empty() && message.front() == ' ') message.erase(0, 1);
    auto bad = [&](const std::string& why) { problems.push_back("line " + std::to_string(lineNo) + ": " + why + ": " + line); };
    Expected e;
    e.fileLine = lineNo;
    e.message = message;
    auto sev = parseSeverity(sevText);
    if (!sev) {
      bad("severity must be error, warning or note");
      continue;
    }
    e.severity = *sev;
    if (locText != "-") {
      unsigned l = 0, c = 0;
      char colon = 0;
      std::istringstream loc(locText);
      if (!(loc >> l >> colon >> c) || colon != ':' || l == 0 || c == 0 || loc.peek() != EOF) {
        bad("location must be LINE:COL (1-based) or '-'");
        continue;
      }
      e.line = l;
      e.column = c;
    }
    if (message.empty()) {
      bad("missing message");
      continue;
    }
    if (e.severity == Severity::Note) {
      if (out.empty()) {
        bad("a note must follow the error or warning it belongs to");
        continue;
      }
      out.back().notes.push_back(std::move(e));
    } else {
      out.push_back(std::move(e));
    }
  }
  return out;
}

// ---- running the front end ---------------------------------------------------------------------

// Lexes, parses and (when parsing succeeded) analyses `text`. The file and engine are on the
// heap: diagnostics and the engine point into the file.
struct FrontEnd {
  std::unique_ptr<SourceFile> file;
  std::unique_ptr<DiagnosticEngine> diags;

  FrontEnd(const std::string& name, const std::string& text)
      : file(std::make_unique<SourceFile>(name, text)), diags(std::make_unique<DiagnosticEngine>(file.get())) {
    Module module = parse(*file, *diags);
    if (!diags->hasErrors()) analyze(module, *diags);
  }
};

bool sameLocation(const SourceRange& r, uint32_t line, uint32_t column) {
  if (line == 0) return !r.valid();
  return r.valid() && r.begin.line == line && r.begin.column == column;
}

bool matches(const Diagnostic& d, const Expected& e) {
  if (d.severity != e.severity || d.message != e.message || !sameLocation(d.range, e.line, e.column)) return false;
  for (const Expected& en : e.notes) {
    bool found = std::any_of(d.notes.begin(), d.notes.end(), [&](const DiagNote& n) {
      return n.message == en.message && sameLocation(n.range, en.line, en.column);
    });
    if (!found) return false;
  }
  return true;
}

std::string describe(const Diagnostic& d) {
  std::string s = describe(d.severity, d.range.valid() ? d.range.begin.line : 0, d.range.begin.column, d.message);
  for (const DiagNote& n : d.notes)
    s += "\n    " + describe(Severity::Note, n.range.valid() ? n.range.begin.line : 0, n.range.begin.column, n.message);
  return s;
}

// Checks one program of tests/errors/ against its expect lines.
void checkErrorProgram(const fs::path& path) {
  const std::string text = readBytes(path);
  std::vector<std::string> problems;
  std::vector<Expected> expected = parseExpectations(text, problems);
  for (const std::string& p : problems) FAIL_CHECK("malformed expect line, " << p);
  REQUIRE(problems.empty());
  REQUIRE_FALSE(expected.empty());

  const std::string id = idOfFile(path);
  const DiagInfo* info = findDiag(id);
  if (!info) FAIL("the file is named after '" << id << "', which is not an id of frontend/Diagnostics.def");

  FrontEnd fe(path.filename().string(), text);
  const std::vector<Diagnostic>& produced = fe.diags->diagnostics();
  INFO("produced:\n" << fe.diags->render(false));

  std::vector<bool> used(produced.size(), false);
  for (const Expected& e : expected) {
    bool found = false;
    for (size_t i = 0; i < produced.size() && !found; ++i) {
      if (used[i] || !matches(produced[i], e)) continue;
      used[i] = found = true;
    }
    if (!found) {
      std::string notes;
      for (const Expected& n : e.notes) notes += "\n    " + describe(n);
      FAIL_CHECK("expected (expect line " << e.fileLine << ") was not produced: " << describe(e) << notes);
    }
  }
  for (size_t i = 0; i < produced.size(); ++i)
    if (!used[i]) FAIL_CHECK("unexpected diagnostic: " << describe(produced[i]));

  bool hasOwnId = std::any_of(produced.begin(), produced.end(), [&](const Diagnostic& d) { return d.id == info->id; });
  if (!hasOwnId) FAIL_CHECK("the program does not produce the diagnostic its file is named after, " << id);
}

// ---- running texc ------------------------------------------------------------------------------

std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

struct CommandResult {
  int status = -1;  // the exit status, or -1 when the process did not exit normally
  std::string output;  // stdout and stderr together
};

// Runs `texc ARGS` with stdout and stderr captured (so neither is a terminal).
CommandResult runTexc(const std::string& args) {
  std::string command = shellQuote(TEXC_BINARY) + " " + args + " 2>&1";
  CommandResult r;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  int status = pclose(pipe);
  if (status != -1 && WIFEXITED(status)) r.status = WEXITSTATUS(status);
  return r;
}

void requireTexcBuilt() {
  INFO("these tests run the texc binary; build the 'texc' target first: " << TEXC_BINARY);
  REQUIRE(fs::exists(TEXC_BINARY));
}

// A scratch directory, removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("texc-diagnostic-tests-" + std::to_string(::getpid()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path write(const std::string& name, const std::string& text) const {
    fs::path p = path / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
};

}  // namespace

// ---- the programs of tests/errors/ -------------------------------------------------------------

TEST_CASE("diagnostics: every program in tests/errors gives exactly its expected diagnostics", "[diagnostics]") {
  std::vector<fs::path> files = texFilesIn(kErrorsDir);
  REQUIRE_FALSE(files.empty());
  for (const fs::path& path : files) {
    DYNAMIC_SECTION("tests/errors/" << path.filename().string()) { checkErrorProgram(path); }
  }
}

TEST_CASE("diagnostics: every diagnostic id has a program in tests/errors", "[diagnostics][meta]") {
  std::vector<fs::path> files = texFilesIn(kErrorsDir);
  std::vector<std::string> missing;
  for (const DiagInfo& info : allDiagnostics()) {
    bool covered = std::any_of(files.begin(), files.end(), [&](const fs::path& p) { return idOfFile(p) == info.name; });
    if (!covered) missing.push_back(info.name);
  }
  std::string list;
  for (const std::string& m : missing) list += "\n  tests/errors/" + m + ".tex";
  INFO("diagnostic ids without a test program:" << list);
  CHECK(missing.empty());
}

TEST_CASE("diagnostics: the expect-line reader", "[diagnostics][meta]") {
  std::vector<std::string> problems;
  std::vector<Expected> e = parseExpectations(
      "# expect: error 4:9 use of undefined name 'z'\r\n"
      "# expect: note 2:7 'z' is defined later\n"
      "# expect: note - no location\n"
      "# expect: warning 10:1 't' is computed\n"
      "let N = 4  # expect: error 1:1 not at the start of a line, so not an expectation\n",
      problems);
  CHECK(problems.empty());
  REQUIRE(e.size() == 2);
  CHECK(e[0].severity == Severity::Error);
  CHECK(e[0].line == 4);
  CHECK(e[0].column == 9);
  CHECK(e[0].message == "use of undefined name 'z'");
  REQUIRE(e[0].notes.size() == 2);
  CHECK(e[0].notes[0].line == 2);
  CHECK(e[0].notes[1].line == 0);
  CHECK(e[0].notes[1].message == "no location");
  CHECK(e[1].severity == Severity::Warning);

  for (const char* bad : {"# expect: fatal 1:1 x\n", "# expect: error 1 x\n", "# expect: error 0:1 x\n",
                          "# expect: error 1:1\n", "# expect: note 1:1 a note first\n", "# expect: error 1:2:3 x\n"}) {
    std::vector<std::string> p;
    parseExpectations(bad, p);
    CAPTURE(bad);
    CHECK(p.size() == 1);
  }
}

// ---- the rendered format -----------------------------------------------------------------------

TEST_CASE("diagnostics: rendered in the format of gcc and clang", "[diagnostics][render]") {
  // Line 3 has tabs before the bad call: the caret line reproduces them so the caret lines up
  // whatever the tab width, and COL counts a tab as one character.
  const std::string text =
      "input x : f32[4]\n"
      "input x : f32[8]\n"
      "output y =\tfoo(x)\t# a comment\n";
  FrontEnd fe("prog.tex", text);
  const std::string expected =
      "prog.tex:2:7: error: 'x' is already defined\n"
      "input x : f32[8]\n"
      "      ^\n"
      "prog.tex:1:7: note: previous definition is here\n"
      "input x : f32[4]\n"
      "      ^\n"
      "prog.tex:3:12: error: unknown function 'foo'\n"
      "output y =\tfoo(x)\t# a comment\n"
      "          \t^~~\n"
      "2 errors generated.\n";
  CHECK(fe.diags->render(false) == expected);

  SECTION("a warning, and the count line for warnings") {
    FrontEnd w("w.tex", "input a : f32[3]\nt = a + 1\noutput y = a\n");
    CHECK(w.diags->render(false) ==
          "w.tex:2:1: warning: 't' is computed but no output depends on it; it is removed\n"
          "t = a + 1\n"
          "^\n"
          "1 warning generated.\n");
  }
  SECTION("a range under several characters and a CRLF line") {
    FrontEnd r("r.tex", "input a : f32[3, 4]\r\noutput y[i] = a[i]\r\n");
    CHECK(r.diags->render(false) ==
          "r.tex:2:15: error: 'a' has rank 2 but is indexed with 1 index\n"
          "output y[i] = a[i]\n"
          "              ^~~~\n"
          "r.tex:1:7: note: 'a' is declared here as f32[3, 4]\n"
          "input a : f32[3, 4]\n"
          "      ^\n"
          "1 error generated.\n");
  }
  SECTION("columns count characters, not bytes") {
    FrontEnd u("u.tex", "let N = 4  # \xc3\xa9\noutput y = \xc3\xa9 + \xc3\xbc\n");
    const std::vector<Diagnostic>& d = u.diags->diagnostics();
    REQUIRE(d.size() == 2);
    CHECK(d[1].range.begin.column == 16);
    CHECK(u.diags->render(false) ==
          "u.tex:2:12: error: non-ASCII character U+00E9 outside a comment\n"
          "output y = \xc3\xa9 + \xc3\xbc\n"
          "           ^\n"
          "u.tex:2:16: error: non-ASCII character U+00FC outside a comment\n"
          "output y = \xc3\xa9 + \xc3\xbc\n"
          "               ^\n"
          "2 errors generated.\n");
  }
  SECTION("a byte that is not UTF-8 is shown as U+FFFD, one column wide") {
    FrontEnd u("u.tex", "output y = \x80 + \xc3\xa9\n");
    CHECK(u.diags->render(false) ==
          "u.tex:1:12: error: invalid UTF-8 byte 0x80 in source file\n"
          "output y = \xef\xbf\xbd + \xc3\xa9\n"
          "           ^\n"
          "u.tex:1:16: error: non-ASCII character U+00E9 outside a comment\n"
          "output y = \xef\xbf\xbd + \xc3\xa9\n"
          "               ^\n"
          "2 errors generated.\n");
  }
  SECTION("a caret at the end of a line") {
    FrontEnd e("e.tex", "input x : f32[4]\noutput y = x *\n");
    CHECK(e.diags->render(false) ==
          "e.tex:2:15: error: expected an expression but found end of line\n"
          "output y = x *\n"
          "              ^\n"
          "1 error generated.\n");
  }
  SECTION("colour only when requested") {
    CHECK(fe.diags->render(false).find('\033') == std::string::npos);
    std::string coloured = fe.diags->render(true);
    CHECK(coloured.find("\033[1;31merror:") != std::string::npos);
    CHECK(coloured.find("\033[1;36mnote:") != std::string::npos);
    CHECK(coloured.find("\033[0m") != std::string::npos);
    FrontEnd w("w.tex", "input a : f32[3]\nt = a + 1\noutput y = a\n");
    CHECK(w.diags->render(true).find("\033[1;35mwarning:") != std::string::npos);
  }
  SECTION("a clean program renders nothing") {
    FrontEnd ok("ok.tex", "input a : f32[3]\noutput y = a * 2\n");
    CHECK(ok.diags->diagnostics().empty());
    CHECK(ok.diags->render(false).empty());
  }
}

TEST_CASE("diagnostics: after the error limit, one 'too many errors' at the first dropped error", "[diagnostics]") {
  std::string text;
  for (int i = 1; i <= 30; ++i) text += "let N" + std::to_string(i) + " = 1 $ 2\n";
  FrontEnd fe("many.tex", text);
  const std::vector<Diagnostic>& d = fe.diags->diagnostics();
  CHECK(fe.diags->errorCount() == DiagnosticEngine::kMaxErrors);
  CHECK(fe.diags->shouldStop());
  REQUIRE(d.size() == static_cast<size_t>(DiagnosticEngine::kMaxErrors) + 1);
  CHECK(d.back().id == DiagId::TooManyErrors);
  CHECK(d.back().range.begin.line == DiagnosticEngine::kMaxErrors + 1);
  std::string out = fe.diags->render(false);
  // 'let N21 = 1 $ 2': the 21st '$' is in column 13.
  CHECK(out.find("many.tex:21:13: error: too many errors emitted, stopping now\n") != std::string::npos);
  const std::string last = "\n20 errors generated.\n";
  CHECK(out.compare(out.size() - last.size(), last.size(), last) == 0);

  SECTION("exactly the limit: every error is shown, and no 'too many errors'") {
    std::string twenty;
    for (int i = 1; i <= DiagnosticEngine::kMaxErrors; ++i) twenty += "let N" + std::to_string(i) + " = 1 $ 2\n";
    FrontEnd exact("twenty.tex", twenty);
    CHECK(exact.diags->errorCount() == DiagnosticEngine::kMaxErrors);
    CHECK(exact.diags->diagnostics().size() == static_cast<size_t>(DiagnosticEngine::kMaxErrors));
    CHECK_FALSE(exact.diags->shouldStop());
  }
}

// ---- texc check, as a process --------------------------------------------------------------------

TEST_CASE("texc check: exit 0 on every example", "[diagnostics][cli]") {
  requireTexcBuilt();
  std::vector<fs::path> examples = texFilesIn(kExamplesDir);
  REQUIRE_FALSE(examples.empty());
  for (const fs::path& ex : examples) {
    CommandResult r = runTexc("check " + shellQuote(ex.string()));
    INFO(ex.filename().string() << ":\n" << r.output);
    CHECK(r.status == 0);
    CHECK(r.output.find("error:") == std::string::npos);
  }
}

TEST_CASE("texc check: exit 1 on a program with errors, 0 with warnings only", "[diagnostics][cli]") {
  requireTexcBuilt();
  fs::path errorFile = kErrorsDir / "UndefinedName.tex";
  CommandResult r = runTexc("check " + shellQuote(errorFile.string()));
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK(r.output.find(errorFile.string() + ":4:16: error: use of undefined name 'z'\n") != std::string::npos);
  CHECK(r.output.find(": note: 'z' is defined later") != std::string::npos);
  CHECK(r.output.find("1 error generated.\n") != std::string::npos);
  // stderr is a pipe here, not a terminal: no colour.
  CHECK(r.output.find('\033') == std::string::npos);

  CommandResult w = runTexc("check " + shellQuote((kErrorsDir / "UnusedTensor.tex").string()));
  INFO(w.output);
  CHECK(w.status == 0);
  CHECK(w.output.find("warning: 't' is computed") != std::string::npos);

  CommandResult many = runTexc("check " + shellQuote((kErrorsDir / "TooManyErrors.tex").string()));
  CHECK(many.status == 1);
}

TEST_CASE("texc check: exit 2 on bad usage", "[diagnostics][cli]") {
  requireTexcBuilt();
  TempDir tmp;
  const std::string matmul = shellQuote((kExamplesDir / "matmul.tex").string());
  const std::string computed =
      shellQuote(tmp.write("computed.tex", "let M = 4\nlet N = M * 2\ninput x : f32[N]\noutput y = x\n").string());

  struct Case {
    const char* what;
    std::string args;
    int status;
  };
  const std::vector<Case> cases = {
      {"a valid override", "check " + matmul + " -D N=64", 0},
      {"a valid override of the literal a computed let depends on", "check " + computed + " -D M=3", 0},
      {"an unknown option", "check " + matmul + " --no-such-option", 2},
      {"an unknown subcommand", "frobnicate " + matmul, 2},
      {"no file", "check", 2},
      {"-D of a name that is not a let", "check " + matmul + " -D NOPE=3", 2},
      {"-D with a value that is not an integer", "check " + matmul + " -D N=abc", 2},
      {"-D with a size that is not positive", "check " + matmul + " -D N=0", 2},
      {"-D with a negative size", "check " + matmul + " -D N=-4", 2},
      {"-D without '='", "check " + matmul + " -D N", 2},
      {"-D of a let that is not a literal", "check " + computed + " -D N=3", 2},
      {"a missing file", "check " + shellQuote((tmp.path / "no-such-file.tex").string()), 2},
      {"a directory", "check " + shellQuote(tmp.path.string()), 2},
  };
  for (const Case& c : cases) {
    CommandResult r = runTexc(c.args);
    INFO(c.what << ": texc " << c.args << "\n" << r.output);
    CHECK(r.status == c.status);
    if (c.status == 2) CHECK_FALSE(r.output.empty());
  }
}

}  // namespace texc
