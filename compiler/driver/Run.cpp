// texc run: compile, bind inputs, run on the CPU, write outputs all or nothing, and optionally
// compare with the float64 reference.
#include <sys/resource.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <vector>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "compiler/backend/cuda/CudaExecutable.h"
#include "compiler/backend/llvm/CpuExecutable.h"
#include "compiler/backend/llvm/Profile.h"
#include "compiler/driver/Commands.h"
#include "compiler/driver/Execution.h"
#include "compiler/driver/Frontend.h"
#include "compiler/reference/Reference.h"
#include "runtime/Npy.h"
#include "runtime/Sampler.h"
#include "runtime/ThreadPool.h"
#include "runtime/Timer.h"

namespace texc {

namespace {

std::map<std::string, std::string> parseInputs(const std::vector<std::string>& specs, const Program& p) {
  std::map<std::string, std::string> out;
  for (const std::string& s : specs) {
    size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
      throw CommandError{kExitUsage, fmt::format("--input '{}': expected NAME=PATH.npy", s)};
    std::string name = s.substr(0, eq);
    int id = p.findTensor(name);
    if (id < 0 || !p.tensors[id].isInput)
      throw CommandError{kExitUsage, fmt::format("--input {}: the program has no input named '{}'", name, name)};
    if (out.count(name)) throw CommandError{kExitUsage, fmt::format("--input {} is given twice", name)};
    out[name] = s.substr(eq + 1);
  }
  return out;
}

// Remembers which directories of `dir` do not exist yet; unless keep() is called, removes them
// again (deepest first, and only while empty) on destruction.
class CreatedDirectories {
 public:
  explicit CreatedDirectories(const std::filesystem::path& dir) {
    std::error_code ec;
    for (std::filesystem::path d = dir; !d.empty() && !std::filesystem::exists(d, ec); d = d.parent_path()) {
      missing_.push_back(d);
      if (d == d.parent_path()) break;
    }
  }
  ~CreatedDirectories() {
    std::error_code ec;
    for (const std::filesystem::path& d : missing_)
      if (std::filesystem::is_directory(d, ec) && std::filesystem::is_empty(d, ec)) std::filesystem::remove(d, ec);
  }
  CreatedDirectories(const CreatedDirectories&) = delete;
  CreatedDirectories& operator=(const CreatedDirectories&) = delete;
  void keep() { missing_.clear(); }

