// The pass manager: --print-after/--print-after-all (with "(unchanged)"), --print-before,
// numbered --dump-dir files, pass-name checking, the verifier after each pass, timings, and
// stopping after errors.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
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
  std::vector<const PassInfo*> pipeline = buildPipeline(PipelineOptions{}, Stage::Loops);
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
  std::vector<const PassInfo*> pipeline = buildPipeline(PipelineOptions{}, Stage::Graph);
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
  std::vector<const PassInfo*> pipeline = buildPipeline(PipelineOptions{}, Stage::Graph);
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
  for (const PassInfo* p : buildPipeline(PipelineOptions{}, Stage::Sema)) analysed->runPass(*p);
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
  std::vector<const PassInfo*> pipeline = buildPipeline(PipelineOptions{}, Stage::Loops);
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
  std::vector<const PassInfo*> pipeline = buildPipeline(PipelineOptions{}, Stage::Loops);
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
  std::vector<const PassInfo*> pipeline = buildPipeline(PipelineOptions{}, Stage::Loops);
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
  std::vector<const PassInfo*> pipeline = buildPipeline(PipelineOptions{}, Stage::Graph);
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
  CHECK_FALSE(runPipeline(syntax->state(), buildPipeline(PipelineOptions{}, Stage::Graph), Instrumentation{}, &timings));
  REQUIRE(timings.size() == 1);
  CHECK(timings[0].name == "parse");
  CHECK(syntax->diags().hasErrors());

  timings.clear();
  std::unique_ptr<Session> semantic = startSession(inlineProgram("semantic", "input x : f32[4]\noutput y = x + z\n"));
  CHECK_FALSE(runPipeline(semantic->state(), buildPipeline(PipelineOptions{}, Stage::Graph), Instrumentation{}, &timings));
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
  // With a schedule file's `loops` line, so that every cpu pass is in the pipeline.
  PipelineOptions scheduled;
  REQUIRE(loops::parseScheduleText("loops Y: split j 4\n", scheduled.schedule) == "");
  auto names = [&](Stage until) {
    std::string s;
    for (const PassInfo* p : buildPipeline(scheduled, until)) s += (s.empty() ? "" : " ") + std::string(p->name);
    return s;
  };
  CHECK(names(Stage::Ast) == "parse");
  CHECK(names(Stage::Sema) == "parse sema");
  // The cleanups in this order, then fusion, then dce again for what fusion left unread.
  std::string graph = names(Stage::Graph);
  CHECK(graph.rfind("parse sema split-ops constant-fold simplify cse dce ", 0) == 0);
  CHECK(graph.size() > 5);
  CHECK(graph.substr(graph.size() - 4) == " dce");
  CHECK(names(Stage::Loops) == graph + " lower-to-loops tile tile-online-softmax fuse-row-passes fuse-sibling-reductions sink-unit-loops schedule-loops split-borders fuse-into-tiles stream-stores pipeline-row-stores interleave-loops split-chains pair-bf16-lanes sum-lanes nonpositive-exp");
  CHECK(names(Stage::Plan) == graph + " lower-to-loops tile tile-online-softmax fuse-row-passes fuse-sibling-reductions sink-unit-loops schedule-loops split-borders fuse-into-tiles stream-stores pipeline-row-stores interleave-loops split-chains pair-bf16-lanes sum-lanes nonpositive-exp plan-memory");
  for (const PassInfo* p : buildPipeline(PipelineOptions{}, Stage::LLVM)) CHECK(findPass(p->name) == p);
  CHECK(findPass("no-such-pass") == nullptr);
}


// ---- buildPipeline: the one place that decides which passes run -----------------------------

std::vector<std::string> passNames(const PipelineOptions& options, Stage until = Stage::LLVM) {
  std::vector<std::string> out;
  for (const PassInfo* p : buildPipeline(options, until)) out.push_back(p->name);
  return out;
}

bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : " ") + n;
  return s;
}

