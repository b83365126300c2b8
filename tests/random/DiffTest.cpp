#include "tests/random/DiffTest.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <set>
#include <iostream>
#include <limits>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "compiler/backend/llvm/CpuExecutable.h"
#include "compiler/driver/Execution.h"
#include "compiler/passes/PassManager.h"
#include "compiler/passes/Pipeline.h"
#include "compiler/reference/Reference.h"
#include "frontend/Diagnostics.h"
#include "frontend/Parser.h"
#include "frontend/Sema.h"
#include "frontend/Source.h"
#include "runtime/Buffer.h"
#include "runtime/Half.h"
#include "runtime/ThreadPool.h"
#include "compiler/reference/ErrorBound.h"
#include "compiler/reference/Tolerance.h"
#include "tests/random/EmulatedCuda.h"

namespace texc::random {

const std::vector<Variant>& variants() {
  // One line per pipeline configuration. When a switch lands, add its field to PipelineOptions
  // and a line here.
  auto with = [](int optLevel, FuseMode fuse, bool plan, bool tile, std::set<std::string> disabled = {}) {
    PipelineOptions o;
    o.optLevel = optLevel;
    o.fuse = fuse;
    o.planMemory = plan;
    o.tile = tile;
    o.disabledPasses = std::move(disabled);
    return o;
  };
  static const std::vector<Variant> table = {
      {"--fuse=all -O3", with(3, FuseMode::All, true, true), {1, 2}},
      {"--fuse=elementwise -O3", with(3, FuseMode::Elementwise, true, true), {1, 2}},
      {"--fuse=none -O3", with(3, FuseMode::None, true, true), {1, 2}},
      {"--fuse=all -O0", with(0, FuseMode::All, true, true), {1, 2}},
      {"--fuse=elementwise -O0", with(0, FuseMode::Elementwise, true, true), {1, 2}},
      {"--fuse=none -O0", with(0, FuseMode::None, true, true), {1, 2}},
      {"--no-plan -O3", with(3, FuseMode::All, false, true), {2}},
      {"--fuse=none --no-plan -O3", with(3, FuseMode::None, false, true), {1}},
      {"--no-tile -O3", with(3, FuseMode::All, true, false), {2}},
      {"--no-tile --no-plan -O0", with(0, FuseMode::All, false, false), {1}},
      {"--disable-pass=online-softmax -O3", with(3, FuseMode::All, true, true, {"online-softmax"}), {2}},
      {"--math=fast -O3", [&] {
         PipelineOptions o = with(3, FuseMode::All, true, true);
         o.math = MathMode::Fast;
         return o;
       }(), {2}},
  };
  // The CUDA target through the emulation (EmulatedCuda.h), where a host C++ compiler exists.
  static const std::vector<Variant> withCuda = [&] {
    std::vector<Variant> all = table;
    const std::string& problem = prepareCudaEmulation();
    if (!problem.empty()) {
      std::cerr << "texc-difftest: the --target cuda (emulated) variant is skipped: " << problem << "\n";
      return all;
    }
    PipelineOptions cuda = with(3, FuseMode::All, true, false);
    cuda.target = Target::Cuda;
    all.push_back({"--target cuda (emulated)", cuda, {1}});
    return all;
  }();
  return withCuda;
}

std::vector<Variant> crossCpuVariants(const std::string& cpu) {
  std::vector<Variant> out;
  auto add = [&](const std::string& base, const std::string& other) {
    for (const Variant& v : variants())
      if (v.name == base) out.push_back({base + " --cpu " + other, v.options, {2}, base}), out.back().options.cpu = other;
  };
  // Untiled: a tile multiplies and adds with llvm.fmuladd, which SSE2 cannot fuse, and bf16
  // tiles use the CPU's bf16 dot products where it has them. SSE2's 4 lanes run on every x86
  // host, AVX2's 8 on the AVX-512 ones.
  add("--no-tile -O3", "x86-64");
  // SSE2's 16 registers on every host: split-chains applies (loops/SplitChains.h).
  for (const Variant& v : variants())
    if (v.name == "--no-tile -O3") {
      Variant phases = {v.name + " --cpu x86-64 (split-chains in blocks of 4 iterations)", v.options, {2}, v.name + " --cpu x86-64"};
      phases.options.cpu = "x86-64";
      phases.options.phaseBlock = 4;
      out.push_back(phases);
    }
  if (texc::cpuTarget(cpu).vectorFloats() == 16 && texc::missingHostFeatures(texc::cpuTarget("haswell")).empty())
    add("--no-tile -O3", "haswell");
  return out;
}

std::vector<Variant> variantsFor(const std::string& cpu) {
  std::vector<Variant> out = variants();
  for (Variant& v : out)
    if (v.options.target == Target::Cpu) v.options.cpu = cpu;
  for (Variant& v : crossCpuVariants(cpu)) out.push_back(std::move(v));
  return out;
}

const char* verdictName(Verdict v) {
  switch (v) {
    case Verdict::Pass: return "pass";
    case Verdict::Invalid: return "invalid";
    case Verdict::Inconclusive: return "inconclusive";
    case Verdict::Mismatch: return "mismatch";
    case Verdict::Crash: return "crash";
    case Verdict::Hang: return "hang";
  }
  return "?";
}

bool isFailure(Verdict v) { return v == Verdict::Mismatch || v == Verdict::Crash || v == Verdict::Hang; }

namespace {

bool identical(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// Computed buffers start as NaN rather than zero, so an element no kernel writes shows up.
void poison(Tensor& t) {
  int64_t n = numElements(t);
  for (int64_t i = 0; i < n; ++i) {
    switch (t.type) {
      case ElemType::F32: t.data.as<float>()[i] = std::numeric_limits<float>::quiet_NaN(); break;
      case ElemType::F64: t.data.as<double>()[i] = std::numeric_limits<double>::quiet_NaN(); break;
      case ElemType::F16: t.data.as<uint16_t>()[i] = 0x7E00; break;
      case ElemType::BF16: t.data.as<uint16_t>()[i] = 0x7FC0; break;
    }
  }
}

// Compares every output of one run (`tensors`, by tensor id of the compiled graph `p`) with the
// reference; appends problems to `out`. `label` names the run in the report.
void compareOutputs(const std::string& label, const Program& p, const std::vector<Tensor>& tensors, const Program& analysed,
                    const std::vector<RefTensor>& ref, const BoundResult& bounds, bool damage, Outcome& out) {
  for (size_t k = 0; k < p.outputs.size(); ++k) {
    int refId = analysed.outputs[k];
    const TensorInfo& info = analysed.tensors[refId];
    std::vector<double> got = toDoubles(tensors[p.outputs[k]]);
    if (damage && k == 0 && !got.empty()) got[0] += 1e-3 * (1 + std::fabs(got[0]));
    if (got.size() != ref[refId].data.size()) {
      out.verdict = Verdict::Mismatch;
      out.report += "[" + label + "] output " + info.name + " has the wrong size\n";
      continue;
    }
    Comparison c = compareValues(ref[refId].data, bounds.bounds[refId], got, info.shape, toleranceFor(info.dtype));
    if (c.mismatches > 0) {
      out.verdict = Verdict::Mismatch;
      out.report += "[" + label + "] output " + info.name + ": " + std::to_string(c.mismatches) + " of " +
                    std::to_string(c.elements) + " elements differ\n" + c.details;
    } else if (c.uncertain * 4 > c.elements && out.verdict == Verdict::Pass) {
      out.verdict = Verdict::Inconclusive;
      out.report = "output " + info.name + ": " + std::to_string(c.uncertain) + " of " + std::to_string(c.elements) +
                   " elements are uncertain\n";
    }
  }
}

// Runs the pipeline of variant `v` up to `until` into `s` (the caller owns the file and the
// diagnostics it points to), with the IR verifiers after every pass: a verifier failure is a bug
// the random programs should surface. A valid program that fails to compile is a mismatch.
bool compileVariant(const SourceFile& file, DiagnosticEngine& diags, const Variant& v, Stage until, CompileState& s,
                    Outcome& out) {
  s.file = &file;
  s.diags = &diags;
  s.options = v.options;
  Instrumentation inst;
  inst.verifyEachPass = true;
  const bool ran = runPipeline(s, buildPipeline(s.options, until), inst);
  if (ran && (until == Stage::LLVM ? s.llvmModule != nullptr : s.loops.has_value())) return true;
  out.verdict = Verdict::Mismatch;
  out.report += "[" + v.name + "] a valid program failed to compile:\n" + diags.render();
  return false;
}

// The CUDA target, run through the emulation: the pipeline up to the memory plan, CUDA C with
// small blocks and a small grid (so grid-stride loops take several rounds and block reductions
// combine several warps), compiled with the host compiler and run in a device-like arena.
void checkEmulatedCuda(const std::string& source, const Variant& v, const Program& analysed, const std::vector<Tensor>& inputs,
                       const std::vector<RefTensor>& ref, const BoundResult& bounds, bool damage, Outcome& out) {
  SourceFile file("random.tex", source);
  DiagnosticEngine diags(&file);
  CompileState s;
  if (!compileVariant(file, diags, v, Stage::Plan, s, out)) return;
  CudaCodeGenOptions opts;
  opts.threadsPerBlock = 64;
  opts.maxBlocks = 3;
  CudaModule module = generateCUDA(*s.loops, opts);
  std::vector<std::string> problems = verifyCudaModule(module, *s.loops);
  if (!problems.empty()) {
    out.verdict = Verdict::Mismatch;
    out.report += "[" + v.name + "] the CUDA module does not verify: " + problems.front() + "\n";
    return;
  }
  const Program& p = *s.graph;
  std::vector<Tensor> tensors(p.tensors.size());
  std::vector<void*> host(p.tensors.size(), nullptr);
  for (size_t k = 0; k < p.inputs.size(); ++k) {
    tensors[p.inputs[k]] = copyTensor(inputs[k]);
  }
  for (int id : p.outputs) {
    tensors[id] = makeTensor(elemTypeOf(p.tensors[id].dtype), p.tensors[id].shape);
    poison(tensors[id]);
  }
  for (size_t id = 0; id < tensors.size(); ++id) host[id] = tensors[id].data.data();
  runEmulatedCuda(module, *s.loops, s.memoryPlan ? &*s.memoryPlan : nullptr, host.data());
  ++out.variantRuns;
  compareOutputs(v.name, p, tensors, analysed, ref, bounds, damage, out);
}

// The outputs of one CPU run as values, by run label ("--fuse=none -O3 --threads 2"), for the
// comparison between fusion modes below.
using RunOutputs = std::map<std::string, std::vector<std::vector<double>>>;

// Compiles, runs and compares one variant; appends problems to `out`, and, when `kept` is given,
// the outputs of each thread count's last run to it.
void checkVariant(const std::string& source, const Variant& v, const Program& analysed, const std::vector<Tensor>& inputs,
                  const std::vector<RefTensor>& ref, const BoundResult& bounds, bool damage, Outcome& out, RunOutputs* kept) {
  if (v.options.target == Target::Cuda) return checkEmulatedCuda(source, v, analysed, inputs, ref, bounds, damage, out);
  SourceFile file("random.tex", source);
  DiagnosticEngine diags(&file);
  CompileState s;
  if (!compileVariant(file, diags, v, Stage::LLVM, s, out)) return;
  const Program& p = *s.graph;
  std::unique_ptr<CpuExecutable> exe =
      CpuExecutable::load(std::move(s.llvmContext), std::move(s.llvmModule), *s.loops, v.options.optLevel);
  for (int threads : v.threads) {
    std::vector<Tensor> tensors(p.tensors.size());
    for (size_t k = 0; k < p.inputs.size(); ++k) {
      tensors[p.inputs[k]] = copyTensor(inputs[k]);
    }
    // The memory the driver gives a run: the planned arena (in-place kernels read their input
    // through the output's pointer), or with --no-plan a buffer per intermediate. Poisoned: the
    // arena, intermediates and outputs start as NaN, and a second run starts from what the first
    // left, so reading an element before writing it, or not writing it, fails (docs/testing.md).
    ProgramMemory memory(p, s.memoryPlan ? &*s.memoryPlan : nullptr, tensors, /*poison=*/true);
    ThreadPool pool(threads);
    for (int run = 1; run <= 2; ++run) {
      exe->run(memory.prepareRun(), pool);
      memory.finishRun();
      compareOutputs(v.name + " --threads " + std::to_string(threads) + " (run " + std::to_string(run) + " on poisoned memory)",
                     p, tensors, analysed, ref, bounds, damage, out);
    }
    if (kept) {
      std::vector<std::vector<double>>& values = (*kept)[v.name + " --threads " + std::to_string(threads)];
      for (int id : p.outputs) values.push_back(toDoubles(tensors[id]));
    }
    ++out.variantRuns;
  }
}

// The same bits: NaN meets NaN (any payload), a zero keeps its sign.
bool sameBits(double a, double b) { return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b)); }

// Runs `a` and `b` (outputs by run label) output by output, element by element: the first
// difference in an output is a mismatch, reported as `label output NAME: what, first at ...`.
void compareBits(const Program& analysed, const RunOutputs::value_type& a, const RunOutputs::value_type& b, const std::string& label,
                 const std::string& what, bool damage, Outcome& out) {
  for (size_t k = 0; k < analysed.outputs.size() && k < a.second.size() && k < b.second.size(); ++k) {
    const std::vector<double>& x = a.second[k];
    const std::vector<double>& y = b.second[k];
    for (size_t i = 0; i < x.size() && i < y.size(); ++i)
      if (!sameBits(damage && k == 0 && i == 0 ? std::nextafter(x[i], INFINITY) : x[i], y[i])) {
        out.verdict = Verdict::Mismatch;
        out.report += label + " output " + analysed.tensors[analysed.outputs[k]].name + ": " + what + ", first at element " +
                      std::to_string(i) + ": " + fmt::format("{}", x[i]) + " against " + fmt::format("{}", y[i]) + "\n";
        break;
      }
  }
}

// Each fused variant against `--fuse=none` at the same -O level and thread count; a difference
// is a mismatch even where both are within the reference's bound.
void compareFusionModes(const Program& analysed, const RunOutputs& kept, bool damage, Outcome& out) {
  for (const char* level : {"-O3", "-O0"})
    for (const char* fused : {"--fuse=all", "--fuse=elementwise"})
      for (int threads : {1, 2}) {
        const std::string suffix = std::string(" ") + level + " --threads " + std::to_string(threads);
        auto a = kept.find(fused + suffix), b = kept.find("--fuse=none" + suffix);
        if (a == kept.end() || b == kept.end()) continue;
        ++out.fusionBitComparisons;
        compareBits(analysed, *a, *b, "[" + a->first + " against --fuse=none]", "fusion gave other bits than --fuse=none", damage, out);
      }
}

// Each variant of crossCpuVariants ("--no-tile -O3 --cpu x86-64") against the variant it copies
// ("--no-tile -O3"), at 2 threads: a sum's order and every function are the same on every CPU
// (loops/SumLanes.h), and a loop in phases computes every value as in one (loops/SplitChains.h),
// so the bits must be too.
void compareCopies(const Program& analysed, const std::vector<Variant>& vs, const RunOutputs& kept, bool damage, Outcome& out) {
  for (const Variant& v : vs) {
    if (v.copies.empty()) continue;
    auto a = kept.find(v.name + " --threads 2"), b = kept.find(v.copies + " --threads 2");
    if (a == kept.end() || b == kept.end()) continue;
    ++out.cpuBitComparisons;
    const std::string what = v.options.phaseBlock > 0 ? "the loops in phases gave other bits" : "the code for " + v.options.cpu + " gave other bits";
    compareBits(analysed, *a, *b, "[" + a->first + " against " + b->first + "]", what, damage, out);
  }
}

}  // namespace

