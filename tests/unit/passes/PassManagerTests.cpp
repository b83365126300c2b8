// The pass manager: --print-after/--print-after-all (with "(unchanged)"), --print-before,
// numbered --dump-dir files, pass-name checking, the verifier after each pass, timings, and
// stopping after errors.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <sstream>
#include <stdexcept>

#include "PassTestSupport.h"
#include "compiler/driver/Frontend.h"
#include "compiler/passes/Pipeline.h"

namespace texc::passtest {
namespace {

TestProgram gelu() {
  TestProgram p = fileProgram(sourceRoot() / "examples" / "gelu.tex");
  p.options.overrides = {{"N", 4}, {"D", 8}};
  return p;
}

// A fresh empty directory under the system's temporary directory, removed at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() / fmt::format("texc-pass-tests-{}-{}", getpid(), counter++);
    fs::remove_all(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

const char* extensionOf(Stage stage) {
  switch (stage) {
    case Stage::Ast: return "tex";
    case Stage::Sema: return "sema.txt";
    case Stage::Graph: return "graph.txt";
    case Stage::Loops: return "loops.txt";
    case Stage::Plan: return "plan.txt";
    case Stage::LLVM: return "ll";
    case Stage::CUDA: return "cu";
  }
  return "?";
}

// The texts of each stage after every pass of `pipeline`, got by running the passes one by one.
std::vector<std::string> textsAfterEachPass(const TestProgram& program, const std::vector<const PassInfo*>& pipeline,
                                            std::vector<bool>* changed = nullptr) {
  std::unique_ptr<Session> s = startSession(program);
  std::vector<std::string> texts;
  for (const PassInfo* p : pipeline) {
    bool c = s->runPass(*p);
    REQUIRE(s->failure() == "");
    if (changed) changed->push_back(c);
    texts.push_back(printStage(s->state(), p->stage));
  }
  return texts;
}

// Splits --print-* output into (header, body) pairs at the `// ----- IR ... -----` lines.
std::vector<std::pair<std::string, std::string>> sections(const std::string& printed) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& line : splitLines(printed)) {
    if (line.rfind("// ----- IR ", 0) == 0) out.push_back({line, ""});
    else if (!out.empty()) out.back().second += line + "\n";
  }
  return out;
}

TEST_CASE("pass manager: --print-after-all prints every pass, '(unchanged)' when it returned false", "[passes][manager]") {
  std::vector<const PassInfo*> pipeline = buildPipeline(Stage::Loops);
  std::vector<bool> changed;
  std::vector<std::string> texts = textsAfterEachPass(gelu(), pipeline, &changed);

  std::ostringstream printed;
  Instrumentation inst;
  inst.printAfterAll = true;
  inst.out = &printed;
  std::vector<PassTiming> timings;
  std::unique_ptr<Session> s = startSession(gelu());
  REQUIRE(runPipeline(s->state(), pipeline, inst, &timings));

  auto secs = sections(printed.str());
  REQUIRE(secs.size() == pipeline.size());
  REQUIRE(timings.size() == pipeline.size());
  bool sawUnchanged = false;
  for (size_t i = 0; i < pipeline.size(); ++i) {
    INFO("pass " << i + 1 << ": " << pipeline[i]->name);
    CHECK(secs[i].first == fmt::format("// ----- IR after {} -----", pipeline[i]->name));
    CHECK(timings[i].name == pipeline[i]->name);
    CHECK(timings[i].changed == changed[i]);
    // The first pass always prints; later ones print "(unchanged)" when they returned false.
    if (changed[i] || i == 0) {
      CHECK(secs[i].second == texts[i]);
    } else {
      sawUnchanged = true;
      CHECK(secs[i].second == "(unchanged)\n");
    }
  }
  // gelu has nothing to fold, simplify, merge or remove.
  CHECK(sawUnchanged);
  CHECK(secs[3].first == "// ----- IR after constant-fold -----");
  CHECK(secs[3].second == "(unchanged)\n");
}

TEST_CASE("pass manager: --print-after prints only the passes named, every time they run", "[passes][manager]") {
  std::vector<const PassInfo*> pipeline = buildPipeline(Stage::Graph);
  std::vector<std::string> texts = textsAfterEachPass(gelu(), pipeline);
  std::ostringstream printed;
  Instrumentation inst;
  inst.printAfter = {"split-ops", "dce"};
  inst.out = &printed;
  std::unique_ptr<Session> s = startSession(gelu());
  REQUIRE(runPipeline(s->state(), pipeline, inst));
  auto secs = sections(printed.str());
  size_t dceRuns = 0;
  for (const PassInfo* p : pipeline) dceRuns += std::string(p->name) == "dce";
  REQUIRE(secs.size() == 1 + dceRuns);
  CHECK(secs[0].first == "// ----- IR after split-ops -----");
  CHECK(secs[0].second == texts[2]);
  for (size_t i = 1; i < secs.size(); ++i) CHECK(secs[i].first == "// ----- IR after dce -----");
}

TEST_CASE("pass manager: --print-before prints the IR the pass gets", "[passes][manager]") {
  std::vector<const PassInfo*> pipeline = buildPipeline(Stage::Graph);
  REQUIRE(std::string(pipeline[2]->name) == "split-ops");
  REQUIRE(std::string(pipeline[4]->name) == "simplify");
  std::vector<std::string> texts = textsAfterEachPass(gelu(), pipeline);

  std::ostringstream printed;
  Instrumentation inst;
  inst.printBefore = {"split-ops", "simplify"};
  inst.out = &printed;
  std::unique_ptr<Session> s = startSession(gelu());
  REQUIRE(runPipeline(s->state(), pipeline, inst));
  auto secs = sections(printed.str());
  REQUIRE(secs.size() == 2);
  CHECK(secs[0].first == "// ----- IR before split-ops -----");
  // Before split-ops the graph is the analysed program: one node per statement.
  std::unique_ptr<Session> analysed = startSession(gelu());
  for (const PassInfo* p : buildPipeline(Stage::Sema)) analysed->runPass(*p);
  CHECK(secs[0].second == printStage(analysed->state(), Stage::Graph));
  CHECK(secs[0].second.find("%y[i0, i1] = fused ") != std::string::npos);
  CHECK(secs[1].first == "// ----- IR before simplify -----");
  CHECK(secs[1].second == texts[3]);  // what constant-fold left

  // Before and after together: before comes first.
  std::ostringstream both;
  inst.printBefore = {"cse"};
  inst.printAfter = {"cse"};
  inst.out = &both;
  std::unique_ptr<Session> s2 = startSession(gelu());
  REQUIRE(runPipeline(s2->state(), pipeline, inst));
  auto secs2 = sections(both.str());
  REQUIRE(secs2.size() == 2);
  CHECK(secs2[0].first == "// ----- IR before cse -----");
  CHECK(secs2[1].first == "// ----- IR after cse -----");
  CHECK(secs2[1].second == "(unchanged)\n");
}

// --print-before=PASS prints printStage(PASS's own stage), which before the pass has run is the
// IR the pass is about to *produce*: empty before lower-to-loops (the loop program does not exist
// yet; the graph it lowers is not shown), and before sema "(no program: analysis failed)", though
// nothing failed. The IR a pass gets is what the pass before it left.
TEST_CASE("bug: --print-before prints the IR the pass gets, for passes that change stage", "[passes][manager][bug]") {
  std::vector<const PassInfo*> pipeline = buildPipeline(Stage::Loops);
  std::vector<std::string> texts = textsAfterEachPass(gelu(), pipeline);
  size_t lower = 0;
  while (lower < pipeline.size() && std::string(pipeline[lower]->name) != "lower-to-loops") ++lower;
  REQUIRE(lower < pipeline.size());
  REQUIRE(std::string(pipeline[1]->name) == "sema");
  REQUIRE(lower < pipeline.size());

  std::ostringstream printed;
  Instrumentation inst;
  inst.printBefore = {"sema", "lower-to-loops"};
  inst.out = &printed;
  std::unique_ptr<Session> s = startSession(gelu());
  REQUIRE(runPipeline(s->state(), pipeline, inst));
  auto secs = sections(printed.str());
  REQUIRE(secs.size() == 2);
  CHECK(secs[0].first == "// ----- IR before sema -----");
  CHECK(secs[0].second.find("analysis failed") == std::string::npos);
  CHECK(secs[0].second == texts[0]);  // the AST parse left
  CHECK(secs[1].first == "// ----- IR before lower-to-loops -----");
  CHECK(secs[1].second == texts[lower - 1]);  // the graph the last dce left
}

TEST_CASE("pass manager: --dump-dir writes one numbered file per pass run", "[passes][manager]") {
  std::vector<const PassInfo*> pipeline = buildPipeline(Stage::Loops);
  std::vector<std::string> texts = textsAfterEachPass(gelu(), pipeline);
  TempDir dir;
  Instrumentation inst;
  inst.dumpDir = (dir.path / "nested" / "dumps").string();  // created when missing
  std::unique_ptr<Session> s = startSession(gelu());
  REQUIRE(runPipeline(s->state(), pipeline, inst));

  std::vector<std::string> expectedNames;
  for (size_t i = 0; i < pipeline.size(); ++i)
    expectedNames.push_back(fmt::format("{:02d}-{}.{}", i + 1, pipeline[i]->name, extensionOf(pipeline[i]->stage)));
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(inst.dumpDir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == expectedNames);
  CHECK(expectedNames.front() == "01-parse.tex");
  CHECK(expectedNames[1] == "02-sema.sema.txt");
  // Every file holds the whole IR, even after a pass that changed nothing (no "(unchanged)").
  for (size_t i = 0; i < pipeline.size(); ++i) {
    INFO(expectedNames[i]);
    CHECK(readFile(fs::path(inst.dumpDir) / expectedNames[i]) == texts[i]);
  }
}

// texc runs parse on its own first (to check -D names); the numbering must still follow the
// pipeline (texc passes) rather than start again after parse.
TEST_CASE("pass manager: texc's --dump-dir numbers the files as texc passes lists the passes", "[passes][manager]") {
  TempDir dir;
  CompileRequest req;
  req.path = (sourceRoot() / "examples" / "gelu.tex").string();
  req.defines = {"N=4", "D=8"};
  req.until = Stage::Loops;
  req.instrumentation.dumpDir = dir.path.string();
  std::unique_ptr<Compilation> c = compileProgram(req);
  REQUIRE(c->ok);
  std::vector<const PassInfo*> pipeline = buildPipeline(Stage::Loops);
  std::vector<std::string> expectedNames;
  for (size_t i = 0; i < pipeline.size(); ++i)
    expectedNames.push_back(fmt::format("{:02d}-{}.{}", i + 1, pipeline[i]->name, extensionOf(pipeline[i]->stage)));
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(dir.path)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == expectedNames);
}

