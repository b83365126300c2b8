// Before/after golden tests of each graph pass.
//
// tests/golden/passes/PASS/CASE.tex is a program; the test compiles it through the pipeline
// (buildPipeline(options, Stage::Graph)) up to the first run of PASS, prints the graph, runs PASS, prints
// the graph again. CASE.expected holds both, in one file:
//
//   # PASS on CASE.tex: changed
//   # ----- before PASS -----
//   <the graph after the passes before PASS>
//   # ----- after PASS -----
//   <the graph after PASS>
//
// A case whose name starts with `unchanged` must leave the graph alone: the pass returns false
// and the graph after it is identical (every field, not only what the printer shows); its
// .expected says `unchanged` and holds the graph once. Every other case must change
// the printed graph, and the pass must say so. `# golden:` lines give -D overrides and
// --fuse=none|elementwise|all. TEXC_ACCEPT=1 rewrites the .expected files.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <map>
#include <set>

#include "PassTestSupport.h"
#include "compiler/passes/Pipeline.h"

namespace texc::passtest {
namespace {

const fs::path kPassesDir = sourceRoot() / "tests" / "golden" / "passes";

// How many cases of each kind every graph pass of the pipeline must have.
constexpr int kMinChanged = 2;
constexpr int kMinUnchanged = 1;

bool isUnchangedCase(const fs::path& tex) { return tex.stem().string().rfind("unchanged", 0) == 0; }

struct PassCase {
  std::string pass;
  fs::path source;
  fs::path expected;
};

std::vector<PassCase> passCases() {
  std::vector<PassCase> cases;
  if (!fs::is_directory(kPassesDir)) return cases;
  std::vector<fs::path> dirs;
  for (const fs::directory_entry& e : fs::directory_iterator(kPassesDir))
    if (e.is_directory()) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  for (const fs::path& dir : dirs)
    for (const fs::path& tex : texFilesIn(dir))
      cases.push_back({dir.filename().string(), tex, dir / (tex.stem().string() + ".expected")});
  return cases;
}

struct PassRun {
  std::string failure;
  bool changed = false;
  std::string before, after;          // printStage(Graph): the graph, and fuse's decisions
  std::string beforeGraph, afterGraph;  // printGraph
  std::string beforeData, afterData;  // graphStructure: every detail of the graph
  std::vector<std::string> problems;  // verifyGraph after the pass
};

PassRun runCase(const PassCase& c) {
  PassRun r;
  const PassInfo* pass = findPass(c.pass);
  if (pass == nullptr || pass->stage != Stage::Graph) {
    r.failure = fmt::format("'{}' is not a graph pass (the folder name must be one)", c.pass);
    return r;
  }
  std::vector<const PassInfo*> full = buildPipeline(PipelineOptions{}, Stage::Graph);
  if (std::find(full.begin(), full.end(), pass) == full.end()) {
    r.failure = fmt::format("pass {} is not in the pipeline", c.pass);
    return r;
  }
  std::unique_ptr<Session> s = startSession(fileProgram(c.source));
  // The case's own switches choose its pipeline: under --fuse=none, fuse is not in it, and the
  // case shows the graph that reaches where it would run, unchanged.
  std::vector<const PassInfo*> pipeline = buildPipeline(s->state().options, Stage::Graph);
  const bool runs = std::find(pipeline.begin(), pipeline.end(), pass) != pipeline.end();
  for (const PassInfo* p : runs ? pipeline : full) {
    if (p == pass) break;
    s->runPass(*p);
  }
  if (!s->failure().empty() || !s->state().graph) {
    r.failure = s->failure().empty() ? std::string("no graph") : s->failure();
    return r;
  }
  r.before = printStage(s->state(), Stage::Graph);
  r.beforeGraph = printGraph(*s->state().graph);
  r.beforeData = graphStructure(*s->state().graph);
  r.changed = runs && s->runPass(*pass);
  if (!s->failure().empty()) {
    r.failure = s->failure();
    return r;
  }
  r.after = printStage(s->state(), Stage::Graph);
  r.afterGraph = printGraph(*s->state().graph);
  r.afterData = graphStructure(*s->state().graph);
  r.problems = verifyGraph(*s->state().graph);
  return r;
}

std::string goldenText(const PassCase& c, const PassRun& r) {
  std::string file = c.source.filename().string();
  if (!r.changed && r.beforeData == r.afterData) {
    // The graph once; then what the pass printed besides it (fuse's decisions), if anything.
    std::string extra = r.after.rfind(r.afterGraph, 0) == 0 ? r.after.substr(r.afterGraph.size()) : r.after;
    return fmt::format("# {} on {}: unchanged\n# ----- before {} -----\n{}# ----- after {}: the same graph -----\n{}", c.pass,
                       file, c.pass, r.before, c.pass, extra);
  }
  return fmt::format("# {} on {}: {}\n# ----- before {} -----\n{}# ----- after {} -----\n{}", c.pass, file,
                     r.changed ? "changed" : "returned false", c.pass, r.before, c.pass, r.after);
}

TEST_CASE("pass goldens: each case's graph before and after its pass", "[golden][passes]") {
  std::vector<PassCase> cases = passCases();
  REQUIRE(!cases.empty());
  for (const PassCase& c : cases) {
    DYNAMIC_SECTION(repoPath(c.source)) {
      PassRun r = runCase(c);
      if (!r.failure.empty()) FAIL(repoPath(c.source) << ": " << r.failure);
      for (const std::string& p : r.problems) FAIL_CHECK("the graph is invalid after " << c.pass << ": " << p);
      if (isUnchangedCase(c.source)) {
        INFO("a case named unchanged* must leave the graph alone");
        CHECK_FALSE(r.changed);
        CHECK(r.beforeGraph == r.afterGraph);
        CHECK(r.beforeData == r.afterData);
      } else {
        INFO("the pass must change this case's printed graph and say so (or name the case unchanged*)");
        CHECK(r.changed);
        CHECK(r.beforeGraph != r.afterGraph);
      }
      checkGolden(c.expected, goldenText(c, r));
    }
  }
}

TEST_CASE("pass goldens: every graph pass has its cases, and no file is stale", "[golden][passes]") {
  std::map<std::string, std::pair<int, int>> counts;  // pass -> (changed cases, unchanged cases)
  std::set<fs::path> owned;
  for (const PassCase& c : passCases()) {
    auto& [changed, unchanged] = counts[c.pass];
    ++(isUnchangedCase(c.source) ? unchanged : changed);
    owned.insert(c.expected);
  }
  std::vector<const PassInfo*> pipeline = graphPipeline();
  CHECK(pipeline.size() >= 6);
  for (const PassInfo* p : pipeline) {
    INFO("tests/golden/passes/" << p->name << " needs " << kMinChanged << " cases the pass changes and " << kMinUnchanged
                                << " named unchanged*");
    CHECK(counts[p->name].first >= kMinChanged);
    CHECK(counts[p->name].second >= kMinUnchanged);
  }
  for (const auto& [pass, n] : counts) {
    if (n.first + n.second == 0) continue;  // made by counts[] above
    const PassInfo* p = findPass(pass);
    INFO("tests/golden/passes/" << pass << " must be named after a graph pass");
    CHECK((p != nullptr && p->stage == Stage::Graph));
  }
  if (!fs::is_directory(kPassesDir)) return;
  std::vector<fs::path> stale;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(kPassesDir))
    if (e.is_regular_file() && e.path().extension() == ".expected" && !owned.count(e.path())) stale.push_back(e.path());
  for (const fs::path& p : stale) {
    if (acceptMode()) {
      fs::remove(p);
      WARN("removed stale golden " << repoPath(p));
    } else {
      FAIL_CHECK(repoPath(p) << " belongs to no case (its .tex was removed or renamed); run scripts/accept-goldens.sh");
    }
  }
}

}  // namespace
}  // namespace texc::passtest