Outcome checkProgram(const std::string& source, const std::vector<Variant>& vs, const CheckOptions& options) {
  Outcome out;
  SourceFile file("random.tex", source);
  DiagnosticEngine diags(&file);
  Module module = parse(file, diags);
  std::optional<Program> analysed;
  if (!diags.hasErrors()) analysed = analyze(module, diags);
  if (!analysed || diags.hasErrors()) {
    out.verdict = Verdict::Invalid;
    out.report = diags.render();
    return out;
  }
  const Program& p = *analysed;

  // Inputs as texc --random makes them; the reference reads exactly the stored values.
  std::vector<Tensor> inputs;
  std::vector<RefTensor> refInputs;
  for (size_t k = 0; k < p.inputs.size(); ++k) {
    const TensorInfo& info = p.tensors[p.inputs[k]];
    inputs.push_back(makeTensor(elemTypeOf(info.dtype), info.shape));
    fillRandom(inputs.back(), options.inputSeed, k);
    refInputs.push_back({info.shape, toDoubles(inputs.back())});
  }
  std::vector<RefTensor> ref;
  BoundResult bounds, fastBounds;  // fastBounds: for the --math=fast variants
  try {
    ref = evaluateReference(p, refInputs);
    bounds = evaluateBounds(p, refInputs);
    fastBounds = evaluateBounds(p, refInputs, MathMode::Fast);
  } catch (const std::exception& e) {
    out.verdict = Verdict::Mismatch;
    out.report = std::string("the reference interpreter failed: ") + e.what() + "\n";
    return out;
  }
  for (size_t id = 0; id < p.tensors.size(); ++id)
    for (size_t i = 0; i < ref[id].data.size(); ++i)
      if (!identical(ref[id].data[i], bounds.values[id].data[i])) {
        out.verdict = Verdict::Mismatch;
        out.report = "the bound evaluator and the reference disagree on " + p.tensors[id].name + "\n";
        return out;
      }

  RunOutputs kept;
  for (const Variant& v : vs) {
    try {
      const bool fast = v.options.math == MathMode::Fast && v.options.target == Target::Cpu;
      checkVariant(source, v, p, inputs, ref, fast ? fastBounds : bounds, options.damageForTest, out, &kept);
    } catch (const std::exception& e) {
      out.verdict = Verdict::Mismatch;
      out.report += "[" + v.name + "] exception: " + e.what() + "\n";
    }
  }
  compareFusionModes(p, kept, options.damageForTest, out);
  compareCopies(p, vs, kept, options.damageForTest, out);
  return out;
}