TEST_CASE("pass manager: checkPassNames rejects a name that is not a pass", "[passes][manager]") {
  Instrumentation ok;
  ok.printAfter = {"simplify", "parse"};
  ok.printBefore = {"lower-to-loops"};
  CHECK(checkPassNames(ok) == "");
  CHECK(checkPassNames(Instrumentation{}) == "");

  std::string known;
  for (const PassInfo& p : allPasses()) known += (known.empty() ? "" : ", ") + std::string(p.name);
  Instrumentation after;
  after.printAfter = {"simplify", "simplfy"};
  CHECK(checkPassNames(after) == "unknown pass 'simplfy' (passes: " + known + ")");
  Instrumentation before;
  before.printBefore = {"CSE"};  // names are case-sensitive
  CHECK(checkPassNames(before) == "unknown pass 'CSE' (passes: " + known + ")");
  CHECK(known.find("split-ops, constant-fold, simplify, cse, dce") != std::string::npos);

  // texc refuses it before reading the file: a usage error, exit 2.
  CompileRequest req;
  req.path = (sourceRoot() / "examples" / "gelu.tex").string();
  req.instrumentation = after;
  try {
    compileProgram(req);
    FAIL("compileProgram accepted an unknown pass name");
  } catch (const CommandError& e) {
    CHECK(e.exitCode == kExitUsage);
    CHECK(e.message == "unknown pass 'simplfy' (passes: " + known + ")");
  }
}

