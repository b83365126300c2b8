#include "PassTestSupport.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <sstream>

#include "LoopInterpreter.h"
#include "compiler/passes/Pipeline.h"
#include "frontend/Parser.h"
#include "runtime/SplitMix64.h"

namespace texc::passtest {

// ---- test programs -----------------------------------------------------------------------------

namespace {

std::optional<std::string> readDefine(const std::string& word, ProgramOptions& out) {
  size_t eq = word.find('=');
  if (eq == std::string::npos || eq == 0) return "expected NAME=VALUE but found '" + word + "'";
  int64_t value = 0;
  const char* first = word.data() + eq + 1;
  const char* last = word.data() + word.size();
  auto [end, ec] = std::from_chars(first, last, value);
  if (ec != std::errc() || end != last || first == last) return "'" + word + "': the value is not an integer";
  out.overrides[word.substr(0, eq)] = value;
  return std::nullopt;
}

std::optional<std::string> readFuse(const std::string& mode, ProgramOptions& out) {
  if (mode == "none") out.fuse = FuseMode::None;
  else if (mode == "elementwise") out.fuse = FuseMode::Elementwise;
  else if (mode == "all") out.fuse = FuseMode::All;
  else return "--fuse: unknown mode '" + mode + "' (none, elementwise, all)";
  return std::nullopt;
}

}  // namespace

std::optional<std::string> readOptionWords(const std::string& line, ProgramOptions& out) {
  std::istringstream words(line);
  std::string word;
  while (words >> word) {
    std::optional<std::string> err;
    if (word == "-D") {
      if (!(words >> word)) return std::string("'-D' without NAME=VALUE");
      err = readDefine(word, out);
    } else if (word.rfind("-D", 0) == 0) {
      err = readDefine(word.substr(2), out);
    } else if (word == "--fuse") {
      if (!(words >> word)) return std::string("'--fuse' without a mode");
      err = readFuse(word, out);
    } else if (word.rfind("--fuse=", 0) == 0) {
      err = readFuse(word.substr(7), out);
    } else {
      err = "unknown option '" + word + "'";
    }
    if (err) return err;
  }
  return std::nullopt;
}

std::optional<std::string> readGoldenOptions(const std::string& text, ProgramOptions& out) {
  static const std::string marker = "# golden:";
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(marker, 0) != 0) continue;
    if (auto err = readOptionWords(line.substr(marker.size()), out)) return *err + " in: " + line;
  }
  return std::nullopt;
}

fs::path exampleSizesFile() { return sourceRoot() / "tests" / "golden" / "graph" / "example-sizes.txt"; }

std::vector<TestProgram> examplePrograms() {
  // NAME.tex -> the option words of its line.
  std::vector<std::pair<std::string, std::string>> sizes;
  std::istringstream lines(readFile(exampleSizesFile()));
  std::string line;
  while (std::getline(lines, line)) {
    size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') continue;
    size_t space = line.find_first_of(" \t", start);
    std::string name = line.substr(start, space == std::string::npos ? std::string::npos : space - start);
    sizes.emplace_back(name, space == std::string::npos ? "" : line.substr(space));
  }
  std::vector<TestProgram> out;
  for (const fs::path& p : texFilesIn(sourceRoot() / "examples")) {
    TestProgram prog = fileProgram(p);
    std::string file = p.filename().string();
    auto it = std::find_if(sizes.begin(), sizes.end(), [&](const auto& s) { return s.first == file; });
    if (it == sizes.end()) {
      prog.error = "no line for " + file + " in " + repoPath(exampleSizesFile()) +
                   " (give every example small sizes there, e.g. '" + file + " -D N=8')";
    } else if (auto err = readOptionWords(it->second, prog.options)) {
      prog.error = repoPath(exampleSizesFile()) + ": " + *err;
    }
    out.push_back(std::move(prog));
  }
  return out;
}

TestProgram fileProgram(const fs::path& path) {
  TestProgram p;
  p.name = repoPath(path);
  p.fileName = path.filename().string();
  p.text = readFile(path);
  if (auto err = readGoldenOptions(p.text, p.options)) p.error = "bad '# golden:' line: " + *err;
  return p;
}

TestProgram inlineProgram(const std::string& name, const std::string& text, ProgramOptions options) {
  TestProgram p;
  p.name = name;
  p.fileName = name + ".tex";
  p.text = text;
  p.options = std::move(options);
  return p;
}

std::vector<TestProgram> allPrograms() {
  std::vector<TestProgram> out = examplePrograms();
  for (const fs::path& p : texFilesUnder(sourceRoot() / "tests" / "golden")) out.push_back(fileProgram(p));
  return out;
}

// ---- running the pipeline ----------------------------------------------------------------------

Session::Session(const TestProgram& program) : file_(program.fileName, program.text), diags_(&file_) {
  state_.file = &file_;
  state_.diags = &diags_;
  state_.overrides = program.options.overrides;
  state_.options.fuse = program.options.fuse;
  // Code for a fixed CPU: what the tile and LLVM passes produce must not follow the host.
  state_.options.cpu = "haswell";
  if (!program.error.empty()) failure_ = program.error;
}