namespace {

// Reads whatever is available on `fd` into `into`; false at end of file.
bool drain(int fd, std::string& into) {
  char buf[4096];
  ssize_t n = read(fd, buf, sizeof buf);
  if (n > 0) {
    into.append(buf, static_cast<size_t>(n));
    return true;
  }
  return n < 0 && errno == EINTR;
}

}  // namespace

Outcome runIsolated(const std::string& source, const std::vector<Variant>& vs, double timeoutSeconds,
                    const CheckOptions& options) {
  int result[2], errors[2];
  if (pipe(result) != 0 || pipe(errors) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    close(result[0]);
    close(errors[0]);
    dup2(errors[1], 2);
    Outcome o = checkProgram(source, vs, options);
    std::string msg = std::string(1, static_cast<char>(o.verdict)) + std::to_string(o.variantRuns) + " " +
                      std::to_string(o.fusionBitComparisons) + " " + std::to_string(o.cpuBitComparisons) + "\n" + o.report;
    for (size_t off = 0; off < msg.size();) {
      ssize_t n = write(result[1], msg.data() + off, msg.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    _exit(0);
  }
  close(result[1]);
  close(errors[1]);
  std::string msg, err;
  bool openResult = true, openErrors = true, timedOut = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSeconds);
  while (openResult || openErrors) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      timedOut = true;
      kill(pid, SIGKILL);
      break;
    }
    pollfd fds[2] = {{openResult ? result[0] : -1, POLLIN, 0}, {openErrors ? errors[0] : -1, POLLIN, 0}};
    if (poll(fds, 2, static_cast<int>(std::min<long long>(left, 1000))) < 0 && errno != EINTR) break;
    if (openResult && (fds[0].revents & (POLLIN | POLLHUP))) openResult = drain(result[0], msg);
    if (openErrors && (fds[1].revents & (POLLIN | POLLHUP))) openErrors = drain(errors[0], err);
  }
  close(result[0]);
  close(errors[0]);
  int status = 0;
  waitpid(pid, &status, 0);

  Outcome o;
  const size_t kTail = 4000;
  std::string errTail = err.size() > kTail ? "..." + err.substr(err.size() - kTail) : err;
  if (timedOut) {
    o.verdict = Verdict::Hang;
    o.report = "no result after " + std::to_string(static_cast<int>(timeoutSeconds)) + " s\n" + errTail;
  } else if (WIFSIGNALED(status) || msg.empty()) {
    o.verdict = Verdict::Crash;
    o.report = (WIFSIGNALED(status) ? std::string("killed by signal ") + strsignal(WTERMSIG(status)) : std::string("no result"));
    o.report += "\n" + errTail;
  } else {
    o.verdict = static_cast<Verdict>(msg[0]);
    size_t nl = msg.find('\n');
    const std::string counts = msg.substr(1, nl - 1);
    o.variantRuns = std::atoi(counts.c_str());
    const size_t space = counts.find(' ');
    if (space != std::string::npos) o.fusionBitComparisons = std::atoi(counts.c_str() + space + 1);
    const size_t second = space == std::string::npos ? space : counts.find(' ', space + 1);
    if (second != std::string::npos) o.cpuBitComparisons = std::atoi(counts.c_str() + second + 1);
    o.report = msg.substr(nl + 1);
  }
  return o;
}

}  // namespace texc::random