bool breakGraph(CompileState& s) {
  s.graph->computations.back().numLhsVars += 1;  // the domain's rank no longer matches the tensor
  return true;
}

TEST_CASE("pass manager: the verifier after each pass names the pass that broke the IR", "[passes][manager]") {
  PassInfo broken{"break-graph", Stage::Graph, "makes the graph invalid", &breakGraph};
  std::vector<const PassInfo*> pipeline = buildPipeline(Stage::Graph);
  pipeline.push_back(&broken);

  Instrumentation inst;
  inst.verifyEachPass = true;
  std::unique_ptr<Session> s = startSession(gelu());
  try {
    runPipeline(s->state(), pipeline, inst);
    FAIL("the invalid graph was not detected");
  } catch (const std::logic_error& e) {
    std::string msg = e.what();
    CHECK(msg.rfind("internal error: the IR is invalid after pass 'break-graph':\n  node %out: ", 0) == 0);
    CHECK(msg.find("domain rank differs from the tensor's rank") != std::string::npos);
  }

  inst.verifyEachPass = false;
  std::unique_ptr<Session> s2 = startSession(gelu());
  CHECK(runPipeline(s2->state(), pipeline, inst));
  CHECK_FALSE(verifyGraph(*s2->state().graph).empty());
}

TEST_CASE("pass manager: the pipeline stops after a pass that reported errors", "[passes][manager]") {
  std::vector<PassTiming> timings;
  std::unique_ptr<Session> syntax = startSession(inlineProgram("syntax", "input x : f32[4]\noutput y = x +\n"));
  CHECK_FALSE(runPipeline(syntax->state(), buildPipeline(Stage::Graph), Instrumentation{}, &timings));
  REQUIRE(timings.size() == 1);
  CHECK(timings[0].name == "parse");
  CHECK(syntax->diags().hasErrors());

  timings.clear();
  std::unique_ptr<Session> semantic = startSession(inlineProgram("semantic", "input x : f32[4]\noutput y = x + z\n"));
  CHECK_FALSE(runPipeline(semantic->state(), buildPipeline(Stage::Graph), Instrumentation{}, &timings));
  REQUIRE(timings.size() == 2);
  CHECK(timings[1].name == "sema");
  CHECK_FALSE(semantic->state().loops);
}

