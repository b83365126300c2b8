// Golden tests of the dataflow IR (`texc compile --emit ir`, with the default fusion and with
// --fuse=none) and of the loop IR (`--emit loops`), produced in-process through the pass
// pipeline: a CompileState run by runPipeline(buildPipeline(options, stage)), then printStage.
//
// The programs are every examples/*.tex, compiled with the small sizes of
// tests/golden/graph/example-sizes.txt, and every tests/golden/graph/*.tex (options from its
// `# golden:` lines). For a program NAME the goldens are
//
//   tests/golden/graph/[examples/]NAME.expected           --emit ir
//   tests/golden/graph/[examples/]NAME.unfused.expected   --emit ir --fuse=none
//   tests/golden/loops/[examples/]NAME.expected           --emit loops
//
// (`examples/` for the examples). TEXC_ACCEPT=1 rewrites them (scripts/accept-goldens.sh);
// docs/ir.md describes both text forms.
#include <catch2/catch.hpp>

#include <cstdio>
#include <set>

#include "PassTestSupport.h"
#include "compiler/passes/Pipeline.h"

namespace texc::passtest {
namespace {

const fs::path kGraphDir = sourceRoot() / "tests" / "golden" / "graph";
const fs::path kLoopsDir = sourceRoot() / "tests" / "golden" / "loops";

struct IrCase {
  TestProgram program;
  fs::path graph;    // --emit ir
  fs::path unfused;  // --emit ir --fuse=none
  fs::path loops;    // --emit loops
};

IrCase makeCase(TestProgram program, const fs::path& stem, const std::string& sub) {
  std::string name = stem.stem().string();
  fs::path g = sub.empty() ? kGraphDir : kGraphDir / sub;
  fs::path l = sub.empty() ? kLoopsDir : kLoopsDir / sub;
  return {std::move(program), g / (name + ".expected"), g / (name + ".unfused.expected"), l / (name + ".expected")};
}

std::vector<IrCase> irCases() {
  std::vector<IrCase> cases;
  for (TestProgram& p : examplePrograms()) {
    fs::path stem = p.name;
    cases.push_back(makeCase(std::move(p), stem, "examples"));
  }
  for (const fs::path& f : texFilesIn(kGraphDir)) cases.push_back(makeCase(fileProgram(f), f, ""));
  return cases;
}

// The text `texc compile --emit ir|loops` prints for `program`, or the failure.
std::string compileToText(const TestProgram& program, FuseMode fuse, Stage stage, std::string& failure,
                          const std::string& cpu = "haswell") {
  TestProgram p = program;
  p.options.fuse = fuse;
  std::unique_ptr<Session> s = startSession(p);
  s->state().options.cpu = cpu;
  // The tiled nests depend on the host's caches and vector registers; tests/unit/passes/
  // TileTests.cpp checks them with a fixed machine.
  s->state().options.tile = false;
  if (!s->runThroughPassManager(buildPipeline(s->state().options, stage), Instrumentation{})) {
    failure = s->failure();
    return "";
  }
  return printStage(s->state(), stage);
}

void runGoldens(FuseMode fuseOverride, bool useOverride, Stage stage, fs::path IrCase::*golden) {
  std::vector<IrCase> cases = irCases();
  REQUIRE(!cases.empty());
  for (const IrCase& c : cases) {
    DYNAMIC_SECTION(c.program.name) {
      std::string failure;
      std::string text = compileToText(c.program, useOverride ? fuseOverride : c.program.options.fuse, stage, failure);
      if (!failure.empty()) FAIL(c.program.name << ": " << failure);
      checkGolden(c.*golden, text);
    }
  }
}

TEST_CASE("IR goldens: --emit ir with the default fusion", "[golden][ir]") {
  runGoldens(FuseMode::All, false, Stage::Graph, &IrCase::graph);
}

TEST_CASE("IR goldens: --emit ir --fuse=none", "[golden][ir]") {
  runGoldens(FuseMode::None, true, Stage::Graph, &IrCase::unfused);
}

TEST_CASE("IR goldens: --emit loops", "[golden][ir]") { runGoldens(FuseMode::All, false, Stage::Loops, &IrCase::loops); }

// These goldens hold for every CPU: the graph and the untiled loop nests do not depend on the vector
// width or the caches, a sum's lanes included (sum-lanes: the same on every target, so that a sum
// gives the same bits on every CPU). Each program is compiled for an AVX2, an AVX-512 and an AMD
// CPU, whatever the host, and must print the same text; a pass that starts reading the target
// fails here on any host.
TEST_CASE("IR goldens: the same text for every --cpu", "[golden][ir][cpu]") {
  std::vector<IrCase> cases = irCases();
  REQUIRE(!cases.empty());
  for (const IrCase& c : cases) {
    for (Stage stage : {Stage::Graph, Stage::Loops}) {
      std::string failure;
      std::string first = compileToText(c.program, c.program.options.fuse, stage, failure, "haswell");
      INFO(c.program.name << (stage == Stage::Graph ? " --emit ir" : " --emit loops"));
      REQUIRE(failure == "");
      for (const char* cpu : {"skylake-avx512", "znver3"}) {
        INFO("--cpu " << cpu);
        CHECK(compileToText(c.program, c.program.options.fuse, stage, failure, cpu) == first);
      }
    }
  }
}

TEST_CASE("IR goldens: the set is complete and has no stale files", "[golden][ir]") {
  std::vector<IrCase> cases = irCases();
  size_t examples = texFilesIn(sourceRoot() / "examples").size();
  CHECK(examples >= 7);
  CHECK(cases.size() >= examples + 6);
  for (const IrCase& c : cases) {
    INFO(c.program.name);
    CHECK(c.program.error == "");
  }

  std::set<fs::path> owned;
  for (const IrCase& c : cases) owned.insert({c.graph, c.unfused, c.loops});
  std::vector<fs::path> stale;
  for (const fs::path& dir : {kGraphDir, kLoopsDir}) {
    if (!fs::is_directory(dir)) continue;
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir))
      if (e.is_regular_file() && e.path().extension() == ".expected" && !owned.count(e.path())) stale.push_back(e.path());
  }
  for (const fs::path& p : stale) {
    if (acceptMode()) {
      fs::remove(p);
      WARN("removed stale golden " << repoPath(p));
    } else {
      FAIL_CHECK(repoPath(p) << " belongs to no program (its .tex was removed or renamed); run scripts/accept-goldens.sh");
    }
  }
}