bool Session::runThroughPassManager(const std::vector<const PassInfo*>& pipeline, const Instrumentation& inst) {
  if (!failure_.empty()) return false;
  if (pipeline.empty()) return true;
  std::vector<const PassInfo*> first(pipeline.begin(), pipeline.begin() + 1);
  std::vector<const PassInfo*> rest(pipeline.begin() + 1, pipeline.end());
  if (!runPipeline(state_, first, inst)) {
    failure_ = "the program has errors:\n" + diags_.render(false);
    return false;
  }
  if (std::string(pipeline.front()->name) == "parse") {
    if (auto err = checkOverrides(state_.module, state_.overrides)) {
      failure_ = "-D usage error: " + *err;
      return false;
    }
  }
  if (!runPipeline(state_, rest, inst)) {
    failure_ = "the program has errors:\n" + diags_.render(false);
    return false;
  }
  return true;
}

bool Session::runPass(const PassInfo& pass) {
  if (!failure_.empty()) return false;
  bool changed = pass.run(state_);
  if (diags_.hasErrors()) failure_ = fmt::format("pass {} reported errors:\n{}", pass.name, diags_.render(false));
  if (std::string(pass.name) == "parse" && failure_.empty())
    if (auto err = checkOverrides(state_.module, state_.overrides)) failure_ = "-D usage error: " + *err;
  return changed;
}

std::unique_ptr<Session> startSession(const TestProgram& program) { return std::make_unique<Session>(program); }

std::vector<const PassInfo*> graphPipeline(const PipelineOptions& options) {
  std::vector<const PassInfo*> out;
  for (const PassInfo* p : buildPipeline(options, Stage::Graph))
    if (p->stage == Stage::Graph) out.push_back(p);
  return out;
}

Graph applyGraphPass(const PassInfo& pass, const Graph& graph, const PipelineOptions& options, bool& changed,
                     std::string& error) {
  SourceFile file("graph.tex", "");
  DiagnosticEngine diags(&file);
  CompileState s;
  s.file = &file;
  s.diags = &diags;
  s.options = options;
  s.graph = graph;
  changed = pass.run(s);
  error = diags.hasErrors() ? diags.render(false) : "";
  return std::move(*s.graph);
}

namespace {

void indexStructure(std::string& out, const IndexExpr& ix) {
  out += fmt::format("(i{} {} {}", static_cast<int>(ix.kind), ix.constant, ix.var);
  for (const IndexExpr& o : ix.ops) indexStructure(out, o);
  out += ")";
}

void valueStructure(std::string& out, const Value& v) {
  uint64_t bits;
  std::memcpy(&bits, &v.constant, sizeof bits);
  out += fmt::format("(v{} b{} c{:x} var{} t{} chk{} own{} u{} op{} f{} r{} id{} [", static_cast<int>(v.kind), v.isBool ? 1 : 0, bits,
                     v.var, v.tensor, static_cast<int>(v.check), v.ownerReduce, static_cast<int>(v.unaryOp),
                     static_cast<int>(v.binaryOp), static_cast<int>(v.builtin), static_cast<int>(v.reduceKind), v.reduceId);
  for (int rv : v.reduceVars) out += fmt::format("{} ", rv);
  out += "]";
  for (const IndexExpr& ix : v.indices) indexStructure(out, ix);
  for (const Interval& r : v.indexRanges) out += fmt::format("<{},{}>", r.lo, r.hi);
  for (const Value& a : v.args) valueStructure(out, a);
  out += ")";
}

}  // namespace

std::string graphStructure(const Graph& g) {
  std::string out;
  for (const LetInfo& l : g.lets) out += fmt::format("let {}={}\n", l.name, l.value);
  for (const TensorInfo& t : g.tensors) {
    out += fmt::format("tensor {} {} in{} out{} comp{} [", t.name, dtypeName(t.dtype), t.isInput, t.isOutput, t.computation);
    for (int64_t d : t.shape) out += fmt::format("{} ", d);
    out += "]\n";
  }
  for (const Computation& c : g.computations) {
    out += fmt::format("node t{} lhs{} reduces{} stmt{} whole{} vars", c.tensor, c.numLhsVars, c.numReduces, c.statement,
                       c.wholeTensorForm);
    for (const IndexVar& v : c.vars) out += fmt::format(" {}<{}:{}:{}", v.name, v.extent, v.isReduction, v.reduction);
    out += " ";
    valueStructure(out, c.body);
    out += "\n";
  }
  out += "inputs";
  for (int id : g.inputs) out += fmt::format(" {}", id);
  out += " outputs";
  for (int id : g.outputs) out += fmt::format(" {}", id);
  return out + "\n";
}

// ---- reference runs ----------------------------------------------------------------------------