TEST_CASE("pass manager: --time-passes prints one line per pass run and the total", "[passes][manager]") {
  std::vector<PassTiming> timings = {{"parse", 1.5, true}, {"cse", 0.25, false}};
  std::ostringstream out;
  printTimings(out, timings);
  CHECK(out.str() ==
        "===== pass timings =====\n"
        "  parse                  1.500 ms\n"
        "  cse                    0.250 ms  (unchanged)\n"
        "  total                  1.750 ms\n");
}

TEST_CASE("pass manager: the pipeline order and the stages it stops at", "[passes][manager]") {
  auto names = [](Stage until) {
    std::string s;
    for (const PassInfo* p : buildPipeline(until)) s += (s.empty() ? "" : " ") + std::string(p->name);
    return s;
  };
  CHECK(names(Stage::Ast) == "parse");
  CHECK(names(Stage::Sema) == "parse sema");
  // The cleanups in this order, then fusion, then dce again for what fusion left unread.
  std::string graph = names(Stage::Graph);
  CHECK(graph.rfind("parse sema split-ops constant-fold simplify cse dce ", 0) == 0);
  CHECK(graph.size() > 5);
  CHECK(graph.substr(graph.size() - 4) == " dce");
  CHECK(names(Stage::Loops) == graph + " lower-to-loops tile fuse-row-passes sink-unit-loops schedule-loops split-borders fuse-into-tiles");
  CHECK(names(Stage::Plan) == graph + " lower-to-loops tile fuse-row-passes sink-unit-loops schedule-loops split-borders fuse-into-tiles plan-memory");
  for (const PassInfo* p : buildPipeline(Stage::LLVM)) CHECK(findPass(p->name) == p);
  CHECK(findPass("no-such-pass") == nullptr);
}

}  // namespace
}  // namespace texc::passtest
