// texc tune: a small auto-tuner over the tile pass's settings. Starting from the rule, it times
// a few candidate schedules one setting at a time (the register tile, then the k block, then the
// loop order), each on the same random inputs, keeps the fastest (when it beats the best so far
// by 2 % at least; a candidate whose results differ from the float64 reference beyond the error
// bound is discarded untimed), and writes it as a schedule
// file (docs/scheduling.md, "Tuning: texc tune") to a cache keyed by the program, its -D values,
// the fusion mode, the thread count and the host. A second `texc tune` of the same program
// reads the cache instead of measuring again.
#include <fmt/format.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>

#include "compiler/backend/llvm/CpuExecutable.h"
#include "compiler/driver/Commands.h"
#include "compiler/driver/Execution.h"
#include "compiler/driver/OutputFile.h"
#include "compiler/driver/TextTable.h"
#include "compiler/loops/Schedule.h"
#include "compiler/passes/loops/MachineInfo.h"
#include "runtime/CacheDir.h"
#include "runtime/ThreadPool.h"
#include "runtime/Timer.h"

namespace texc {

namespace {

// Settings of one candidate, as schedule-file keys (an empty map is the rule).
using Settings = std::map<std::string, std::string>;

std::string settingsText(const Settings& s) {
  std::string out;
  for (const auto& [key, value] : s) out += fmt::format("{} = {}\n", key, value);
  return out;
}

std::string settingsLabel(const Settings& s) {
  if (s.empty()) return "the rule";
  std::string out;
  for (const auto& [key, value] : s) out += fmt::format("{}{} = {}", out.empty() ? "" : ", ", key, value);
  return out;
}

// The program as compiled and run: its text, -D values, -O, fusion mode, --no-plan, --conv,
// threads and host.
std::string cacheKey(const TuneOptions& t, const std::string& source, const loops::MachineInfo& m) {
  std::string key = "texc-tune-1\n" + source + "\n";
  std::vector<std::string> defines = t.program.defines;
  std::sort(defines.begin(), defines.end());
  for (const std::string& d : defines) key += "-D " + d + "\n";
  key += fmt::format("O{} fuse {} plan {} conv {} threads {} cpu {} {} {} {} {}\n", t.program.pipeline.optLevel, t.program.fuse,
                     !t.program.noPlan, t.program.conv, t.threads, cpuTarget(t.program.pipeline.cpu).name, m.vectorFloats,
                     m.vectorRegisters, m.l1Bytes, m.l2Bytes);
  return fmt::format("{:016x}", fnv1a(key));
}

constexpr double kMinGain = 0.98;  // a change must be 2 % faster than the best so far

// The tensors the candidates run on: one set for all, so that they read and write the same
// addresses and none is faster or slower for where its buffers fell.
struct Workspace {
  std::unique_ptr<Compilation> compilation;  // the program and memory plan `memory` refers to
  std::vector<Tensor> tensors;
  std::unique_ptr<ProgramMemory> memory;
  std::string plan;  // printed; a candidate whose plan differs gets memory of its own
  CheckedReference reference;  // of the analysed program on the inputs, with error bounds
};

std::string planText(const CompileState& s) { return s.memoryPlan ? loops::printMemoryPlan(*s.loops, *s.memoryPlan) : ""; }

// One candidate, compiled, run once (the warm-up), its outputs compared with the rule's.
struct Candidate {
  Settings settings;
  std::unique_ptr<Compilation> compilation;
  std::unique_ptr<CpuExecutable> exe;
  std::vector<Tensor> ownTensors;  // only when its memory plan differs from the workspace's
  std::unique_ptr<ProgramMemory> ownMemory;
  ProgramMemory* memory = nullptr;
  std::vector<double> samples;
  double ms = 0;
  double maxRelDiff = 0;  // largest |output - the rule's output| / largest |the rule's output|
  std::string discarded;  // why the candidate was dropped untimed (beyond the error bound); empty if not
};

CompileRequest candidateRequest(const TuneOptions& t, const Settings& settings, Stage until) {
  CompileRequest request = t.program.request(until);
  request.options.threads = t.threads;
  if (std::string err = loops::parseScheduleText(settingsText(settings), request.options.schedule); !err.empty())
    throw CommandError{kExitRuntime, fmt::format("tune: internal schedule '{}': {}", settingsLabel(settings), err)};
  return request;
}

double relativeDifference(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b);

std::unique_ptr<Candidate> prepare(const TuneOptions& t, const Settings& settings, Workspace& ws, ThreadPool& pool,
                                   std::vector<std::vector<double>>& ruleOutputs) {
  auto c = std::make_unique<Candidate>();
  c->settings = settings;
  c->compilation = compileProgram(candidateRequest(t, settings, Stage::LLVM));
  if (!c->compilation->ok) throw CommandError{kExitProgramError, "the program has errors"};
  CompileState& state = c->compilation->state;
  const Program& g = *state.graph;
  std::vector<Tensor>* tensors = &ws.tensors;
  c->memory = ws.memory.get();
  if (planText(state) != ws.plan) {
    c->ownTensors.resize(g.tensors.size());
    for (int id : g.inputs) c->ownTensors[id] = copyTensor(ws.tensors[id]);
    c->ownMemory = std::make_unique<ProgramMemory>(g, state.memoryPlan ? &*state.memoryPlan : nullptr, c->ownTensors);
    c->memory = c->ownMemory.get();
    tensors = &c->ownTensors;
  }
  c->exe = CpuExecutable::load(std::move(state.llvmContext), std::move(state.llvmModule), *state.loops, t.program.pipeline.optLevel,
                                cpuTarget(t.program.pipeline.cpu));
  c->exe->run(c->memory->prepareRun(), pool);
  // Its results against the reference: a schedule that computes wrong values is never kept.
  applyTestDamage(g, *tensors, settingsLabel(settings));
  for (const OutputCheck& k : checkOutputs(g, *tensors, *state.analysed, ws.reference))
    if (k.beyond()) c->discarded += (c->discarded.empty() ? "" : "; ") + describeWorst(k);
  std::vector<std::vector<double>> outputs;
  for (int id : g.outputs) outputs.push_back(toDoubles((*tensors)[id]));
  c->memory->finishRun();
  if (ruleOutputs.empty()) ruleOutputs = outputs;
  c->maxRelDiff = relativeDifference(ruleOutputs, outputs);
  return c;
}

// Times the candidates in `kRounds` interleaved rounds of `repeat` runs each, so that a change
// of the machine's clock or load during the stage touches them all alike; each round starts one
// candidate further on, so none always runs first. `ms` is the median of all a candidate's runs.
constexpr int kRounds = 3;
void timeInterleaved(std::vector<std::unique_ptr<Candidate>>& candidates, int repeat, ThreadPool& pool) {
  const size_t n = candidates.size();
  for (int round = 0; round < kRounds; ++round)
    for (size_t at = 0; at < n; ++at)
      for (int r = 0; r < repeat; ++r) {
        std::unique_ptr<Candidate>& c = candidates[(at + static_cast<size_t>(round)) % n];
        Stopwatch clock;
        c->exe->run(c->memory->prepareRun(), pool);
        c->samples.push_back(clock.milliseconds());
        c->memory->finishRun();
      }
  for (std::unique_ptr<Candidate>& c : candidates) c->ms = median(c->samples);
}

double relativeDifference(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b) {
  double worst = 0;
  for (size_t o = 0; o < a.size() && o < b.size(); ++o) {
    double scale = 0, diff = 0;
    for (size_t i = 0; i < a[o].size() && i < b[o].size(); ++i) {
      scale = std::max(scale, std::abs(a[o][i]));
      diff = std::max(diff, std::abs(a[o][i] - b[o][i]));
    }
    worst = std::max(worst, scale > 0 ? diff / scale : diff);
  }
  return worst;
}

}  // namespace

int commandTune(const TuneOptions& t) {
  if (t.repeat < 1) throw CommandError{kExitUsage, "--repeat must be >= 1"};
  if (!t.program.schedulePath.empty()) throw CommandError{kExitUsage, "tune starts from the rule: --schedule is not taken"};
  if (t.program.noTile) throw CommandError{kExitUsage, "tune chooses tile settings: --no-tile leaves nothing to tune"};
  (void)t.program.request(Stage::Sema);  // an unknown --cpu is a usage error first
  requireHostRuns(t.program.pipeline.cpu);  // tune times the candidates here

  // The rule's program, through the memory plan: it tells which contractions are tiled (nothing
  // to do without one), and the candidates run in its buffers.
  Workspace ws;
  ws.compilation = compileProgram(candidateRequest(t, {}, Stage::Plan));
  if (!ws.compilation->ok) return kExitProgramError;
  std::vector<std::string> tiled;
  for (const loops::Kernel& k : ws.compilation->state.loops->kernels)
    if (!k.schedule.empty()) tiled.push_back(k.name);
  if (tiled.empty()) {
    std::cout << fmt::format("{}: nothing to tune: no contraction is tiled (the settings apply to tiled contractions only)\n",
                             t.program.file);
    return kExitOk;
  }

  const loops::MachineInfo machine = loops::machineInfo(cpuTarget(t.program.pipeline.cpu));
  const std::string key = cacheKey(t, ws.compilation->file->text(), machine);
  const std::filesystem::path dir = cacheDirectory("tune");
  const std::filesystem::path cached = dir.empty() ? std::filesystem::path() : dir / (key + ".sched");
  const std::string destination = !t.output.empty() ? t.output : cached.string();
  if (destination.empty()) throw CommandError{kExitUsage, "no cache directory (neither XDG_CACHE_HOME nor HOME is set): give -o FILE"};

  std::error_code ec;
  if (!t.force && !cached.empty() && std::filesystem::is_regular_file(cached, ec)) {
    std::unique_ptr<SourceFile> f = readSourceFile(cached.string());
    if (!t.output.empty() && t.output != cached.string()) writeFileAtomic(t.output, f->text());
    std::cout << f->text();
    std::cout << fmt::format("cached: {} (texc tune --force measures again); use it with --schedule {}\n", cached.string(), destination);
    return kExitOk;
  }

  // Inputs from --random, in the workspace.
  const Program& planned = *ws.compilation->state.graph;
  ws.tensors.resize(planned.tensors.size());
  for (size_t k = 0; k < planned.inputs.size(); ++k) {
    const TensorInfo& info = planned.tensors[planned.inputs[k]];
    ws.tensors[planned.inputs[k]] = makeTensor(elemTypeOf(info.dtype), info.shape);
    fillRandom(ws.tensors[planned.inputs[k]], t.seed, k);
  }
  {
    const Program& analysed = *ws.compilation->state.analysed;
    std::vector<RefTensor> refInputs;
    for (int id : planned.inputs) refInputs.push_back({planned.tensors[id].shape, toDoubles(ws.tensors[id])});
    ws.reference = referenceWithBounds(analysed, refInputs, effectiveMathMode(ws.compilation->state.options));
  }
  ws.plan = planText(ws.compilation->state);
  ws.memory = std::make_unique<ProgramMemory>(planned, ws.compilation->state.memoryPlan ? &*ws.compilation->state.memoryPlan : nullptr,
                                              ws.tensors);
  ThreadPool pool(t.threads);

  // One setting at a time, from the rule: register tiles of 1-4 column vectors whose
  // accumulators, column vectors and one broadcast fit in the registers (the most rows, and two
  // fewer); k blocks of half, once and twice the rule's L1 figure; the two loop orders.
  const int W = machine.vectorFloats, R = machine.vectorRegisters;
  std::vector<std::vector<Settings>> stages;
  std::vector<Settings> tiles;
  for (int vectors = 1; vectors <= 4; ++vectors) {
    const int rows = std::min(16, (R - vectors - 1) / vectors);
    for (int mr : {rows, rows - 2})
      if (mr >= 2) tiles.push_back({{"mr", std::to_string(mr)}, {"nr", std::to_string(vectors * W)}});
  }
  stages.push_back(tiles);
  std::vector<Settings> kBlocks;
  for (int64_t kc : {machine.l1Bytes / (2 * W * 4) / 2, machine.l1Bytes / (2 * W * 4), 2 * machine.l1Bytes / (2 * W * 4)})
    kBlocks.push_back({{"kc", std::to_string(kc)}});
  stages.push_back(kBlocks);
  stages.push_back({{{"order", "rows"}}, {{"order", "columns"}}});

  // Each stage times the best so far again next to its variants (interleaved), and moves to a
  // variant only when it beats the best by 2 %: two timings of one schedule differ by up to 1 % here.
  const char* const stageNames[] = {"register tile", "k block", "loop order"};
  struct Row {
    const char* stage;
    Settings settings;
    double ms, vsBest, maxRelDiff;
    std::string discarded;
  };
  std::vector<Row> measured;
  std::vector<Settings> seen = {Settings{}};
  std::vector<std::vector<double>> ruleOutputs;
  Settings best;
  for (size_t stage = 0; stage < stages.size(); ++stage) {
    std::vector<std::unique_ptr<Candidate>> candidates;
    candidates.push_back(prepare(t, best, ws, pool, ruleOutputs));
    if (!candidates[0]->discarded.empty()) {
      // The rule (or a kept candidate, run again) is wrong: there is nothing sound to start from.
      std::cerr << fmt::format("texc: error: tune: {} differs from the float64 reference beyond the error bound: {}\n",
                               settingsLabel(best), candidates[0]->discarded);
      return kExitMismatch;
    }
    for (const Settings& change : stages[stage]) {
      Settings s = best;
      for (const auto& [k, v] : change) s[k] = v;
      if (std::find(seen.begin(), seen.end(), s) != seen.end()) continue;
      seen.push_back(s);
      std::unique_ptr<Candidate> c = prepare(t, s, ws, pool, ruleOutputs);
      if (!c->discarded.empty()) {
        std::cerr << fmt::format("tune: discarded {}: its results differ from the float64 reference beyond the error bound: {}\n",
                                 settingsLabel(s), c->discarded);
        measured.push_back({stageNames[stage], s, 0, 0, c->maxRelDiff, c->discarded});
        continue;
      }
      candidates.push_back(std::move(c));
    }
    timeInterleaved(candidates, t.repeat, pool);
    const double incumbent = candidates[0]->ms;
    size_t winner = 0;
    for (size_t i = 0; i < candidates.size(); ++i) {
      const Candidate& c = *candidates[i];
      measured.push_back({stageNames[stage], c.settings, c.ms, incumbent / c.ms, c.maxRelDiff, ""});
      if (c.ms < candidates[winner]->ms && c.ms < incumbent * kMinGain) winner = i;
    }
    if (winner == 0) continue;
    // A winner must win again, timed alone against the best so far: the fastest of several
    // candidates is often one that was lucky.
    std::vector<std::unique_ptr<Candidate>> pair;
    pair.push_back(std::move(candidates[0]));
    pair.push_back(std::move(candidates[winner]));
    for (std::unique_ptr<Candidate>& c : pair) c->samples.clear();
    timeInterleaved(pair, t.repeat, pool);
    for (const std::unique_ptr<Candidate>& c : pair)
      measured.push_back({"confirm", c->settings, c->ms, pair[0]->ms / c->ms, c->maxRelDiff, ""});
    if (pair[1]->ms < pair[0]->ms * kMinGain) best = pair[1]->settings;
  }

  std::vector<std::vector<std::string>> rows = {{"stage", "settings", "median ms", "vs the stage's first", "max rel diff"}};
  std::string discardedText;
  for (const Row& r : measured) {
    if (!r.discarded.empty()) {
      rows.push_back({r.stage, settingsLabel(r.settings), "discarded", "-", fmt::format("{:.1e}", r.maxRelDiff)});
      discardedText += fmt::format("# discarded {}: beyond the error bound: {}\n", settingsLabel(r.settings), r.discarded);
      continue;
    }
    rows.push_back({r.stage, settingsLabel(r.settings), fmt::format("{:.3f}", r.ms), fmt::format("{:.3f}x", r.vsBest),
                    fmt::format("{:.1e}", r.maxRelDiff)});
  }
  std::string table = renderTable(rows);
  std::string defines, kernels;
  for (const std::string& d : t.program.defines) defines += " -D " + d;
  for (const std::string& k : tiled) kernels += (kernels.empty() ? "" : ", ") + k;
  std::string text = fmt::format("# texc tune {}{}: {} thread(s), --fuse={}, median of {} x {} runs (interleaved rounds), inputs --random {}\n",
                                 t.program.file, defines, pool.numThreads(), t.program.fuse, kRounds, t.repeat, t.seed);
  text += fmt::format("# tiled kernels: {}\n", kernels);
  for (size_t at = 0, next; at < table.size(); at = next + 1) {
    next = table.find('\n', at);
    if (next == std::string::npos) next = table.size();
    text += "# " + table.substr(at, next - at) + "\n";
  }
  text += discardedText;
  text += fmt::format("# best: {}\n", settingsLabel(best));
  text += settingsText(best);
  if (!cached.empty()) {
    std::filesystem::create_directories(dir, ec);
    if (!ec) writeFileAtomic(cached.string(), text);
  }
  if (!t.output.empty()) writeFileAtomic(t.output, text);
  std::cout << text;
  std::cout << fmt::format("written to {}; use it with --schedule {}\n", destination, destination);
  return kExitOk;
}

}  // namespace texc
