// texc explore (docs/explore.md): the page's sections, one section per pass with its result, the
// line diff (unit and on gelu's fuse pass), no network reference, the graph layouts, --dump-dir,
// --measure, and the error cases (nothing written when the command fails). The page in a real
// browser: tests/explore/browser_test.py.
#include <regex>

#include "compiler/driver/Html.h"
#include "compiler/driver/LineDiff.h"
#include "tests/unit/driver/DriverTestUtil.h"

namespace texc::drivertest {
namespace {

std::string opsOf(const LineDiff& d) {
  std::string s;
  for (const DiffLine& l : d.lines) s += l.op == DiffOp::Same ? '=' : l.op == DiffOp::Removed ? '-' : '+';
  return s;
}

LineDiff diffOf(std::string_view a, std::string_view b, int maxEdits = 3000) {
  return diffLines(splitLines(a), splitLines(b), maxEdits);
}

TEST_CASE("explore: the line diff", "[driver][explore]") {
  CHECK(splitLines("a\nb\n").size() == 2);
  CHECK(splitLines("a\nb").size() == 2);
  CHECK(splitLines("").empty());

  LineDiff same = diffOf("a\nb\nc\n", "a\nb\nc\n");
  CHECK(opsOf(same) == "===");
  CHECK(same.removed == 0);
  CHECK(diffHunks(same).empty());

  LineDiff changed = diffOf("a\nb\nc\n", "a\nx\nc\n");
  CHECK(opsOf(changed) == "=-+=");
  CHECK(changed.lines[1].oldLine == 2);
  CHECK(changed.lines[2].newLine == 2);

  // A shortest script: one line inserted at the front, one removed at the end.
  LineDiff shifted = diffOf("a\nb\nc\nd\n", "z\na\nb\nc\n");
  CHECK(shifted.removed == 1);
  CHECK(shifted.added == 1);
  CHECK(opsOf(shifted) == "+===-");

  // Every line of both texts appears once, in order.
  LineDiff mixed = diffOf("x\na\nb\ny\nc\nz\n", "a\nq\nb\nc\nr\n");
  int lastOld = 0, lastNew = 0, olds = 0, news = 0;
  for (const DiffLine& l : mixed.lines) {
    if (l.oldLine) CHECK(l.oldLine == ++lastOld);
    if (l.newLine) CHECK(l.newLine == ++lastNew);
    olds += l.oldLine != 0;
    news += l.newLine != 0;
  }
  CHECK(olds == 6);
  CHECK(news == 5);
  CHECK(mixed.removed + mixed.added == 5);  // x, y, z out; q, r in
  CHECK(mixed.minimal);

  LineDiff fromEmpty = diffOf("", "a\nb\n");
  CHECK(opsOf(fromEmpty) == "++");

  // Beyond the edit limit: reported as replaced, still every line once.
  LineDiff replaced = diffOf("a\nb\nc\nd\n", "w\nx\ny\nz\n", 2);
  CHECK_FALSE(replaced.minimal);
  CHECK(opsOf(replaced) == "----++++");

  // Hunks: three lines of context, close changes merged.
  std::string before, after;
  for (int i = 0; i < 40; ++i) {
    before += "line " + std::to_string(i) + "\n";
    after += (i == 5 || i == 8 || i == 30 ? "changed " : "line ") + std::to_string(i) + "\n";
  }
  LineDiff far = diffOf(before, after);
  std::vector<DiffHunk> hunks = diffHunks(far, 3);
  REQUIRE(hunks.size() == 2);
  CHECK(hunks[0].begin == 2);
  CHECK(far.lines[hunks[1].begin].oldLine == 28);
}

TEST_CASE("explore: HTML escaping", "[driver][explore]") {
  CHECK(html::escape("a < b && c > \"d\" 'e'") == "a &lt; b &amp;&amp; c &gt; &quot;d&quot; &#39;e&#39;");
  CHECK(html::escape("tab\tnewline\n") == "tab\tnewline\n");
  CHECK(html::escape(std::string("\x01")) == "\xEF\xBF\xBD");
  CHECK(html::num(1.0) == "1");
  CHECK(html::num(2.345) == "2.35");
  CHECK(html::num(-0.001) == "0");
}

// The structure every page must have; `passes`: the pipeline as `texc passes` lists it.
void checkPage(const std::string& page, const std::vector<std::string>& passes) {
  CHECK(page.rfind("<!DOCTYPE html>\n<html lang=\"en\">", 0) == 0);
  CHECK(page.size() > 1000);
  CHECK(page.substr(page.size() - 8) == "</html>\n");
  for (const char* id : {"source", "pipeline", "graph", "memory", "roofline", "code"})
    CHECK(contains(page, std::string("<section id=\"") + id + "\">"));
  // Balanced elements the page builds itself.
  for (const char* tag : {"section", "details", "svg", "pre", "table"})
    CHECK(countOf(page, std::string("<") + tag + " ") + countOf(page, std::string("<") + tag + ">") ==
          countOf(page, std::string("</") + tag + ">"));
  // Every pass of the pipeline: a row and a section, changed or unchanged.
  CHECK(countOf(page, "<details class=\"pass ") == passes.size());
  CHECK(countOf(page, "<tr class=\"prow ") == passes.size());
  for (const std::string& p : passes) CHECK(contains(page, "data-pass=\"" + p + "\""));
  CHECK(countOf(page, "<span class=\"badge changed\">changed</span>") + countOf(page, "<span class=\"badge unchanged\">unchanged</span>") ==
        2 * passes.size());
  // Nothing to fetch: no network URL anywhere, no src/href/url() off the page.
  CHECK_FALSE(contains(page, "http://"));
  CHECK_FALSE(contains(page, "https://"));
  CHECK_FALSE(contains(page, " src="));
  std::regex href("href=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(page.begin(), page.end(), href); it != std::sregex_iterator(); ++it)
    CHECK((*it)[1].str().rfind('#', 0) == 0);
  std::regex url("url\\(([^)]*)\\)");
  for (auto it = std::sregex_iterator(page.begin(), page.end(), url); it != std::sregex_iterator(); ++it)
    CHECK((*it)[1].str().rfind('#', 0) == 0);
  CHECK_FALSE(contains(page, "@import"));
}

TEST_CASE("explore: gelu's page has every section, every pass and fuse's removed nodes", "[driver][explore]") {
  Sandbox box;
  std::vector<std::string> passes = listedPasses(box);
  REQUIRE(passes.size() > 10);
  Result r = expectStatus(box, {"explore", (kExamples / "gelu.tex").string(), "-D", "N=64", "-D", "D=64", "-o", "gelu.html"}, 0);
  CHECK(contains(r.out, "wrote gelu.html"));
  CHECK(contains(r.out, "sections: source, pipeline"));
  std::string page = readBytes(box.work() / "gelu.html");
  checkPage(page, passes);
  // The fuse pass: its decisions, and the producers it inlined shown removed (with the dce after it).
  size_t fuse = page.find("data-pass=\"fuse\"");
  REQUIRE(fuse != std::string::npos);
  std::string section = page.substr(fuse, page.find("</details>\n<details class=\"pass", fuse) - fuse);
  CHECK(contains(section, "<span class=\"badge changed\">"));
  CHECK(contains(section, "%h -&gt; out: fused"));
  for (const char* node : {"%h[i0, i1] = add", "%y.1[i0, i1] = mul", "%y.7[i0, i1] = tanh"})
    CHECK(std::regex_search(section, std::regex(std::string("<span class=\"del\">[^<]*- ") + std::regex_replace(node, std::regex("[\\[\\].]"), "\\$&"))));
  CHECK(contains(section, "<span class=\"ins\">"));
  // The source is escaped, the graphs are drawn, the plan and the roofline have their charts.
  CHECK(contains(page, "output out = y + r"));
  CHECK(contains(page, "id=\"graph-before\""));
  CHECK(contains(page, "id=\"graph-after\""));
  CHECK(contains(page, "id=\"memory-chart\""));
  CHECK(contains(page, "id=\"roofline-chart\""));
  CHECK(contains(page, "h100"));
  CHECK(contains(page, "h200"));
  CHECK(contains(page, "define void @"));  // the LLVM IR of the kernel
  CHECK(contains(page, "kernel k0_out"));
  // Nothing left beside the page.
  CHECK(names(snapshot(box.work())) == "gelu.html");
}

TEST_CASE("explore: the built-in graph layout, and the default output name", "[driver][explore]") {
  Sandbox box;
  Result r = expectStatus(box, {"explore", (kExamples / "softmax.tex").string(), "-D", "R=8", "-D", "D=8", "--graph-layout", "builtin"}, 0);
  CHECK(contains(r.out, "wrote softmax.html"));
  std::string page = readBytes(box.work() / "softmax.html");
  checkPage(page, listedPasses(box));
  CHECK(contains(page, "built-in layered layout (--graph-layout builtin)"));
  CHECK(countOf(page, "<g class=\"node\">") >= 4);
  CHECK(contains(page, "marker-end=\"url(#graph-before-arrow)\""));
}

TEST_CASE("explore: --dump-dir writes DIR/index.html, the same page", "[driver][explore]") {
  Sandbox box;
  expectStatus(box, {"explore", (kExamples / "fusion_add_mul.tex").string(), "-D", "N=64", "--dump-dir", "dumps", "-o", "page.html"}, 0);
  std::string page = readBytes(box.work() / "page.html");
  CHECK(readBytes(box.work() / "dumps" / "index.html") == page);
  CHECK(fs::exists(box.work() / "dumps" / "01-parse.tex"));
}

TEST_CASE("explore: --measure adds compare's table and a bar chart", "[driver][explore]") {
  Sandbox box;
  expectStatus(box, {"explore", (kExamples / "fusion_add_mul.tex").string(), "-D", "N=256", "--measure", "--repeat", "1", "--threads", "1",
                     "-o", "m.html"},
               0);
  std::string page = readBytes(box.work() / "m.html");
  CHECK(contains(page, "<section id=\"measure\">"));
  CHECK(contains(page, "id=\"measure-bars\""));
  CHECK(contains(page, "id=\"measure-table\""));
  CHECK(contains(page, "unfused-unplanned"));
  CHECK(contains(page, "measured variant"));
  CHECK_FALSE(contains(page, "http://"));
}

TEST_CASE("explore: errors write nothing, or the error page when asked", "[driver][explore]") {
  Sandbox box;
  // A missing file: usage error.
  Result r = expectStatus(box, {"explore", "no-such.tex", "-o", "x.html"}, 2);
  CHECK(contains(r.err, "cannot read 'no-such.tex'"));
  // Bad options.
  fs::path gelu = kExamples / "gelu.tex";
  expectStatus(box, {"explore", gelu.string(), "--graph-layout", "neato"}, 2);
  expectStatus(box, {"explore", gelu.string(), "--repeat", "0", "-o", "x.html"}, 2);
  expectStatus(box, {"explore", gelu.string(), "--target", "cuda", "--asm", "-o", "x.html"}, 2);
  expectStatus(box, {"explore", gelu.string(), "-D", "NOPE=3", "-o", "x.html"}, 2);
  CHECK(names(snapshot(box.work())) == "(nothing)");

  // A program with errors: exit 1 and no page...
  fs::path bad = box.input("bad.tex", "input x : f32[4]\noutput y = x + z\n");
  r = expectStatus(box, {"explore", bad.string(), "-o", "bad.html"}, 1);
  CHECK(contains(r.err, "error:"));
  CHECK(names(snapshot(box.work())) == "(nothing)");
  // ...unless --error-page asks for the page: the source with its diagnostics, the passes that ran.
  expectStatus(box, {"explore", bad.string(), "-o", "bad.html", "--error-page"}, 1);
  std::string page = readBytes(box.work() / "bad.html");
  CHECK(contains(page, "<section id=\"source\">"));
  CHECK(contains(page, "class=\"line err\""));
  CHECK(contains(page, "bad.tex:2:"));
  CHECK(contains(page, "<span class=\"badge notrun\">not run</span>"));
  CHECK_FALSE(contains(page, "<section id=\"roofline\">"));
  CHECK_FALSE(contains(page, "http://"));

  // An -o that cannot be written: exit 3, no partial file anywhere.
  Sandbox box2;
  r = expectStatus(box2, {"explore", gelu.string(), "-D", "N=8", "-D", "D=8", "-o", "missing-dir/page.html"}, 3);
  CHECK(contains(r.err, "cannot write 'missing-dir/page.html'"));
  fs::create_directories(box2.work() / "adir");
  expectStatus(box2, {"explore", gelu.string(), "-D", "N=8", "-D", "D=8", "-o", "adir"}, 3);
  CHECK(names(snapshot(box2.work())) == "adir");
}

}  // namespace
}  // namespace texc::drivertest
