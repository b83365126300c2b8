// texc compare: the same program unfused, with elementwise fusion and fully fused, each with its
// memory plan, and unfused and fused again without one (--no-plan), and, where online-softmax
// rewrote something, fused without it (`materialized`: the N x N scores stored), run on the same
// random inputs: kernels, modelled bytes, FLOPs and arithmetic intensity, measured time (median of
// repeats after a warm-up), effective bandwidth, the memory held for intermediates and the growth
// of the resident set, and each variant's error against the float64 reference, judged by the
// per-element error bound (exit 4 when a variant is beyond it).
#include <fmt/format.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <optional>
#include <iostream>
#include <string_view>

#include "compiler/analysis/Cost.h"
#include "compiler/analysis/HostModel.h"
#include "compiler/backend/cuda/CudaExecutable.h"
#include "compiler/backend/llvm/CpuExecutable.h"
#include "compiler/driver/Commands.h"
#include "compiler/driver/Execution.h"
#include "compiler/driver/TextTable.h"
#include "compiler/reference/Reference.h"
#include "runtime/ThreadPool.h"
#include "runtime/Timer.h"

namespace texc {

namespace {

// Whether `p` calls an elementary function that --math=fast changes (exp, log, tanh, sigmoid, erf).
bool usesFastMathForm(const Program& p) {
  bool found = false;
  for (const Computation& c : p.computations)
    forEachValue(c.body, [&](const Value& v) {
      const Builtin b = v.builtin;
      found = found || (v.kind == ValueKind::Call && (b == Builtin::Exp || b == Builtin::Log || b == Builtin::Tanh ||
                                                     b == Builtin::Sigmoid || b == Builtin::Erf));
    });
  return found;
}

}  // namespace

int commandCompare(const CompareOptions& o) { return runCompare(o, std::cout, nullptr); }

int runCompare(const CompareOptions& o, std::ostream& out, CompareReport* report) {
  if (o.repeat < 1) throw CommandError{kExitUsage, "--repeat must be >= 1"};
  bool cuda = o.target == "cuda";
  // The analysed program gives the inputs and the float64 reference.
  std::unique_ptr<Compilation> analysed = compileProgram(o.program.request(Stage::Sema));
  if (!cuda) requireHostRuns(o.program.pipeline.cpu);
  if (!analysed->ok) return kExitProgramError;
  const Program& sema = *analysed->state.graph;
  std::vector<Tensor> inputs(sema.inputs.size());
  std::vector<RefTensor> refInputs;
  for (size_t k = 0; k < sema.inputs.size(); ++k) {
    const TensorInfo& t = sema.tensors[sema.inputs[k]];
    inputs[k] = makeTensor(elemTypeOf(t.dtype), t.shape);
    fillRandom(inputs[k], o.seed, k);
    refInputs.push_back({t.shape, toDoubles(inputs[k])});
  }
  const MathMode chosenMath = cuda ? MathMode::Precise : parseMathMode(o.program.math).value_or(MathMode::Precise);
  const CheckedReference reference = referenceWithBounds(sema, refInputs, chosenMath);
  // The `fused --math=fast` variant's bounds, made when it runs.
  std::optional<CheckedReference> fastReference;

  // --target cuda: every variant runs on GPU 0, timed by events around its kernels.
  std::unique_ptr<CudaDevice> gpu;
  if (cuda) {
    try {
      gpu = CudaDevice::open();
    } catch (const std::runtime_error& e) {
      throw CommandError{kExitRuntime, fmt::format("--target cuda: {}", e.what())};
    }
  }
  ThreadPool pool(cuda ? 1 : o.threads);
  HardwareModel host = hostHardwareModel();
  std::vector<std::vector<std::string>> rows = {{"variant", "kernels", "bytes (model)", "FLOPs", "FLOP/B", "median ms", "min ms", "GB/s",
                                                 "of host BW", "GFLOP/s", "temp memory", "RSS growth", "max abs err",
                                                 "max rel err", "error bound"}};
  struct Result {
    std::string name;
    size_t kernels;
    double bytes, flops, ms, gbps;
    int64_t intermediateBytes, rssGrowth;
    bool planned;
    ErrorStats error;
    std::vector<OutputCheck> checks;
  };
  struct Variant {
    const char* name;
    const char* fuse;
    bool plan;
    const char* disabled = nullptr;  // a pass left out (--disable-pass)
    const char* math = nullptr;      // --math for this variant (null: the command's)
  };
  // Each unplanned variant runs just before its planned twin. A variant's memory is freed when it
  // is done, so the resident set it adds is measured from what the earlier ones left.
  std::vector<Variant> variants = {{"unfused-unplanned", "none", false},
                                   {"unfused", "none", true},
                                   {"elementwise", "elementwise", true},
                                   {"fused-unplanned", "all", false},
                                   {"fused", "all", true}};
  std::vector<Result> results;
  std::string kernelsText;
  for (size_t vi = 0; vi < variants.size(); ++vi) {
    const Variant variant = variants[vi];
    const char* fuse = variant.fuse;
    ProgramOptions opts = o.program;
    opts.fuse = fuse;
    if (variant.disabled) opts.disablePasses.push_back(variant.disabled);
    if (variant.math) opts.math = variant.math;
    opts.noPlan = o.program.noPlan || !variant.plan;
    CompileRequest request = opts.request(cuda ? Stage::CUDA : Stage::LLVM);
    if (cuda) request.options.target = Target::Cuda;
    request.options.threads = o.threads;
    request.printedPassesMustRun = false;  // --fuse=none leaves fuse out of two variants
    std::unique_ptr<Compilation> c = compileProgram(request);
    if (!c->ok) return kExitProgramError;
    const Program& g = *c->state.graph;
    if (std::string_view(variant.name) == "fused" && hasOnlineNode(g)) variants.push_back({"materialized", "all", true, "online-softmax"});
    // Where the program calls a function with a fast form, the fused program with them too.
    if (std::string_view(variant.name) == "fused" && chosenMath == MathMode::Precise && usesFastMathForm(sema))
      variants.push_back({"fused --math=fast", "all", true, nullptr, "fast"});
    std::vector<KernelCost> costs = costOfKernels(g);
    // The kernels that run: the loop IR's (fuse-into-tiles may have put two of the graph's in one);
    // bytes and FLOPs stay the graph's model.
    const size_t kernelCount = c->state.loops ? c->state.loops->kernels.size() : costs.size();
    if (o.emitLoops && variant.plan)
      kernelsText += fmt::format("// ----- --fuse={}{} -----\n{}", fuse, variant.disabled ? fmt::format(" --disable-pass={}", variant.disabled) : "",
                                 printStage(c->state, Stage::Loops));
    double bytes = 0, flops = 0;
    for (const KernelCost& k : costs) {
      bytes += k.bytes();
      flops += k.flops;
    }
    std::unique_ptr<CpuExecutable> exe;
    std::unique_ptr<CudaExecutable> gpuExe;
    try {
      if (cuda) gpuExe = CudaExecutable::load(*gpu, *c->state.cuda, *c->state.loops, c->state.memoryPlan ? &*c->state.memoryPlan : nullptr);
    } catch (const std::runtime_error& e) {
      throw CommandError{kExitRuntime, fmt::format("--target cuda: {}", e.what())};
    }
    if (!cuda)
      exe = CpuExecutable::load(std::move(c->state.llvmContext), std::move(c->state.llvmModule), *c->state.loops, opts.pipeline.optLevel,
                                  cpuTarget(opts.pipeline.cpu));
    std::vector<Tensor> tensors(g.tensors.size());
    for (size_t k = 0; k < g.inputs.size(); ++k) tensors[g.inputs[k]] = copyTensor(inputs[k]);
    // The resident set before this variant's memory, and while its last run still holds it.
    int64_t rssBefore = residentBytes();
    ProgramMemory memory(g, c->state.memoryPlan ? &*c->state.memoryPlan : nullptr, tensors);
    std::vector<double> samples;
    int64_t rssDuring = 0;
    if (cuda) {
      gpuExe->run(memory.prepareRun());  // warm-up; brings the outputs back for the error columns
      memory.finishRun();
      for (int r = 0; r < o.repeat; ++r) samples.push_back(gpuExe->runKernelsTimed());
      rssDuring = residentBytes();
    } else {
      exe->run(memory.prepareRun(), pool);  // warm-up
      memory.finishRun();
      for (int r = 0; r < o.repeat; ++r) {
        Stopwatch clock;
        exe->run(memory.prepareRun(), pool);
        if (r + 1 != o.repeat) {
          memory.finishRun();
          samples.push_back(clock.milliseconds());
          continue;
        }
        double ms = clock.milliseconds();
        rssDuring = residentBytes();  // read outside the timed part
        clock.reset();
        memory.finishRun();
        samples.push_back(ms + clock.milliseconds());
      }
    }
    int64_t rssGrowth = rssBefore >= 0 && rssDuring >= 0 ? rssDuring - rssBefore : -1;
    double med = median(samples), best = *std::min_element(samples.begin(), samples.end());
    // The outputs of the last run, against the reference and the error bound.
    applyTestDamage(g, tensors, variant.name);
    const bool fastVariant = variant.math && std::string_view(variant.math) == "fast";
    if (fastVariant && !fastReference) fastReference = referenceWithBounds(sema, refInputs, MathMode::Fast);
    std::vector<OutputCheck> checks = checkOutputs(g, tensors, sema, fastVariant ? *fastReference : reference);
    ErrorStats worst;
    for (const OutputCheck& k : checks) {
      worst.maxAbs = std::max(worst.maxAbs, k.error.maxAbs);
      worst.maxRel = std::max(worst.maxRel, k.error.maxRel);
    }
    std::string name = variant.name;
    if (o.program.noPlan && variant.plan) name += " (--no-plan)";
    double gbps = bytes / (med * 1e6);
    rows.push_back({name, std::to_string(kernelCount), bytesText(bytes), countText(flops, "FLOP"),
                    fmt::format("{:.3f}", bytes > 0 ? flops / bytes : 0.0), fmt::format("{:.3f}", med), fmt::format("{:.3f}", best),
                    fmt::format("{:.2f}", gbps), cuda ? std::string("-") : fmt::format("{:.2f}", gbps / host.bandwidthGBs),
                    fmt::format("{:.2f}", flops / (med * 1e6)), bytesText(static_cast<double>(memory.intermediateBytes())),
                    rssGrowth < 0 ? std::string("?") : bytesText(static_cast<double>(rssGrowth)), fmt::format("{:.2g}", worst.maxAbs),
                    fmt::format("{:.2g}", worst.maxRel), anyBeyond(checks) ? "BEYOND" : "within"});
    results.push_back({name, kernelCount, bytes, flops, med, gbps, memory.intermediateBytes(), rssGrowth,
                       c->state.memoryPlan.has_value(), worst, std::move(checks)});
  }
  // A 1-thread CPU run that moved at least twice the copy's 128 MiB (so not out of a cache) and
  // achieved more than the host model says is a better bandwidth figure: raise the cache to it.
  std::string raised;
  if (!cuda && pool.numThreads() == 1) {
    const Result* best = nullptr;
    for (const Result& r : results)
      if (r.bytes >= 2.0 * 128 * 1024 * 1024 && (!best || r.gbps > best->gbps)) best = &r;
    if (best && best->gbps > host.bandwidthGBs &&
        recordHostBandwidth(best->gbps, fmt::format("1 thread, achieved by texc compare ({} variant of {}, {} moved)", best->name,
                                                    o.program.file, bytesText(best->bytes))))
      raised = fmt::format(" This run achieved {:.1f} GB/s ({}), now the cached figure.", best->gbps, best->name);
  }
  // Every output of every variant beyond its bound, one line each (worst element first).
  std::string beyond, beyondNames;
  for (const Result& r : results) {
    for (const OutputCheck& k : r.checks)
      if (k.beyond()) beyond += fmt::format("variant {}: BEYOND the error bound: {}\n", r.name, describeWorst(k));
    if (anyBeyond(r.checks)) beyondNames += (beyondNames.empty() ? "" : ", ") + r.name;
  }
  auto finish = [&] {
    if (beyond.empty()) return static_cast<int>(kExitOk);
    if (o.json) std::cerr << beyond;
    std::cerr << fmt::format("texc: error: results of {} differ from the float64 reference beyond the error bound\n", beyondNames);
    return static_cast<int>(kExitMismatch);
  };
  if (report) {
    report->table = rows;
    for (const Result& r : results) report->variants.push_back({r.name, r.kernels, r.bytes, r.flops, r.ms, r.gbps, !anyBeyond(r.checks)});
  }
  if (o.json) {
    std::string json = "{\"variants\": [";
    for (size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      json += fmt::format("{}{{\"name\": \"{}\", \"kernels\": {}, \"bytes_moved\": {:.0f}, \"flops\": {:.0f}, "
                         "\"arithmetic_intensity\": {:.6g}, \"time_ms\": {:.6g}, "
                         "\"gbps\": {:.6g}, \"max_abs_error\": {:.6g}, \"max_rel_error\": {:.6g}, \"within_bound\": {}, "
                         "\"planned\": {}, \"intermediate_bytes\": {}, \"rss_growth_bytes\": {}}}",
                         i ? ", " : "", r.name, r.kernels, r.bytes, r.flops, r.bytes > 0 ? r.flops / r.bytes : 0.0, r.ms, r.gbps,
                         r.error.maxAbs, r.error.maxRel,
                         anyBeyond(r.checks) ? "false" : "true", r.planned ? "true" : "false", r.intermediateBytes, r.rssGrowth);
    }
    out << json << "]}\n";
    return finish();
  }
  out << kernelsText;
  out << fmt::format("{}: {}, median of {} runs after a warm-up, inputs --random {}\n", o.program.file,
                           cuda ? "on " + gpu->name() + " (CUDA events around the kernels)" : fmt::format("{} threads", pool.numThreads()),
                           o.repeat, o.seed);
  out << renderTable(rows);
  auto msOf = [&](size_t variantIndex) { return results[variantIndex].ms; };
  out << fmt::format("fused is {:.2f}x faster than unfused; the memory plan makes unfused {:.2f}x and fused {:.2f}x faster.\n",
                           msOf(1) / msOf(4), msOf(0) / msOf(1), msOf(3) / msOf(4));
  auto indexOf = [&](std::string_view name) {
    for (size_t i = 0; i < results.size(); ++i)
      if (results[i].name == name) return static_cast<int>(i);
    return -1;
  };
  if (int m = indexOf("materialized"); m >= 0)
    out << fmt::format("online softmax: fused is {:.2f}x faster than materialized (--disable-pass=online-softmax), with {} of temp memory against {}.\n",
                             msOf(m) / msOf(4), bytesText(static_cast<double>(results[4].intermediateBytes)),
                             bytesText(static_cast<double>(results[m].intermediateBytes)));
  if (int f = indexOf("fused --math=fast"); f >= 0)
    out << fmt::format("--math=fast: fused is {:.2f}x faster with the fast elementary functions (max rel error {:.2g} against {:.2g}; "
                             "docs/vector-math.md).\n",
                             msOf(4) / msOf(f), results[f].error.maxRel, results[4].error.maxRel);
  out << fmt::format("Host bandwidth {:.1f} GB/s ({}).{}\n", host.bandwidthGBs, host.source, raised);
  out << "temp memory: the arena (planned) or the intermediates' buffers, allocated every run (unplanned);\n"
               "RSS growth: the resident set during the last run minus before the variant (docs/memory-planning.md).\n";
  out << "GB/s divides the modelled bytes by the median time (docs/cost-model.md).\n";
  out << "error bound: every element within atol + rtol*|ref| + 3*bound of the float64 reference (docs/testing.md).\n";
  out << beyond;
  return finish();
}

}  // namespace texc