 private:
  std::vector<std::filesystem::path> missing_;  // deepest first
};

// Poisoned memory (TEXC_POISON=1, docs/testing.md): the first run started on NaN; runs the
// kernels again on what it left and requires the same bits in every output, so a kernel that
// reads memory before writing it, or leans on what an earlier run left, shows up as a failure.
template <typename RunOnce>
void checkSecondRun(const Program& p, std::vector<Tensor>& tensors, RunOnce runOnce) {
  std::vector<Tensor> first;
  for (int id : p.outputs) first.push_back(copyTensor(tensors[id]));
  runOnce();
  for (size_t k = 0; k < p.outputs.size(); ++k) {
    const Tensor& now = tensors[p.outputs[k]];
    if (std::memcmp(now.data.data(), first[k].data.data(), now.data.size()) == 0) continue;
    int64_t n = numElements(now), i = 0;
    while (i < n && std::memcmp(now.data.data() + i * elemBytes(now.type), first[k].data.data() + i * elemBytes(now.type),
                                elemBytes(now.type)) == 0)
      ++i;
    throw CommandError{kExitRuntime, fmt::format("TEXC_POISON: a second run on the same memory changed output '{}' element {}: "
                                                 "{} after the first run, {} after the second",
                                                 p.tensors[p.outputs[k]].name, i, loadElement(first[k], i), loadElement(now, i))};
  }
}

}  // namespace

// --profile's sampling period asked for: 1000 samples per second of CPU time, rare enough to
// leave the timing nearly as it was. Linux rounds it up to its tick (250 samples a second at
// 250 Hz): a second of runs or more ranks the loops.
constexpr int kProfilePeriodMicros = 1000;

int commandRun(const RunOptions& o) {
  if (o.target != "cpu" && o.target != "cuda") throw CommandError{kExitUsage, fmt::format("--target {}: expected cpu or cuda", o.target)};
  if (o.threads < 0) throw CommandError{kExitUsage, "--threads must be >= 0"};
  bool cuda = o.target == "cuda";
  if (o.profile && o.repeat < 1) throw CommandError{kExitUsage, "--profile samples the timed runs: give --repeat N (N >= 1)"};
  if (o.profile && cuda) throw CommandError{kExitUsage, "--profile samples the CPU's code: not with --target cuda"};
  Stopwatch compileClock;
  CompileRequest request = o.program.request(cuda ? Stage::CUDA : Stage::LLVM);
  if (cuda) request.options.target = Target::Cuda;
  request.options.threads = o.threads;  // the tile rule shares row blocks out among them
  request.options.lineTable = o.profile;  // the profile names the loop IR's statements
  if (!cuda) requireHostRuns(o.program.pipeline.cpu);
  std::unique_ptr<Compilation> c = compileProgram(request);
  if (!c->ok) return kExitProgramError;
  // The GPU is opened before any input is read, so that a machine without one fails at once.
  std::unique_ptr<CudaDevice> gpu;
  if (cuda) {
    try {
      gpu = CudaDevice::open();
    } catch (const std::runtime_error& e) {
      throw CommandError{kExitRuntime, fmt::format("--target cuda: {}", e.what())};
    }
  }
  const Program& p = *c->state.graph;
  // The passes' memory is freed by now: give it back before the code generator runs.
  releaseFreedMemory();

  // The output directory is made now, so that an unusable one is reported before the run; if the
  // command fails later, the directories it made are removed again (all or nothing).
  CreatedDirectories createdDirs(o.outputDir);
  try {
    ensureOutputDir(o.outputDir);
  } catch (const std::exception& e) {
    throw CommandError{kExitRuntime, e.what()};
  }

  Stopwatch jitClock;
  std::unique_ptr<CpuExecutable> exe;
  std::unique_ptr<CudaExecutable> gpuExe;
  if (cuda) {
    try {
      gpuExe = CudaExecutable::load(*gpu, *c->state.cuda, *c->state.loops, c->state.memoryPlan ? &*c->state.memoryPlan : nullptr);
    } catch (const std::runtime_error& e) {
      throw CommandError{kExitRuntime, fmt::format("--target cuda: {}", e.what())};
    }
  } else {
    exe = CpuExecutable::load(std::move(c->state.llvmContext), std::move(c->state.llvmModule), *c->state.loops,
                              o.program.pipeline.optLevel, cpuTarget(o.program.pipeline.cpu));
  }
  double jitMs = jitClock.milliseconds();
  double compileMs = compileClock.milliseconds();
  releaseFreedMemory();  // and the code generator's, before the tensors take their place

  // Inputs: every one must be given, unless --random fills the rest. They are read after the
  // code is generated, so that the compiler's peak memory and theirs do not add up.
  std::map<std::string, std::string> given = parseInputs(o.inputs, p);
  std::vector<Tensor> tensors(p.tensors.size());
  for (size_t k = 0; k < p.inputs.size(); ++k) {
    const TensorInfo& t = p.tensors[p.inputs[k]];
    auto it = given.find(t.name);
    if (it != given.end()) {
      try {
        tensors[p.inputs[k]] = readNpy(it->second);
      } catch (const NpyError& e) {
        // readNpy names the file; say which input it was for.
        throw CommandError{kExitRuntime, fmt::format("input '{}': {}", t.name, e.what())};
      }
      try {
        checkMatches(tensors[p.inputs[k]], elemTypeOf(t.dtype), t.shape, t.name, it->second);
      } catch (const NpyError& e) {
        throw CommandError{kExitRuntime, e.what()};
      }
    } else if (o.randomSeed) {
      tensors[p.inputs[k]] = makeTensor(elemTypeOf(t.dtype), t.shape);
      fillRandom(tensors[p.inputs[k]], *o.randomSeed, k);
    } else {
      throw CommandError{kExitUsage, fmt::format("input '{}' is not given: pass --input {}=PATH.npy or --random SEED", t.name, t.name)};
    }
  }

  // Run. The intermediates live in the planned arena (allocated once), or with --no-plan in
  // buffers of their own, allocated afresh for every run. The CUDA target keeps its own device
  // arena and copies inputs in and outputs back through these host pointers.
  ProgramMemory memory(p, c->state.memoryPlan ? &*c->state.memoryPlan : nullptr, tensors);
  ThreadPool pool(cuda ? 1 : o.threads);
  Stopwatch runClock;
  auto runOnce = [&] {
    try {
      if (cuda) gpuExe->run(memory.prepareRun());
      else exe->run(memory.prepareRun(), pool);
      memory.finishRun();
    } catch (const CudaError& e) {
      throw CommandError{kExitRuntime, fmt::format("--target cuda: {}", e.what())};
    }
  };
  runOnce();
  double runMs = runClock.milliseconds();
  if (memory.poisoned()) checkSecondRun(p, tensors, runOnce);
  size_t numKernels = cuda ? gpuExe->numKernels() : exe->numKernels();
  if (o.repeat > 0) {
    // Kernel time (plus, unplanned, the allocation of the intermediates): the first run above
    // was the warm-up (page faults, caches). On the GPU, the kernels' time between two events,
    // the data staying on the device.
    std::vector<double> samples;
    std::optional<Sampler> sampler;
    if (o.profile) {
      try {
        sampler.emplace().start(kProfilePeriodMicros);
      } catch (const std::exception& e) {
        throw CommandError{kExitRuntime, e.what()};
      }
    }
    for (int r = 0; r < o.repeat; ++r) {
      if (cuda) {
        samples.push_back(gpuExe->runKernelsTimed());
        continue;
      }
      Stopwatch clock;
      exe->run(memory.prepareRun(), pool);
      memory.finishRun();
      samples.push_back(clock.milliseconds());
    }
    if (sampler) sampler->stop();
    std::cerr << fmt::format("time: median {:.4f} ms, min {:.4f} ms over {} runs ({} kernels, {})\n", median(samples),
                             *std::min_element(samples.begin(), samples.end()), o.repeat, numKernels,
                             cuda ? "on " + gpu->name() : fmt::format("{} threads", pool.numThreads()));
    if (sampler) {
      ProfileOptions report;
      std::istringstream listing(c->state.loopListing);
      for (std::string line; std::getline(listing, line);) report.listing.push_back(line);
      std::cerr << profileReport(exe->jitFunctions(), sampler->addresses(), exe->cpu(), sampler->dropped(), sampler->cpuSeconds(), report);
    }
  }

  applyTestDamage(p, tensors, "");

  // --check runs the reference before any output is written: if it fails (out of memory), the
  // command writes nothing. Its lines are printed at the end.
  std::string checkReport;
  std::vector<OutputCheck> checks;
  if (o.check) {
    // The reference runs the program as semantic analysis left it, before any pass, so a pass
    // that changes results shows up here. Inputs and outputs keep their order through the passes.
    const Program& analysed = *c->state.analysed;
    std::vector<RefTensor> refInputs;
    for (int id : p.inputs) refInputs.push_back({p.tensors[id].shape, toDoubles(tensors[id])});
    checks = checkOutputs(p, tensors, analysed, referenceWithBounds(analysed, refInputs, effectiveMathMode(c->state.options)));
    for (const OutputCheck& k : checks) {
      checkReport += fmt::format("{}: max abs error {:.3g}, max rel error {:.3g} vs the float64 reference", k.name, k.error.maxAbs,
                                 k.error.maxRel);
      if (k.comparison.uncertain > 0)
        checkReport += fmt::format(" ({} of {} elements uncertain, not judged)", k.comparison.uncertain, k.comparison.elements);
      checkReport += k.beyond() ? fmt::format("\n{}: BEYOND the error bound: {}\n", k.name, describeWorst(k)) : ", within the error bound\n";
    }
  }

  // Outputs, all or nothing.
  try {
    AtomicOutputSet outputs;
    for (int id : p.outputs)
      outputs.add(std::filesystem::path(o.outputDir) / (p.tensors[id].name + ".npy"), tensors[id]);
    outputs.commit();
  } catch (const std::exception& e) {
    throw CommandError{kExitRuntime, e.what()};
  }
  createdDirs.keep();

  if (o.program.timePasses) {
    std::cerr << fmt::format("  {:<18} {:9.3f} ms{}\n", cuda ? "nvrtc + load" : "jit", jitMs,
                             cuda ? fmt::format("  (NVRTC {:.3f} ms, 0 when cached)", gpuExe->nvrtcMs()) : "");
    std::cerr << fmt::format("  {:<18} {:9.3f} ms  (parse to JIT-ready)\n", "compile total", compileMs);
    std::cerr << fmt::format("  {:<18} {:9.3f} ms  ({} kernels, {})\n", "run", runMs, numKernels,
                             cuda ? "on " + gpu->name() : fmt::format("{} threads", pool.numThreads()));
    // The high-water mark of the process (inputs, outputs, the arena, the JIT): what attention's
    // N x N buffers cost, or do not.
    struct rusage usage {};
    if (getrusage(RUSAGE_SELF, &usage) == 0)
      std::cerr << fmt::format("  {:<18} {:9.1f} MiB  (this process, all of the run)\n", "peak RSS", usage.ru_maxrss / 1024.0);
  }
  std::cout << checkReport;
  if (anyBeyond(checks)) {
    std::string names;
    int count = 0;
    for (const OutputCheck& k : checks)
      if (k.beyond()) names += fmt::format("{}'{}'", count++ ? ", " : "", k.name);
    std::cerr << fmt::format("texc: error: --check: output{} {} differ{} from the float64 reference beyond the error bound (outputs written)\n",
                             count > 1 ? "s" : "", names, count > 1 ? "" : "s");
    return kExitMismatch;
  }
  return kExitOk;
}

}  // namespace texc