// The goldens are made in-process; the texc binary must print the same text.
TEST_CASE("IR goldens: texc compile prints what the in-process pipeline prints", "[golden][ir]") {
  TestProgram gelu = fileProgram(sourceRoot() / "examples" / "gelu.tex");
  gelu.options.overrides = {{"N", 4}, {"D", 8}};
  struct Variant {
    const char* args;
    FuseMode fuse;
    Stage stage;
  };
  for (const Variant& v : {Variant{"--emit ir", FuseMode::All, Stage::Graph}, Variant{"--emit ir --fuse=none", FuseMode::None, Stage::Graph},
                           Variant{"--emit loops", FuseMode::All, Stage::Loops}}) {
    std::string command = std::string(TEXC_BINARY) + " compile " + (sourceRoot() / "examples" / "gelu.tex").string() +
                          " -D N=4 -D D=8 " + v.args + " 2>&1";
    std::string printed;
    FILE* pipe = popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) printed.append(buf, n);
    int status = pclose(pipe);
    INFO(command);
    CHECK(status == 0);
    std::string failure;
    CHECK(printed == compileToText(gelu, v.fuse, v.stage, failure));
    CHECK(failure.empty());
  }
}

TEST_CASE("IR goldens: the mismatch report shows the first difference and a diff", "[golden][ir]") {
  std::string report = mismatchReport("x", "a\nb\nc\nd\n", "a\nB\nc\nd\ne\n");
  CHECK(report.find("first difference at line 2:\n  expected: 'b'\n  actual:   'B'\n") != std::string::npos);
  CHECK(report.find("@@ -1,4 +1,5 @@\n a\n-b\n+B\n c\n d\n+e\n") != std::string::npos);
  CHECK(mismatchReport("x", "a\n", "a").find("newline at the end") != std::string::npos);

  // Changes far apart make two hunks; close ones share one.
  std::vector<std::string> a;
  for (int i = 0; i < 20; ++i) a.push_back(std::to_string(i));
  std::vector<std::string> b = a;
  b[1] = "one";
  b[18] = "eighteen";
  std::string diff = unifiedDiff(a, b);
  CHECK(diff.find("@@ -1,5 +1,5 @@\n 0\n-1\n+one\n 2\n 3\n 4\n") != std::string::npos);
  CHECK(diff.find("@@ -16,5 +16,5 @@\n 15\n 16\n 17\n-18\n+eighteen\n 19\n") != std::string::npos);
  b = a;
  b[5] = "five";
  b[9] = "nine";
  CHECK(unifiedDiff(a, b) == "--- expected\n+++ actual\n@@ -3,11 +3,11 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n-9\n+nine\n 10\n 11\n 12\n");
}

TEST_CASE("IR goldens: '# golden:' lines give -D overrides and the fusion mode", "[golden][ir]") {
  ProgramOptions o;
  CHECK_FALSE(readGoldenOptions("# golden: -D N=8 -DH=6 --fuse=none\nlet N = 2\n", o));
  CHECK(o.overrides == LetOverrides{{"N", 8}, {"H", 6}});
  CHECK(o.fuse == FuseMode::None);
  ProgramOptions e;
  CHECK_FALSE(readGoldenOptions("# golden: --fuse elementwise\n", e));
  CHECK(e.fuse == FuseMode::Elementwise);
  ProgramOptions bad;
  CHECK(readGoldenOptions("# golden: -D N=x\n", bad));
  CHECK(readGoldenOptions("# golden: -O2\n", bad));
  CHECK(readGoldenOptions("# golden: --fuse=some\n", bad));
  CHECK(readGoldenOptions("# golden: -D\n", bad));
}

}  // namespace
}  // namespace texc::passtest