namespace {

// splitmix64, for inputs that are the same on every platform.
struct Random : SplitMix64 {
  double uniform(double lo, double hi) { return lo + (hi - lo) * unit(); }
};

uint64_t bitsOf(double d) {
  uint64_t b;
  std::memcpy(&b, &d, sizeof b);
  return b;
}

}  // namespace

std::vector<RefTensor> randomInputs(const Graph& g, uint64_t seed, int kind) {
  static const double specials[] = {0.0,
                                    -0.0,
                                    1.0,
                                    -1.0,
                                    0.5,
                                    2.0,
                                    1e-300,
                                    std::numeric_limits<double>::infinity(),
                                    -std::numeric_limits<double>::infinity(),
                                    std::numeric_limits<double>::quiet_NaN()};
  Random rng{seed * 0x2545F4914F6CDD1Dull + static_cast<uint64_t>(kind)};
  std::vector<RefTensor> inputs;
  for (int id : g.inputs) {
    RefTensor t;
    t.shape = g.tensors[id].shape;
    t.data.resize(static_cast<size_t>(g.tensors[id].numElements()));
    for (double& x : t.data) {
      if (kind == 1 && rng.next() % 4 == 0) x = specials[rng.next() % std::size(specials)];
      else x = rng.uniform(-2, 2);
    }
    inputs.push_back(std::move(t));
  }
  return inputs;
}

std::vector<RefTensor> referenceOutputs(const Graph& g, const std::vector<RefTensor>& inputs) {
  std::vector<RefTensor> all = evaluateReference(g, inputs);
  std::vector<RefTensor> outs;
  for (int id : g.outputs) outs.push_back(std::move(all[id]));
  return outs;
}

std::string compareOutputsExactly(const Graph& a, const std::vector<RefTensor>& ra, const Graph& b,
                                  const std::vector<RefTensor>& rb) {
  if (a.outputs.size() != b.outputs.size() || ra.size() != a.outputs.size() || rb.size() != b.outputs.size())
    return fmt::format("the number of outputs changed from {} to {}", a.outputs.size(), b.outputs.size());
  for (size_t k = 0; k < a.outputs.size(); ++k) {
    const std::string& name = a.tensors[a.outputs[k]].name;
    if (name != b.tensors[b.outputs[k]].name)
      return fmt::format("output {} is now called '{}' instead of '{}'", k, b.tensors[b.outputs[k]].name, name);
    if (ra[k].shape != rb[k].shape || ra[k].data.size() != rb[k].data.size())
      return fmt::format("output '{}' changed its shape", name);
    for (size_t i = 0; i < ra[k].data.size(); ++i) {
      double x = ra[k].data[i], y = rb[k].data[i];
      if ((std::isnan(x) && std::isnan(y)) || bitsOf(x) == bitsOf(y)) continue;
      return fmt::format("output '{}' element {} (flat) was {} ({:a}) and is {} ({:a}) after the pass", name, i, x, x, y, y);
    }
  }
  return "";
}

// ---- loop programs -----------------------------------------------------------------------------

LoweredLoops lowerToLoops(const std::string& name, const std::string& text, bool splitBorders) {
  std::unique_ptr<Session> s = startSession(inlineProgram(name, text));
  s->state().options.tile = false;
  s->state().options.splitBorders = splitBorders;
  bool ok = s->runThroughPassManager(buildPipeline(s->state().options, Stage::Loops), Instrumentation{});
  INFO(s->failure());
  REQUIRE(ok);
  return {*s->state().graph, *s->state().loops};
}

LoweredLoops lowerOnly(const std::string& name, const std::string& text) {
  std::unique_ptr<Session> s = startSession(inlineProgram(name, text));
  std::vector<const PassInfo*> passes;
  for (const PassInfo* p : buildPipeline(s->state().options, Stage::Loops)) {
    passes.push_back(p);
    if (std::string(p->name) == "lower-to-loops") break;
  }
  bool ok = s->runThroughPassManager(passes, Instrumentation{});
  INFO(s->failure());
  REQUIRE(ok);
  return {*s->state().graph, *s->state().loops};
}

std::vector<std::vector<double>> interpretOnRandomInputs(const LoweredLoops& l, const loops::LoopProgram& lp, uint64_t seed) {
  std::vector<RefTensor> inputs = randomInputs(l.graph, seed, 0);
  std::vector<std::vector<double>> buffers(lp.buffers.size());
  for (size_t i = 0; i < l.graph.inputs.size(); ++i) buffers[l.graph.inputs[i]] = inputs[i].data;
  std::string failure = interpretLoops(lp, buffers);
  INFO(loops::printLoopProgram(lp));
  REQUIRE(failure == "");
  return buffers;
}

loops::MachineInfo avx2Machine(int threads) {
  loops::MachineInfo m;
  m.vectorFloats = 8;
  m.vectorRegisters = 16;
  m.l1Bytes = 32 * 1024;
  m.l2Bytes = 512 * 1024;
  m.threads = threads;
  m.source = "test machine";
  return m;
}

}  // namespace texc::passtest
