// texc explore: one self-contained HTML page about one program (docs/explore.md).
//
// The page has, in order: the source with its diagnostics; the pipeline, one row per pass
// (changed or unchanged, time) and one section per pass (the decisions it took, a line diff of
// its IR); the dataflow graph before and after fusion (Graphviz `dot` when on PATH, else a
// built-in layered layout; the page says which); the memory plan as a timeline; a roofline
// chart; with --measure, texc compare's table and a bar chart; the generated code per kernel.
// Everything is inline (CSS, SVG, one script); the page fetches nothing.
#include <fmt/format.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

#include "compiler/analysis/Cost.h"
#include "compiler/analysis/HostModel.h"
#include "compiler/backend/cuda/CodeGenCUDA.h"
#include "compiler/backend/llvm/LLVMTarget.h"
#include "compiler/driver/Commands.h"
#include "compiler/driver/ExploreFigures.h"
#include "compiler/driver/Html.h"
#include "compiler/driver/LineDiff.h"
#include "compiler/driver/OutputFile.h"
#include "compiler/driver/TextTable.h"
#include "compiler/passes/Pipeline.h"
#include "compiler/target/CpuTarget.h"
#include "runtime/Timer.h"

namespace texc {

namespace {

namespace fs = std::filesystem;
using html::escape;
using html::num;
using explore::Picture;
using explore::RoofPoint;
using explore::drawGraph;
using explore::findOnPath;
using explore::measureSvg;
using explore::memorySvg;
using explore::rooflineSvg;

// Texts longer than this are cut in the page (the diff of a pass is still computed whole).
constexpr size_t kMaxTextBytes = 400 * 1000;
// Diff lines shown per pass.
constexpr size_t kMaxDiffLines = 2000;

const char* stageName(Stage s) {
  switch (s) {
    case Stage::Ast: return "AST";
    case Stage::Sema: return "analysed program";
    case Stage::Graph: return "dataflow graph";
    case Stage::Loops: return "loop IR";
    case Stage::Plan: return "memory plan";
    case Stage::LLVM: return "LLVM IR";
    case Stage::CUDA: return "CUDA C";
  }
  return "IR";
}

// What one pass of the pipeline did, recorded while it ran.
struct PassRecord {
  const PassInfo* info = nullptr;
  bool ran = false;
  double ms = 0;
  bool changed = false;
  std::string inputForm;  // what `before` is ("source", "dataflow graph", ...)
  bool sameForm = false;  // before and after are the same form, so a line diff means something
  std::string before, after;
  std::vector<std::string> decisions;
};

std::string cut(const std::string& text) {
  if (text.size() <= kMaxTextBytes) return text;
  size_t end = text.rfind('\n', kMaxTextBytes);
  if (end == std::string::npos) end = kMaxTextBytes;
  return text.substr(0, end) + fmt::format("\n... ({} more bytes not shown)\n", text.size() - end);
}

std::string pre(const std::string& text, const std::string& cls = "code") {
  return fmt::format("<pre class=\"{}\">{}</pre>\n", cls, escape(cut(text)));
}

// ----- the pass view ---------------------------------------------------------------------

std::string renderDiff(const std::string& before, const std::string& after) {
  std::vector<std::string_view> a = splitLines(before), b = splitLines(after);
  LineDiff d = diffLines(a, b);
  std::vector<DiffHunk> hunks = diffHunks(d, 3);
  std::string out = fmt::format("<p class=\"dstat\"><span class=\"del\">&minus;{} removed</span> <span class=\"ins\">+{} added</span> "
                                "lines ({} before, {} after{})</p>\n",
                                d.removed, d.added, a.size(), b.size(),
                                d.minimal ? "" : "; too different for a minimal diff: shown as replaced");
  if (hunks.empty()) return out + "<p>The texts are identical.</p>\n";
  out += "<pre class=\"diff\">";
  size_t shown = 0;
  for (const DiffHunk& h : hunks) {
    int oldStart = 0, newStart = 0, oldCount = 0, newCount = 0;
    for (size_t i = h.begin; i < h.end; ++i) {
      const DiffLine& l = d.lines[i];
      if (l.oldLine && !oldStart) oldStart = l.oldLine;
      if (l.newLine && !newStart) newStart = l.newLine;
      oldCount += l.oldLine != 0;
      newCount += l.newLine != 0;
    }
    out += fmt::format("<span class=\"hunk\">@@ -{},{} +{},{} @@</span>", oldStart, oldCount, newStart, newCount);
    for (size_t i = h.begin; i < h.end; ++i) {
      if (shown++ >= kMaxDiffLines) break;
      const DiffLine& l = d.lines[i];
      std::string_view text = l.oldLine ? a[l.oldLine - 1] : b[l.newLine - 1];
      const char* cls = l.op == DiffOp::Removed ? "del" : l.op == DiffOp::Added ? "ins" : "ctx";
      char sign = l.op == DiffOp::Removed ? '-' : l.op == DiffOp::Added ? '+' : ' ';
      out += fmt::format("<span class=\"{}\">{:>5} {:>5} {} {}</span>", cls, l.oldLine ? std::to_string(l.oldLine) : "",
                         l.newLine ? std::to_string(l.newLine) : "", sign, escape(text));
    }
    if (shown >= kMaxDiffLines) {
      out += fmt::format("<span class=\"hunk\">... the rest of the diff is not shown ({} lines in all)</span>", d.lines.size());
      break;
    }
  }
  return out + "</pre>\n";
}

// `cleanup`: the dce right after this pass, which removes the nodes it left unread (fuse's
// inlined producers): its effect is shown here too, so that the nodes this pass made dead show
// up as removed lines.
std::string passSection(size_t index, const PassRecord& r, bool llvmShownInCode, const PassRecord* cleanup) {
  const PassInfo& p = *r.info;
  std::string status = !r.ran ? "not run" : r.changed ? "changed" : "unchanged";
  std::string out = fmt::format(
      "<details class=\"pass {}\" id=\"pass-{}\" data-pass=\"{}\"><summary><span class=\"pnum\">{}.</span> <b>{}</b> "
      "<span class=\"badge {}\">{}</span> <span class=\"ms\">{}</span> <span class=\"form\">{}</span></summary>\n",
      status == "not run" ? "notrun" : status, index + 1, escape(p.name), index + 1, escape(p.name), status == "not run" ? "notrun" : status,
      status, r.ran ? fmt::format("{:.3f} ms", r.ms) : "", stageName(p.stage));
  out += fmt::format("<div class=\"pbody\"><p class=\"summary\">{}</p>\n", escape(p.summary));
  if (!r.ran) return out + "<p>The pipeline stopped before this pass (the program has errors).</p></div></details>\n";
  out += "<h4>Decisions</h4>\n";
  if (r.decisions.empty()) {
    out += "<p class=\"muted\">This pass records no decisions of its own; the diff below shows what it did.</p>\n";
  } else {
    out += "<ul class=\"decisions\">\n";
    for (const std::string& d : r.decisions) out += "<li>" + escape(d) + "</li>\n";
    out += "</ul>\n";
  }
  bool bigLlvm = llvmShownInCode && p.stage == Stage::LLVM;
  if (!r.changed && index > 0) {
    out += fmt::format("<p class=\"muted\">Unchanged: its {} is the same as its input (identical text).</p>\n", stageName(p.stage));
  } else if (r.sameForm) {
    out += fmt::format("<h4>Line diff of the {} ({} before, {} after)</h4>\n", stageName(p.stage), r.inputForm, stageName(p.stage));
    out += renderDiff(r.before, r.after);
    if (cleanup && cleanup->ran && cleanup->changed) {
      out += fmt::format("<h4>Line diff with the dce after it (pass {}), which removes the nodes {} left unread</h4>\n", index + 2, escape(p.name));
      out += renderDiff(r.before, cleanup->after);
    }
    if (!bigLlvm)
      out += fmt::format("<details class=\"full\"><summary>the whole {} after {}</summary>{}</details>\n", stageName(p.stage), escape(p.name),
                         pre(r.after));
  } else {
    out += fmt::format("<p>This pass turns the {} into the {}: two forms, so no line diff.</p>\n", r.inputForm, stageName(p.stage));
    out += fmt::format("<details class=\"full\"><summary>its input: the {}</summary>{}</details>\n", r.inputForm, pre(r.before));
    if (bigLlvm) out += "<p class=\"muted\">Its output is in the generated code section below.</p>\n";
    else out += fmt::format("<details class=\"full\" open><summary>its output: the {}</summary>{}</details>\n", stageName(p.stage), pre(r.after));
  }
  return out + "</div></details>\n";
}

std::string tableHtml(const std::vector<std::vector<std::string>>& rows, const std::string& id = "") {
  if (rows.empty()) return "";
  std::string out = fmt::format("<div class=\"scroll\"><table{}><thead><tr>", id.empty() ? "" : " id=\"" + id + "\"");
  for (const std::string& h : rows[0]) out += "<th>" + escape(h) + "</th>";
  out += "</tr></thead><tbody>\n";
  for (size_t r = 1; r < rows.size(); ++r) {
    out += "<tr>";
    for (const std::string& c : rows[r]) out += "<td>" + escape(c) + "</td>";
    out += "</tr>\n";
  }
  return out + "</tbody></table></div>\n";
}

// ----- the page ----------------------------------------------------------------------------

const char* const kStyle = R"CSS(
:root{--fg:#1d1d1f;--muted:#666;--line:#ddd;--bg:#fff;--panel:#f7f7f9;--del:#ffe3e3;--ins:#dcf5dc}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header{padding:14px 20px;background:#20232a;color:#fff}
header h1{margin:0 0 4px;font-size:20px}
header p{margin:2px 0;color:#cfd3da;font-size:13px}
nav{position:sticky;top:0;z-index:2;background:#fff;border-bottom:1px solid var(--line);padding:6px 20px;display:flex;flex-wrap:wrap;gap:4px 14px}
nav a{color:#0b5cad;text-decoration:none;font-size:14px}
main{padding:0 20px 40px;max-width:1200px}
section{margin-top:22px}
h2{font-size:18px;border-bottom:2px solid #20232a;padding-bottom:3px}
h3{font-size:16px;margin:18px 0 6px}
h4{font-size:14px;margin:12px 0 4px}
pre{background:var(--panel);border:1px solid var(--line);padding:8px;overflow-x:auto;font:12.5px/1.4 ui-monospace,"DejaVu Sans Mono",Menlo,monospace;margin:4px 0}
.src span.line{display:block}
.src span.err{background:#ffe3e3}
.src span.warn{background:#fff4cc}
.src i{font-style:normal;color:#999;display:inline-block;width:3.2em;user-select:none}
.diag{background:#fff7f7;border-color:#f0b0b0}
.ok{color:#17803a}
.muted{color:var(--muted)}
.scroll{overflow-x:auto}
table{border-collapse:collapse;font-size:13px;margin:6px 0}
th,td{border:1px solid var(--line);padding:3px 8px;text-align:left;white-space:nowrap}
th{background:var(--panel)}
td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.unchanged td{color:var(--muted)}
tr.prow{cursor:pointer}
tr.prow:hover td{background:#eef4ff}
.badge{display:inline-block;border-radius:9px;padding:0 8px;font-size:12px;border:1px solid #bbb}
.badge.changed{background:#fff0c2;border-color:#e0b000}
.badge.unchanged{background:#eee;color:#666}
.badge.notrun{background:#fdd;border-color:#d66}
.tbar{width:130px;background:linear-gradient(#1f78b4,#1f78b4) no-repeat left center}
details.pass{border:1px solid var(--line);border-radius:4px;margin:5px 0;background:#fff}
details.pass>summary{padding:5px 8px;cursor:pointer}
details.pass[open]>summary{background:var(--panel);border-bottom:1px solid var(--line)}
details.pass .ms,details.pass .form{color:var(--muted);font-size:13px;margin-left:6px}
.pbody{padding:4px 12px 10px}
.summary{margin:4px 0;color:#333}
pre.diff span{display:block;white-space:pre}
pre.diff span.del{background:var(--del)}
pre.diff span.ins{background:var(--ins)}
pre.diff span.hunk{color:#0b5cad;background:#eef4ff}
.dstat .del{color:#b00020}
.dstat .ins{color:#17803a}
details.full>summary{cursor:pointer;color:#0b5cad;font-size:13px}
ul.decisions{margin:4px 0;padding-left:20px;font:12.5px/1.45 ui-monospace,"DejaVu Sans Mono",Menlo,monospace}
.figure{overflow-x:auto;border:1px solid var(--line);padding:6px;background:#fff}
.figure svg{max-width:100%;height:auto}
svg text{font-family:system-ui,sans-serif;font-size:13px;fill:#222}
svg text.mono{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:12px}
svg text.small{font-size:12px}
svg text.mono.small{font-size:10.5px}
svg text.tiny{font-size:10px;fill:#555}
svg .edge{fill:none;stroke:#555;stroke-width:1.2}
svg .grid{stroke:#e6e6e6}
.legend span{display:inline-block;padding:1px 8px;margin:2px;border:1px solid #999;border-radius:3px;font:12px ui-monospace,monospace}
.controls{margin:6px 0;display:flex;gap:8px;flex-wrap:wrap;align-items:center;font-size:14px}
button{font:inherit;font-size:13px;padding:2px 10px}
.cols{display:grid;grid-template-columns:repeat(auto-fit,minmax(360px,1fr));gap:12px}
@media (max-width:700px){
 body{font-size:14px}
 header,main{padding-left:10px;padding-right:10px}
 nav{padding:6px 10px}
 .cols{grid-template-columns:1fr}
 pre{font-size:11.5px}
}
)CSS";

// The page's script: opens a pass's section from the pipeline table, filters unchanged passes,
// and checks itself once loaded, writing the results on <body> (data-selfcheck and friends),
// which a headless browser's DOM dump shows (tests/explore/browser_test.py).
const char* const kScript = R"JS(
(function () {
  'use strict';
  var errors = 0;
  window.addEventListener('error', function () {
    errors += 1;
    document.body.setAttribute('data-errors', String(errors));
  });
  function openPass(id) {
    var d = document.getElementById(id);
    if (!d) return;
    d.open = true;
    d.scrollIntoView({block: 'start'});
  }
  Array.prototype.forEach.call(document.querySelectorAll('tr.prow'), function (row) {
    row.addEventListener('click', function () { openPass(row.getAttribute('data-target')); });
  });
  if (location.hash && location.hash.indexOf('#pass-') === 0) openPass(location.hash.slice(1));
  var only = document.getElementById('only-changed');
  if (only) only.addEventListener('change', function () {
    Array.prototype.forEach.call(document.querySelectorAll('details.pass.unchanged, tr.prow.unchanged'), function (e) {
      e.style.display = only.checked ? 'none' : '';
    });
  });
  function setAll(open) {
    Array.prototype.forEach.call(document.querySelectorAll('details.pass'), function (d) { d.open = open; });
  }
  var ex = document.getElementById('expand-all');
  if (ex) ex.addEventListener('click', function () { setAll(true); });
  var co = document.getElementById('collapse-all');
  if (co) co.addEventListener('click', function () { setAll(false); });
  // Self-check.
  var body = document.body;
  var svgs = document.querySelectorAll('svg');
  var empty = [];
  Array.prototype.forEach.call(svgs, function (svg, i) {
    var drawn = 0;
    Array.prototype.forEach.call(svg.querySelectorAll('rect,path,polygon,polyline,ellipse,circle,line,text'), function (e) {
      var b = e.getBBox();
      if (b.width > 0 || b.height > 0) drawn += 1;
    });
    if (drawn === 0) empty.push(svg.id || ('svg' + i));
  });
  var resources = window.performance && performance.getEntriesByType ? performance.getEntriesByType('resource').length : -1;
  body.setAttribute('data-passes', String(document.querySelectorAll('details.pass').length));
  body.setAttribute('data-pipeline-rows', String(document.querySelectorAll('tr.prow').length));
  body.setAttribute('data-svgs', String(svgs.length));
  body.setAttribute('data-svgs-empty', empty.join(' '));
  body.setAttribute('data-resources', String(resources));
  body.setAttribute('data-errors', String(errors));
  body.setAttribute('data-selfcheck', 'done');
})();
)JS";

std::string sourceSection(const SourceFile& file, const DiagnosticEngine& diags, const std::vector<std::string>& defines) {
  std::map<uint32_t, std::string> marks;  // line -> class
  for (const Diagnostic& d : diags.diagnostics()) {
    if (!d.range.valid()) continue;
    std::string cls = d.severity == Severity::Error ? "err" : "warn";
    for (uint32_t l = d.range.begin.line; l <= std::max(d.range.begin.line, d.range.end.line); ++l)
      if (marks[l] != "err") marks[l] = cls;
  }
  std::string out = "<section id=\"source\"><h2>Source</h2>\n";
  out += fmt::format("<p><b>{}</b>, {} lines{}</p>\n", escape(file.name()), file.lineCount(),
                     defines.empty() ? "" : ", with -D " + escape([&] {
                       std::string s;
                       for (const std::string& d : defines) s += (s.empty() ? "" : " -D ") + d;
                       return s;
                     }()));
  out += "<pre class=\"src\">";
  for (uint32_t l = 1; l <= file.lineCount(); ++l) {
    auto m = marks.find(l);
    out += fmt::format("<span class=\"line{}\"><i>{}</i>{}</span>", m == marks.end() ? "" : " " + m->second, l, escape(file.lineText(l)));
  }
  out += "</pre>\n";
  if (diags.diagnostics().empty()) {
    out += "<p class=\"ok\">No diagnostics: no errors, no warnings.</p>\n";
  } else {
    out += fmt::format("<h3>Diagnostics ({} errors, {} warnings)</h3>\n", diags.errorCount(), diags.warningCount());
    out += pre(diags.render(false), "diag");
  }
  return out + "</section>\n";
}

std::string pipelineSection(const std::vector<PassRecord>& records, bool llvmInCode) {
  double total = 0, maxMs = 0;
  int changed = 0, ran = 0;
  for (const PassRecord& r : records) {
    total += r.ms;
    maxMs = std::max(maxMs, r.ms);
    changed += r.ran && r.changed;
    ran += r.ran;
  }
  std::string out = "<section id=\"pipeline\"><h2>Pipeline</h2>\n";
  out += fmt::format("<p>{} passes ({} ran, {} changed the IR), {:.2f} ms in all. Click a pass for the decisions it took and the line "
                     "diff of its IR.</p>\n",
                     records.size(), ran, changed, total);
  out += "<div class=\"scroll\"><table id=\"pipeline-table\"><thead><tr><th>#</th><th>pass</th><th>IR</th><th>result</th><th>time</th><th></th></tr></thead><tbody>\n";
  for (size_t i = 0; i < records.size(); ++i) {
    const PassRecord& r = records[i];
    std::string status = !r.ran ? "notrun" : r.changed ? "changed" : "unchanged";
    out += fmt::format("<tr class=\"prow {}\" data-target=\"pass-{}\"><td class=\"num\">{}</td><td><a href=\"#pass-{}\">{}</a></td><td>{}</td>"
                       "<td><span class=\"badge {}\">{}</span></td><td class=\"num\">{}</td><td class=\"tbar\" style=\"background-size:{}px 9px\">&nbsp;</td></tr>\n",
                       status, i + 1, i + 1, i + 1, escape(r.info->name), stageName(r.info->stage), status,
                       !r.ran ? "not run" : status, r.ran ? fmt::format("{:.3f} ms", r.ms) : "-",
                       num(maxMs > 0 ? 1 + 120 * r.ms / maxMs : 1));
  }
  out += "</tbody></table></div>\n";
  out += "<div class=\"controls\"><label><input type=\"checkbox\" id=\"only-changed\"> only the passes that changed something</label>"
         "<button type=\"button\" id=\"expand-all\">open all</button><button type=\"button\" id=\"collapse-all\">close all</button></div>\n";
  out += "<h3>Passes</h3>\n";
  for (size_t i = 0; i < records.size(); ++i) {
    const PassRecord* cleanup = i + 1 < records.size() && std::string(records[i + 1].info->name) == "dce" &&
                                        std::string(records[i].info->name) != "dce" && records[i].info->stage == Stage::Graph
                                    ? &records[i + 1]
                                    : nullptr;
    out += passSection(i, records[i], llvmInCode, cleanup);
  }
  return out + "</section>\n";
}

// The kernel each tensor of `g` ends up in: its own node in the fused graph, or (followed through
// the fusion decisions) the kernel of the first node it was fused into; -1 for inputs.
std::vector<int> kernelsOf(const Graph& g, const Graph& fused, const std::vector<FusionDecision>& decisions) {
  std::map<std::string, int> finalIndex;
  for (size_t i = 0; i < fused.computations.size(); ++i) finalIndex[fused.tensors[fused.computations[i].tensor].name] = static_cast<int>(i);
  std::map<std::string, std::string> into;  // producer -> first consumer it was fused into
  for (const FusionDecision& d : decisions) {
    if (!d.fused) continue;
    std::string first = d.consumers.substr(0, d.consumers.find(','));
    first.erase(std::remove_if(first.begin(), first.end(), [](char c) { return c == '%' || c == ' '; }), first.end());
    into[d.producer] = first;
  }
  std::vector<int> out(g.tensors.size(), -1);
  for (const Computation& c : g.computations) {
    std::string name = g.tensors[c.tensor].name;
    for (int hop = 0; hop < 64; ++hop) {
      if (auto f = finalIndex.find(name); f != finalIndex.end()) {
        out[c.tensor] = f->second;
        break;
      }
      auto next = into.find(name);
      if (next == into.end()) break;
      name = next->second;
    }
  }
  return out;
}

std::vector<std::string> planDecisions(const loops::LoopProgram& p, const loops::MemoryPlan& plan) {
  std::vector<std::string> out;
  out.push_back(fmt::format("arena {} bytes ({}) against {} bytes ({}) unplanned; {} temps in {} blocks; at most {} live at once", plan.arenaBytes,
                            bytesText(static_cast<double>(plan.arenaBytes)), plan.naiveBytes, bytesText(static_cast<double>(plan.naiveBytes)),
                            plan.temps.size(), plan.blockBytes.size(), plan.maxLive));
  for (const loops::PlannedTemp& t : plan.temps) {
    std::string how = t.reusedFrom < 0 ? std::string("a fresh block")
                      : t.inPlace      ? fmt::format("written in place over %{}, which dies in k{}", p.buffers[t.reusedFrom].name, t.defKernel)
                                       : fmt::format("the block of %{}, dead by then", p.buffers[t.reusedFrom].name);
    out.push_back(fmt::format("%{}: {} bytes, live k{}..k{}, block {} at offset {}: {}", p.buffers[t.buffer].name, t.bytes, t.defKernel, t.lastKernel,
                              t.block, t.offset, how));
  }
  return out;
}

}  // namespace

int commandExplore(const ExploreOptions& o) {
  Stopwatch wall;
  if (o.target != "cpu" && o.target != "cuda") throw CommandError{kExitUsage, fmt::format("--target {}: expected cpu or cuda", o.target)};
  if (o.layout != "auto" && o.layout != "dot" && o.layout != "builtin")
    throw CommandError{kExitUsage, fmt::format("--graph-layout {}: expected auto, dot or builtin", o.layout)};
  if (o.repeat < 1) throw CommandError{kExitUsage, "--repeat must be >= 1"};
  if (o.assembly && o.target == "cuda") throw CommandError{kExitUsage, "--asm is for the cpu target"};
  std::string dotPath = o.layout == "builtin" ? "" : findOnPath("dot");
  if (o.layout == "dot" && dotPath.empty()) throw CommandError{kExitUsage, "--graph-layout dot: Graphviz's dot is not on PATH"};
  std::string output = o.output;
  if (output.empty()) output = fs::path(o.program.file).stem().string() + ".html";
  const bool cuda = o.target == "cuda";

  // The pipeline, recording every pass.
  CompileRequest request = o.program.request(cuda ? Stage::CUDA : Stage::LLVM);
  if (cuda) request.options.target = Target::Cuda;
  std::vector<const PassInfo*> pipeline = buildPipeline(request.options, request.until);
  std::vector<PassRecord> records(pipeline.size());
  for (size_t i = 0; i < pipeline.size(); ++i) records[i].info = pipeline[i];
  size_t next = 0;
  std::optional<Graph> graphBeforeFuse, graphAfterFuse;
  bool fuseSeen = false;
  std::map<std::string, std::string> schedules, streaming;  // kernel -> decision, as last seen
  const PassInfo* previous = nullptr;
  request.instrumentation.afterPass = [&](const PassInfo& pass, const CompileState& s, const PassTiming& t, const std::string& before) {
    if (next >= records.size()) return;
    PassRecord& r = records[next++];
    r.ran = true;
    r.ms = t.ms;
    r.changed = t.changed || previous == nullptr;
    r.inputForm = previous ? (previous->stage == Stage::Plan ? std::string("loop IR and memory plan") : stageName(previous->stage)) : "source";
    r.sameForm = previous ? previous->stage == pass.stage : pass.stage == Stage::Ast;
    r.before = before;
    if (r.changed) r.after = printStage(s, pass.stage);
    std::string name = pass.name;
    if (name == "fuse")
      for (const FusionDecision& d : s.fusionDecisions) r.decisions.push_back(fmt::format("%{} -> {}: {}", d.producer, d.consumers, d.reason));
    if (name == "online-softmax") r.decisions = s.onlineSoftmaxDecisions;
    if (name == "reciprocal-of-sums") r.decisions = s.reciprocalDecisions;
    if (name == "sum-lanes") r.decisions = s.sumOrderDecisions;
    if (name == "plan-memory" && s.memoryPlan && s.loops) r.decisions = planDecisions(*s.loops, *s.memoryPlan);
    if (name == "lower-to-loops" && s.loops)
      for (const loops::Kernel& k : s.loops->kernels) r.decisions.push_back(fmt::format("kernel {}", k.name));
    if (pass.stage == Stage::Loops && s.loops) {
      // The tile rule's arithmetic and the streaming decisions: what this pass set or changed.
      for (const loops::Kernel& k : s.loops->kernels) {
        if (!k.schedule.empty() && schedules[k.name] != k.schedule) r.decisions.push_back(fmt::format("{}: {}", k.name, k.schedule));
        if (!k.streaming.empty() && streaming[k.name] != k.streaming) r.decisions.push_back(fmt::format("{}: {}", k.name, k.streaming));
        schedules[k.name] = k.schedule;
        streaming[k.name] = k.streaming;
      }
    }
    // Before fusion: the graph as the last graph pass before fuse left it.
    if (name == "fuse") fuseSeen = true;
    if (pass.stage == Stage::Graph && s.graph && !fuseSeen) graphBeforeFuse = *s.graph;
    previous = &pass;
  };
  std::unique_ptr<Compilation> c = compileProgram(request);
  const bool failed = !c->ok;
  if (failed && !o.errorPage) return kExitProgramError;

  std::string title = fs::path(o.program.file).filename().string();
  std::vector<std::string> sections = {"source", "pipeline"};
  std::string body;
  body += sourceSection(*c->file, *c->diags, o.program.defines);
  const bool llvmInCode = !failed && !cuda;
  body += pipelineSection(records, llvmInCode);

  std::string layoutNote, measureText;
  CompareReport report;
  int status = failed ? kExitProgramError : kExitOk;
  if (!failed) {
    const Graph& fused = *c->state.graph;
    if (!graphBeforeFuse) graphBeforeFuse = fused;
    // After fusion: the final graph (the dce after fuse has removed the inlined producers).
    graphAfterFuse = fused;

    // The graph before and after fusion, coloured by the kernel each node ends up in.
    std::vector<int> beforeKernels = kernelsOf(*graphBeforeFuse, *graphAfterFuse, c->state.fusionDecisions);
    std::vector<int> afterKernels = kernelsOf(*graphAfterFuse, *graphAfterFuse, {});
    std::string why = o.layout == "builtin" ? "--graph-layout builtin" : "Graphviz's dot is not on PATH";
    Picture before = drawGraph(*graphBeforeFuse, beforeKernels, "graph-before", dotPath, why);
    Picture after = drawGraph(*graphAfterFuse, afterKernels, "graph-after", dotPath, why);
    layoutNote = before.how;
    body += "<section id=\"graph\"><h2>Dataflow graph</h2>\n";
    body += fmt::format("<p>Before fusion ({} nodes) and after (--fuse={}: {} kernels). Nodes are coloured by the kernel they end up in; "
                        "inputs are ellipses, outputs drawn bold. The graphs are {}.</p>\n",
                        graphBeforeFuse->computations.size(), o.program.fuse, graphAfterFuse->computations.size(), escape(before.how));
    body += "<p class=\"legend\">";
    for (size_t k = 0; k < graphAfterFuse->computations.size(); ++k)
      body += fmt::format("<span style=\"background:{}\">kernel {}: %{}</span>", html::kernelColor(static_cast<int>(k)), k,
                          escape(graphAfterFuse->tensors[graphAfterFuse->computations[k].tensor].name));
    body += "</p>\n<div class=\"cols\"><div><h3>Before fusion</h3><div class=\"figure\">" + before.svg +
            "</div></div>\n<div><h3>After fusion</h3><div class=\"figure\">" + after.svg + "</div></div></div>\n";
    if (!c->state.fusionDecisions.empty()) {
      body += "<h3>Fusion decisions</h3><ul class=\"decisions\">\n";
      for (const FusionDecision& d : c->state.fusionDecisions)
        body += fmt::format("<li>%{} -&gt; {}: {}</li>\n", escape(d.producer), escape(d.consumers), escape(d.reason));
      body += "</ul>\n";
    }
    body += "</section>\n";
    sections.push_back("graph");

    // The memory plan.
    body += "<section id=\"memory\"><h2>Memory plan</h2>\n";
    if (c->state.memoryPlan && c->state.loops) {
      const loops::MemoryPlan& plan = *c->state.memoryPlan;
      body += fmt::format("<p>Kernels run left to right; each bar is an intermediate, live from the kernel that writes it (W, or = when "
                          "written in place) to its last reader (R). Bars of one colour share an arena block. Arena {} against {} unplanned "
                          "(one buffer per intermediate).</p>\n",
                          bytesText(static_cast<double>(plan.arenaBytes)), bytesText(static_cast<double>(plan.naiveBytes)));
      body += "<div class=\"figure\">" + memorySvg(*c->state.loops, plan) + "</div>\n";
      body += "<details class=\"full\"><summary>the plan as text (--emit plan)</summary>" + pre(printStage(c->state, Stage::Plan)) + "</details>\n";
    } else {
      body += "<p>No memory plan (--no-plan): every intermediate has a buffer of its own.</p>\n";
    }
    body += "</section>\n";
    sections.push_back("memory");

    // The roofline: every kernel fused and unfused, on the host's measured roofs and the GPU models.
    ProgramOptions unfusedOpts = o.program;
    unfusedOpts.fuse = "none";
    unfusedOpts.instrumentation = Instrumentation{};
    unfusedOpts.printAfter.clear();
    unfusedOpts.printBefore.clear();
    unfusedOpts.timePasses = false;
    CompileRequest unfusedRequest = unfusedOpts.request(Stage::Plan);
    unfusedRequest.options.target = request.options.target;
    unfusedRequest.printedPassesMustRun = false;
    std::unique_ptr<Compilation> unfused = compileProgram(unfusedRequest);
    std::vector<KernelCost> kf = costOfKernels(fused);
    std::vector<KernelCost> ku = unfused->ok ? costOfKernels(*unfused->state.graph) : std::vector<KernelCost>{};
    HardwareModel host = hostHardwareModel();
    std::vector<HardwareModel> machines = {host};
    for (const char* name : {"h100", "h200"})
      if (auto m = namedHardwareModel(name)) machines.push_back(*m);

    if (o.measure) {
      CompareOptions co;
      co.program = o.program;
      co.program.instrumentation = Instrumentation{};
      co.program.printAfter.clear();
      co.program.printBefore.clear();
      co.program.timePasses = false;
      co.threads = o.threads;
      co.repeat = o.repeat;
      co.target = o.target;
      std::ostringstream text;
      status = runCompare(co, text, &report);
      measureText = text.str();
    }

    std::vector<RoofPoint> points;
    std::vector<std::vector<std::string>> rows = {{"kernel", "variant", "op", "FLOP/B", "GFLOP/s on the host roof"}};
    for (const HardwareModel& m : machines) rows[0].push_back("bound (" + m.name + ")");
    auto addRows = [&](const std::vector<KernelCost>& ks, bool isFused) {
      for (size_t i = 0; i < ks.size(); ++i) {
        const KernelCost& k = ks[i];
        double attainable = std::min(host.peakGflops, host.bandwidthGBs * k.intensity());
        points.push_back({"%" + k.name + (isFused ? " (fused)" : " (unfused)"), k.intensity(), attainable, isFused ? static_cast<int>(i) : -1,
                          isFused ? RoofPoint::Fused : RoofPoint::Unfused});
        std::vector<std::string> row = {"%" + k.name, isFused ? "fused" : "unfused", k.op, fmt::format("{:.3f}", k.intensity()),
                                        k.flops > 0 ? fmt::format("{:.3g}", attainable) : "no FLOPs: not plotted"};
        for (const HardwareModel& m : machines) {
          RooflineTime t = roofline(k, m);
          row.push_back(fmt::format("{} ({:.3g} us)", t.memoryUs >= t.computeUs ? "memory" : "compute", t.totalUs()));
        }
        rows.push_back(std::move(row));
      }
    };
    addRows(kf, true);
    addRows(ku, false);
    for (const CompareVariantResult& v : report.variants)
      if (v.bytes > 0 && v.flops > 0 && v.medianMs > 0)
        points.push_back({v.name, v.flops / v.bytes, v.flops / (v.medianMs * 1e6), -1, RoofPoint::Measured});
    body += "<section id=\"roofline\"><h2>Roofline</h2>\n";
    body += fmt::format("<p>Each kernel of the fused program (filled, coloured by kernel) and of the unfused one (hollow), at its arithmetic "
                        "intensity on the roof of this host ({:.1f} GB/s, {:.1f} GFLOP/s, measured by texc){}. Bytes and FLOPs are texc's "
                        "cost model (docs/cost-model.md); the table gives each kernel's bound and modelled time on every machine.</p>\n",
                        host.bandwidthGBs, host.peakGflops, report.variants.empty() ? "" : "; diamonds are the measured variants of texc compare");
    body += "<details class=\"full\"><summary>where the figures come from</summary><ul>\n";
    for (const HardwareModel& m : machines) body += fmt::format("<li>{}: {}</li>\n", escape(m.name), escape(m.source));
    body += "</ul></details>\n";
    body += "<div class=\"figure\">" + rooflineSvg(machines, points) + "</div>\n";
    body += tableHtml(rows, "roofline-table");
    body += "</section>\n";
    sections.push_back("roofline");

    if (o.measure) {
      body += "<section id=\"measure\"><h2>Measured (texc compare)</h2>\n";
      body += "<p>Median time of each variant (lower is better); red bars are beyond their error bound.</p>\n";
      body += "<div class=\"figure\">" + measureSvg(report) + "</div>\n";
      body += tableHtml(report.table, "measure-table");
      body += "<details class=\"full\"><summary>texc compare's report</summary>" + pre(measureText) + "</details>\n";
      body += "</section>\n";
      sections.push_back("measure");
    }

    // The generated code, per kernel.
    body += "<section id=\"code\"><h2>Generated code</h2>\n";
    body += "<h3>Loop IR, per kernel</h3>\n";
    if (c->state.loops) {
      std::string loopsText = printStage(c->state, Stage::Loops);
      std::vector<std::string> parts(1);
      for (std::string_view line : splitLines(loopsText)) {
        if (line.substr(0, 7) == "kernel ") parts.emplace_back();
        parts.back() += std::string(line) + "\n";
      }
      body += "<details class=\"full\"><summary>buffers</summary>" + pre(parts[0]) + "</details>\n";
      for (size_t i = 1; i < parts.size(); ++i) {
        std::string head = parts[i].substr(0, parts[i].find('\n'));
        body += fmt::format("<details class=\"full\" open><summary>{}</summary>{}</details>\n", escape(head), pre(parts[i]));
      }
    }
    if (cuda && c->state.cuda) {
      body += "<h3>CUDA C</h3>\n<details class=\"full\" open><summary>the whole .cu source</summary>" + pre(c->state.cuda->source) + "</details>\n";
    }
    if (!cuda && c->state.llvmModule) {
      body += fmt::format("<h3>LLVM IR, per function (after optimize-llvm, -O{})</h3>\n", o.program.pipeline.optLevel);
      for (const llvm::Function& f : *c->state.llvmModule) {
        if (f.isDeclaration()) continue;
        std::string text;
        llvm::raw_string_ostream os(text);
        f.print(os);
        os.flush();
        body += fmt::format("<details class=\"full\"><summary>@{}</summary>{}</details>\n", escape(f.getName().str()), pre(text));
      }
      if (o.assembly) {
        auto tm = createTargetMachine(cpuTarget(o.program.pipeline.cpu), o.program.pipeline.optLevel);
        body += "<h3>Assembly</h3>\n<details class=\"full\"><summary>the whole module (--emit asm)</summary>" +
                pre(emitAssembly(*c->state.llvmModule, *tm)) + "</details>\n";
      }
    }
    body += "</section>\n";
    sections.push_back("code");
  }

  // The header and the navigation.
  std::string command = "texc explore " + o.program.file;
  for (const std::string& d : o.program.defines) command += " -D " + d;
  if (o.program.fuse != "all") command += " --fuse=" + o.program.fuse;
  if (o.program.pipeline.optLevel != 3) command += fmt::format(" -O{}", o.program.pipeline.optLevel);
  if (o.program.noPlan) command += " --no-plan";
  if (o.program.noTile) command += " --no-tile";
  for (const std::string& d : o.program.disablePasses) command += " --disable-pass=" + d;
  if (cuda) command += " --target cuda";
  if (o.measure) command += " --measure";
  std::string cpu = cuda ? std::string("CUDA C (nothing runs on a GPU to make this page)") : cpuTarget(o.program.pipeline.cpu).describe();
  double seconds = wall.seconds();
  std::string nav;
  const std::map<std::string, std::string> sectionTitle = {{"source", "Source"},   {"pipeline", "Pipeline"}, {"graph", "Dataflow graph"},
                                                           {"memory", "Memory plan"}, {"roofline", "Roofline"}, {"measure", "Measured"},
                                                           {"code", "Generated code"}};
  for (const std::string& s : sections) nav += fmt::format("<a href=\"#{}\">{}</a>", s, sectionTitle.at(s));
  std::string page = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                     "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  page += fmt::format("<title>texc explore: {}</title>\n<style>{}</style>\n</head>\n", escape(title), kStyle);
  page += fmt::format("<body data-sections=\"{}\">\n<header><h1>texc explore: {}</h1>\n", [&] {
    std::string s;
    for (const std::string& n : sections) s += (s.empty() ? "" : " ") + n;
    return s;
  }(), escape(title));
  page += fmt::format("<p><code>{}</code></p>\n<p>code for {}; made in {:.2f} s{}</p>\n", escape(command), escape(cpu), seconds,
                      failed ? "; <b>the program has errors</b>: the pipeline stopped" : "");
  page += "</header>\n<nav>" + nav + "</nav>\n<main>\n" + body + "</main>\n<script>" + kScript + "</script>\n</body>\n</html>\n";

  writeFileAtomic(output, page);
  if (!o.program.instrumentation.dumpDir.empty())
    writeFileAtomic((fs::path(o.program.instrumentation.dumpDir) / "index.html").string(), page);
  std::string list;
  for (const std::string& s : sections) list += (list.empty() ? "" : ", ") + (s == "pipeline" ? fmt::format("pipeline ({} passes)", records.size()) : s);
  std::cout << fmt::format("wrote {}: {} bytes ({}); sections: {}; {:.2f} s{}\n", output, page.size(), bytesText(static_cast<double>(page.size())), list,
                           wall.seconds(), layoutNote.empty() ? "" : "; graphs " + layoutNote);
  if (!measureText.empty() && status == kExitMismatch)
    std::cerr << "texc: error: a variant of texc compare is beyond its error bound (the page shows which)\n";
  return status;
}

}  // namespace texc