TEST_CASE("pipeline: the cpu target with the default switches", "[passes][manager][pipeline]") {
  PipelineOptions cpu;
  CHECK(joined(passNames(cpu)) ==
        "parse sema split-ops constant-fold simplify cse dce online-softmax dce reciprocal-of-sums fuse dce lower-to-loops tile tile-online-softmax fuse-row-passes fuse-sibling-reductions sink-unit-loops "
        "split-borders fuse-into-tiles stream-stores pipeline-row-stores interleave-loops split-chains pair-bf16-lanes sum-lanes nonpositive-exp plan-memory codegen-llvm optimize-llvm");
  // No schedule file: schedule-loops has nothing to apply and is not in the pipeline.
  CHECK_FALSE(has(passNames(cpu), "schedule-loops"));
  CHECK_FALSE(has(passNames(cpu), "codegen-cuda"));
  // Each pass with its condition beside it; the table and the list agree.
  std::vector<PipelineEntry> table = pipelineTable(cpu);
  REQUIRE(table.size() == buildPipeline(cpu).size());
  for (size_t i = 0; i < table.size(); ++i) {
    INFO(table[i].pass->name);
    CHECK(table[i].pass == buildPipeline(cpu)[i]);
    CHECK_FALSE(table[i].condition.empty());
    CHECK(whyNotInPipeline(table[i].pass->name, cpu) == "");
  }
  CHECK(table[0].condition == "always");
  CHECK(whyNotInPipeline("schedule-loops", cpu).rfind("no --schedule FILE", 0) == 0);
}

TEST_CASE("pipeline: the cuda target leaves out the cpu passes and ends in codegen-cuda", "[passes][manager][pipeline]") {
  PipelineOptions cuda;
  cuda.target = Target::Cuda;
  CHECK(joined(passNames(cuda)) ==
        "parse sema split-ops constant-fold simplify cse dce online-softmax dce reciprocal-of-sums fuse dce lower-to-loops implicit-gemm fuse-pool-into-gemm split-k split-keys fuse-row-passes plan-memory map-gpu sync-gpu-threads codegen-cuda");
  for (const char* name : {"tile", "tile-online-softmax", "sink-unit-loops", "split-borders", "fuse-into-tiles", "codegen-llvm", "optimize-llvm"}) {
    INFO(name);
    CHECK(whyNotInPipeline(name, cuda).rfind("--target cuda: ", 0) == 0);
  }
  CHECK(whyNotInPipeline("codegen-cuda", PipelineOptions{}).rfind("--target cpu: ", 0) == 0);
  // implicit-gemm is the cuda target's own, and goes with tiling.
  CHECK(whyNotInPipeline("implicit-gemm", PipelineOptions{}).rfind("--target cpu: ", 0) == 0);
  PipelineOptions untiled = cuda;
  untiled.tile = false;
  CHECK(whyNotInPipeline("implicit-gemm", untiled).rfind("--no-tile: ", 0) == 0);
  PipelineOptions direct = cuda;
  direct.schedule.conv = loops::ConvMode::Direct;
  CHECK(whyNotInPipeline("implicit-gemm", direct).rfind("`conv = direct`", 0) == 0);
  // fuse-pool-into-gemm too, and with --fuse=all only; on the cpu fuse-into-tiles does its work.
  CHECK(whyNotInPipeline("fuse-pool-into-gemm", PipelineOptions{}).rfind("--target cpu: ", 0) == 0);
  CHECK(whyNotInPipeline("fuse-pool-into-gemm", untiled).rfind("--no-tile: ", 0) == 0);
  PipelineOptions elementwise = cuda;
  elementwise.fuse = FuseMode::Elementwise;
  CHECK(whyNotInPipeline("fuse-pool-into-gemm", elementwise).rfind("--fuse=elementwise: ", 0) == 0);
  CHECK(whyNotInPipeline("fuse-pool-into-gemm", direct) == "");
  // split-k: cuda target, tiling on.
  CHECK(whyNotInPipeline("split-k", PipelineOptions{}).rfind("--target cpu: ", 0) == 0);
  CHECK(whyNotInPipeline("split-k", untiled).rfind("--no-tile: ", 0) == 0);
  CHECK(whyNotInPipeline("split-k", elementwise) == "");
  CHECK(whyNotInPipeline("split-keys", PipelineOptions{}).rfind("--target cpu: ", 0) == 0);
  CHECK(whyNotInPipeline("split-keys", untiled) == "");
  // Up to the loop IR, no backend pass.
  CHECK(passNames(cuda, Stage::Loops).back() == "fuse-row-passes");
}

TEST_CASE("pipeline: --no-tile, --fuse, --no-plan and the schedule file choose the passes", "[passes][manager][pipeline]") {
  PipelineOptions defaults;
  std::vector<std::string> all = passNames(defaults);
  auto without = [&](std::initializer_list<const char*> names) {
    std::vector<std::string> out;
    for (const std::string& n : all) {
      bool drop = false;
      for (const char* m : names) drop |= n == m;
      if (!drop) out.push_back(n);
    }
    return joined(out);
  };

  PipelineOptions noTile;
  noTile.tile = false;
  CHECK(joined(passNames(noTile)) == without({"tile", "tile-online-softmax"}));
  CHECK(whyNotInPipeline("tile", noTile).rfind("--no-tile: ", 0) == 0);
  CHECK(whyNotInPipeline("tile-online-softmax", noTile).rfind("--no-tile: ", 0) == 0);

  PipelineOptions tileOff;
  REQUIRE(loops::parseScheduleText("tile = off\n", tileOff.schedule) == "");
  CHECK(joined(passNames(tileOff)) == without({"tile", "tile-online-softmax"}));

  // A schedule file with `loops` lines: schedule-loops after sink-unit-loops, before split-borders.
  PipelineOptions scheduled;
  REQUIRE(loops::parseScheduleText("mr = 4\nloops Y: split j 4\n", scheduled.schedule) == "");
  std::string withSchedule = joined(passNames(scheduled));
  CHECK(withSchedule.find("tile tile-online-softmax fuse-row-passes fuse-sibling-reductions sink-unit-loops schedule-loops split-borders fuse-into-tiles") != std::string::npos);
  CHECK(whyNotInPipeline("schedule-loops", scheduled) == "");
  // A schedule file without them: tile settings only.
  PipelineOptions tileSettings;
  REQUIRE(loops::parseScheduleText("mr = 4\n", tileSettings.schedule) == "");
  CHECK(joined(passNames(tileSettings)) == joined(all));
  // On the cuda target the loop lines are a usage error, which schedule-loops reports: it stays.
  scheduled.target = Target::Cuda;
  CHECK(has(passNames(scheduled), "schedule-loops"));

  PipelineOptions none;
  none.fuse = FuseMode::None;
  // No fuse, and no dce after it (nothing was fused, nothing left unread); no loop fusion either.
  // The dce after online-softmax stays.
  std::vector<std::string> unfused = passNames(none);
  CHECK(joined(unfused) ==
        "parse sema split-ops constant-fold simplify cse dce online-softmax dce reciprocal-of-sums lower-to-loops tile tile-online-softmax sink-unit-loops split-borders stream-stores pipeline-row-stores interleave-loops split-chains pair-bf16-lanes sum-lanes nonpositive-exp plan-memory "
        "codegen-llvm optimize-llvm");
  CHECK(std::count(unfused.begin(), unfused.end(), "dce") == 2);
  CHECK(whyNotInPipeline("fuse", none).rfind("--fuse=none: ", 0) == 0);
  CHECK(whyNotInPipeline("dce", none) == "");  // its first run stays

  PipelineOptions elementwise;
  elementwise.fuse = FuseMode::Elementwise;
  CHECK(joined(passNames(elementwise)) == without({"fuse-row-passes", "fuse-sibling-reductions", "fuse-into-tiles"}));

  PipelineOptions noPlan;
  noPlan.planMemory = false;
  CHECK(joined(passNames(noPlan)) == without({"plan-memory"}));
  CHECK(whyNotInPipeline("plan-memory", noPlan).rfind("--no-plan: ", 0) == 0);

  // -O0..-O3 change what optimize-llvm does, not whether it runs.
  PipelineOptions o0;
  o0.optLevel = 0;
  CHECK(joined(passNames(o0)) == joined(all));
}

TEST_CASE("pipeline: the pass manager runs exactly the passes buildPipeline returns", "[passes][manager][pipeline]") {
  for (bool cuda : {false, true}) {
    CompileRequest req;
    req.path = (sourceRoot() / "examples" / "conv_pool.tex").string();
    req.defines = {"C=4", "K=4", "H=8", "W=8"};
    req.until = cuda ? Stage::CUDA : Stage::LLVM;
    req.options.cpu = "haswell";
    req.options.tile = false;
    req.options.fuse = FuseMode::Elementwise;
    if (cuda) req.options.target = Target::Cuda;
    std::unique_ptr<Compilation> c = compileProgram(req);
    REQUIRE(c->ok);
    std::vector<std::string> ran;
    for (const PassTiming& t : c->timings) ran.push_back(t.name);
    INFO(joined(ran));
    CHECK(ran == passNames(req.options, req.until));
    CHECK_FALSE(has(ran, "tile"));
    CHECK_FALSE(has(ran, "fuse-into-tiles"));
  }
}

TEST_CASE("pipeline: --disable-pass leaves out optional passes and refuses the ones it needs", "[passes][manager][pipeline]") {
  PipelineOptions defaults;
  PipelineOptions disabled;
  disabled.disabledPasses = {"dce", "tile", "plan-memory"};
  std::vector<std::string> expected;
  for (const std::string& n : passNames(defaults))
    if (n != "dce" && n != "tile" && n != "plan-memory") expected.push_back(n);
  CHECK(joined(passNames(disabled)) == joined(expected));  // both runs of dce go
  CHECK(whyNotInPipeline("tile", disabled) == "--disable-pass: left out on the command line");
  CHECK(whyNotInPipeline("fuse", disabled) == "");

  CHECK(checkDisabledPasses({"cse", "optimize-llvm", "split-borders"}) == "");
  CHECK(checkDisabledPasses({"no-such-pass"}) == "--disable-pass=no-such-pass: no such pass (`texc passes` lists them)");
  for (const char* needed : {"parse", "sema", "split-ops", "lower-to-loops", "map-gpu", "sync-gpu-threads", "codegen-llvm", "codegen-cuda"}) {
    INFO(needed);
    CHECK(checkDisabledPasses({needed}).find("the pipeline cannot run without it: ") != std::string::npos);
  }
  // Printing after a disabled pass is the usual error; so is printing past where the compile stops.
  CHECK(checkPassesInPipeline({"tile"}, {}, disabled).rfind("pass 'tile' is not in this pipeline (--disable-pass)", 0) == 0);
  CHECK(checkPassesInPipeline({}, {"plan-memory"}, defaults, Stage::Loops).rfind("pass 'plan-memory' does not run: ", 0) == 0);
  CHECK(checkPassesInPipeline({}, {"plan-memory"}, defaults, Stage::Plan) == "");
}

TEST_CASE("pipeline: printing after a pass that is not in this pipeline is a usage error", "[passes][manager][pipeline]") {
  PipelineOptions cuda;
  cuda.target = Target::Cuda;
  std::string err = checkPassesInPipeline({"tile"}, {}, cuda);
  CHECK(err.rfind("pass 'tile' is not in this pipeline (--target cuda): ", 0) == 0);
  CHECK(err.find("texc passes --target cuda") != std::string::npos);
  CHECK(checkPassesInPipeline({}, {"sink-unit-loops"}, cuda).find("--print-before=sink-unit-loops") != std::string::npos);
  CHECK(checkPassesInPipeline({"fuse-row-passes", "codegen-cuda"}, {"sema"}, cuda) == "");
  PipelineOptions noTile;
  noTile.tile = false;
  CHECK(checkPassesInPipeline({"tile"}, {}, noTile).rfind("pass 'tile' is not in this pipeline (--no-tile): ", 0) == 0);
  // An unknown name is checkPassNames's to report.
  CHECK(checkPassesInPipeline({"no-such-pass"}, {}, cuda) == "");

  // Through compileProgram: exit 2 before any pass runs, so nothing is printed.
  CompileRequest req;
  req.path = (sourceRoot() / "examples" / "gelu.tex").string();
  req.defines = {"N=4", "D=8"};
  req.options.target = Target::Cuda;
  req.until = Stage::CUDA;
  req.instrumentation.printAfter = {"tile"};
  std::ostringstream out;
  req.instrumentation.out = &out;
  try {
    compileProgram(req);
    FAIL("compileProgram accepted --print-after=tile on the cuda target");
  } catch (const CommandError& e) {
    CHECK(e.exitCode == kExitUsage);
    CHECK(e.message.rfind("pass 'tile' is not in this pipeline (--target cuda)", 0) == 0);
  }
  CHECK(out.str().empty());
}

}  // namespace
}  // namespace texc::passtest
