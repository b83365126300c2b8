// The end-to-end harness (E2EHarness.h).
#include "E2EHarness.h"

#include "tests/support/GoldenFiles.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "compiler/backend/cuda/CudaDriver.h"
#include "frontend/Diagnostics.h"
#include "frontend/Parser.h"
#include "frontend/Source.h"
#include "runtime/Buffer.h"
#include "runtime/Half.h"
#include "runtime/Npy.h"
#include "runtime/SplitMix64.h"

extern char** environ;

namespace texc::e2e {

namespace fs = std::filesystem;

namespace {

const fs::path kSourceDir = TEXC_SOURCE_DIR;

// The texc binary under test: TEXC_BINARY from the build, or $TEXC_E2E_BINARY (to run the suite
// against another build, say a sanitizer one).
std::string texcBinary() {
  const char* env = std::getenv("TEXC_E2E_BINARY");
  return env && *env ? env : TEXC_BINARY;
}

// Seconds after which a texc run counts as hung and is killed.
constexpr double kRunTimeoutSeconds = 300;

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// The text after `# key:` on the first line of `text` that starts with it, if any.
std::optional<std::string> findDirective(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string line;
  const std::string prefix = "# " + key + ":";
  while (std::getline(in, line)) {
    std::string t = trim(line);
    if (t.rfind(prefix, 0) == 0) return trim(t.substr(prefix.size()));
  }
  return std::nullopt;
}

// examples.e2e: "NAME.tex: ARGS" per line; '#' starts a comment line.
std::map<std::string, std::string> readExampleManifest() {
  std::map<std::string, std::string> out;
  fs::path path = kSourceDir / "tests/e2e/examples.e2e";
  if (!fs::exists(path)) return out;
  std::istringstream in(readFile(path));
  std::string line;
  while (std::getline(in, line)) {
    std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    size_t colon = t.find(':');
    if (colon == std::string::npos) continue;
    out[trim(t.substr(0, colon))] = trim(t.substr(colon + 1));
  }
  return out;
}


ProgramSpec makeSpec(const fs::path& path, const std::map<std::string, std::string>* manifest) {
  ProgramSpec spec;
  spec.path = path;
  spec.relPath = fs::relative(path, kSourceDir).generic_string();
  std::string text;
  try {
    text = readFile(path);
  } catch (const std::exception& e) {
    spec.directiveError = e.what();
  }
  std::optional<std::string> directive = findDirective(text, "e2e");
  if (!directive && manifest) {
    auto it = manifest->find(path.filename().string());
    if (it != manifest->end()) directive = it->second;
  }
  if (!directive) {
    if (spec.directiveError.empty())
      spec.directiveError = "no '# e2e: -D NAME=VALUE ...' line (write '# e2e:' alone for no overrides)";
  } else if (std::optional<std::string> err = parseDirective(*directive, spec)) {
    spec.directiveError = *err;
  }
  spec.label = spec.relPath;
  for (size_t i = 0; i < spec.defineArgs.size(); i += 2) spec.label += " -D " + spec.defineArgs[i + 1];
  // `# e2e-schedule: FILE`: every variant runs with --schedule FILE (next to the program).
  if (std::optional<std::string> schedule = findDirective(text, "e2e-schedule")) {
    fs::path file = path.parent_path() / *schedule;
    if (schedule->empty() || !fs::is_regular_file(file)) spec.directiveError = "e2e-schedule: no file '" + file.string() + "'";
    spec.scheduleArgs = {"--schedule", file.string()};
    spec.label += " --schedule " + *schedule;
  }
  return spec;
}

ElemType elemType(DType t) {
  switch (t) {
    case DType::F32: return ElemType::F32;
    case DType::F64: return ElemType::F64;
    case DType::F16: return ElemType::F16;
    case DType::BF16: return ElemType::BF16;
  }
  return ElemType::F32;
}

std::vector<double> toDoubles(const Tensor& t) {
  int64_t n = numElements(t);
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    switch (t.type) {
      case ElemType::F32: out[i] = t.data.as<float>()[i]; break;
      case ElemType::F64: out[i] = t.data.as<double>()[i]; break;
      case ElemType::F16: out[i] = halfToFloat(t.data.as<uint16_t>()[i]); break;
      case ElemType::BF16: out[i] = bf16ToFloat(t.data.as<uint16_t>()[i]); break;
    }
  }
  return out;
}

// splitmix64, seeded per program and input, so inputs do not depend on the order tests run in.
using Rng = SplitMix64;

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// A tensor of values uniform in [-1, 1), rounded to its dtype; `values` gets them as doubles.
Tensor makeInput(const TensorInfo& info, uint64_t seed, std::vector<double>& values) {
  Tensor t = makeTensor(elemType(info.dtype), info.shape);
  Rng rng{seed};
  int64_t n = numElements(t);
  values.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double v = rng.uniform();
    switch (t.type) {
      case ElemType::F32:
        t.data.as<float>()[i] = static_cast<float>(v);
        values[i] = t.data.as<float>()[i];
        break;
      case ElemType::F64:
        t.data.as<double>()[i] = v;
        values[i] = v;
        break;
      case ElemType::F16:
        t.data.as<uint16_t>()[i] = floatToHalf(static_cast<float>(v));
        values[i] = halfToFloat(t.data.as<uint16_t>()[i]);
        break;
      case ElemType::BF16:
        t.data.as<uint16_t>()[i] = floatToBf16(static_cast<float>(v));
        values[i] = bf16ToFloat(t.data.as<uint16_t>()[i]);
        break;
    }
  }
  return t;
}

// The temporary directory of this test run, removed at exit unless kept.
struct TempRoot {
  fs::path path;
  bool keep = std::getenv("TEXC_E2E_KEEP") != nullptr;
  ~TempRoot() {
    if (path.empty()) return;
    if (keep) return;
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};
TempRoot& tempRoot() {
  static TempRoot root;
  if (root.path.empty()) {
    std::string pattern = (fs::temp_directory_path() / "texc-e2e-XXXXXX").string();
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data())) throw std::runtime_error(std::string("mkdtemp failed: ") + std::strerror(errno));
    root.path = buf.data();
  }
  return root;
}

int parallelJobs() {
  if (const char* s = std::getenv("TEXC_E2E_JOBS")) {
    int n = std::atoi(s);
    if (n >= 1) return n;
  }
  return 2;
}

std::string tail(const std::string& s, size_t n) { return s.size() <= n ? s : "..." + s.substr(s.size() - n); }

// Same value, NaN meeting NaN.
bool identical(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// Parse and sema of `spec` under its overrides; throws with the diagnostics when they fail.
Program analyzeSpec(const ProgramSpec& spec) {
  if (!spec.directiveError.empty()) throw std::runtime_error(spec.relPath + ": " + spec.directiveError);
  SourceFile file(spec.relPath, readFile(spec.path));
  DiagnosticEngine diags(&file);
  Module module = parse(file, diags);
  if (diags.hasErrors()) throw std::runtime_error("parse errors:\n" + diags.render());
  if (std::optional<std::string> bad = checkOverrides(module, spec.overrides)) throw std::runtime_error(*bad);
  std::optional<Program> program = analyze(module, diags, spec.overrides);
  if (!program || diags.hasErrors()) throw std::runtime_error("analysis errors:\n" + diags.render());
  return std::move(*program);
}

void prepareInto(const ProgramSpec& spec, PreparedProgram& prep, size_t ordinal) {
  prep.program = analyzeSpec(spec);
  const Program& p = prep.program;

  prep.dir = tempRoot().path / (std::to_string(ordinal) + "-" + spec.path.stem().string());
  fs::create_directories(prep.dir / "inputs");
  std::vector<RefTensor> inputs;
  std::vector<std::string> inputArgs;
  for (size_t k = 0; k < p.inputs.size(); ++k) {
    const TensorInfo& info = p.tensors[p.inputs[k]];
    RefTensor r;
    r.shape = info.shape;
    Tensor t = makeInput(info, fnv1a(spec.relPath) ^ (0x9E3779B97F4A7C15ull * (k + 1)), r.data);
    fs::path path = prep.dir / "inputs" / (info.name + ".npy");
    writeNpy(path, t);
    inputs.push_back(std::move(r));
    inputArgs.push_back("--input");
    inputArgs.push_back(info.name + "=" + path.string());
  }
  prep.reference = evaluateReference(p, inputs);
  prep.bounds = evaluateBounds(p, inputs);
  prep.fastBounds = evaluateBounds(p, inputs, MathMode::Fast);
  // The bound evaluator recomputes every value the way the reference does; any difference is a
  // bug in one of the two.
  for (size_t id = 0; id < p.tensors.size(); ++id) {
    const std::vector<double>& a = prep.reference[id].data;
    const std::vector<double>& b = prep.bounds.values[id].data;
    if (a.size() != b.size()) throw std::logic_error("bound evaluator: size differs for " + p.tensors[id].name);
    for (size_t i = 0; i < a.size(); ++i)
      if (!identical(a[i], b[i]))
        throw std::logic_error("the harness's bound evaluator and evaluateReference disagree on " + p.tensors[id].name +
                               formatIndex(static_cast<int64_t>(i), p.tensors[id].shape) + ": " + fmtDouble(a[i]) +
                               " vs " + fmtDouble(b[i]));
  }

  const std::vector<Variant>& vs = variants();
  for (size_t v = 0; v < vs.size(); ++v) {
    Job job;
    job.argv = {texcBinary(), "run", spec.path.string()};
    job.argv.insert(job.argv.end(), spec.defineArgs.begin(), spec.defineArgs.end());
    job.argv.insert(job.argv.end(), spec.scheduleArgs.begin(), spec.scheduleArgs.end());
    job.argv.insert(job.argv.end(), vs[v].args.begin(), vs[v].args.end());
    job.argv.insert(job.argv.end(), inputArgs.begin(), inputArgs.end());
    job.argv.push_back("--output-dir");
    job.argv.push_back((prep.dir / ("out" + std::to_string(v))).string());
    job.logPath = prep.dir / ("log" + std::to_string(v) + ".txt");
    prep.runs.push_back(std::move(job));
  }
  runJobs(prep.runs, parallelJobs(), kRunTimeoutSeconds);
}

}  // namespace

std::optional<std::string> parseDirective(const std::string& text, ProgramSpec& spec) {
  std::istringstream in(text);
  std::vector<std::string> tokens;
  for (std::string t; in >> t;) tokens.push_back(t);
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string def;
    if (tokens[i] == "-D") {
      if (i + 1 == tokens.size()) return "'-D' without NAME=VALUE";
      def = tokens[++i];
    } else if (tokens[i].rfind("-D", 0) == 0) {
      def = tokens[i].substr(2);
    } else {
      return "unknown directive argument '" + tokens[i] + "' (only -D NAME=VALUE)";
    }
    size_t eq = def.find('=');
    int64_t value = 0;
    if (eq == std::string::npos || eq == 0) return "bad define '" + def + "'";
    const char* first = def.data() + eq + 1;
    const char* last = def.data() + def.size();
    auto [ptr, ec] = std::from_chars(first, last, value);
    if (ec != std::errc() || ptr != last || first == last) return "bad value in '" + def + "'";
    spec.overrides[def.substr(0, eq)] = value;
    spec.defineArgs.push_back("-D");
    spec.defineArgs.push_back(def);
  }
  return std::nullopt;
}

std::vector<ProgramSpec> discoverPrograms() {
  std::vector<ProgramSpec> out;
  for (const fs::path& p : testsupport::texFilesIn(kSourceDir / "tests/e2e")) out.push_back(makeSpec(p, nullptr));
  std::map<std::string, std::string> manifest = readExampleManifest();
  for (const fs::path& p : testsupport::texFilesIn(kSourceDir / "examples")) out.push_back(makeSpec(p, &manifest));
  return out;
}

bool gpuOpens() {
  try {
    return CudaDevice::open() != nullptr;
  } catch (const std::exception&) {
    return false;  // no driver, no device, or a driver error: no CUDA variant
  }
}

const std::vector<Variant>& variants() {
  // Default fusion is the absence of --fuse. TEXC_E2E_ALL_VARIANTS adds the other fusion mode,
  // the middle optimisation levels and odd thread counts (slower; not run by default).
  static const std::vector<Variant> v = [] {
    std::vector<Variant> list = {
        {"-O3 --threads 1", {"-O3", "--threads", "1"}},
        {"-O3 --threads 2", {"-O3", "--threads", "2"}},
        {"-O0 --threads 1", {"-O0", "--threads", "1"}},
        {"-O3 --fuse=none --threads 2", {"-O3", "--fuse=none", "--threads", "2"}},
        {"-O0 --fuse=none --threads 2", {"-O0", "--fuse=none", "--threads", "2"}},
        // Without the memory plan (every other variant runs with it): one buffer per intermediate.
        {"-O3 --fuse=none --no-plan --threads 2", {"-O3", "--fuse=none", "--no-plan", "--threads", "2"}},
        {"-O3 --no-plan --threads 1", {"-O3", "--no-plan", "--threads", "1"}},
        {"-O3 --no-tile --threads 2", {"-O3", "--no-tile", "--threads", "2"}},
        // Attention and logsumexp as written: the max, exponentials and sums stored (docs/online-softmax.md).
        {"-O3 --disable-pass=online-softmax --threads 2", {"-O3", "--disable-pass=online-softmax", "--threads", "2"}},
        // Convolutions through the whole im2col patch matrix instead of implicit GEMM blocks.
        {"-O3 --conv=im2col --threads 1", {"-O3", "--conv=im2col", "--threads", "1"}},
        // The fast elementary functions (docs/vector-math.md), held to their own error bound.
        {"-O3 --math=fast --threads 2", {"-O3", "--math=fast", "--threads", "2"}},
    };
    // Where a GPU opens, every program also runs through the CUDA backend (docs/cuda.md); without
    // one the CUDA code is checked by the emulation tests (tests/unit/cuda) and the difftest.
    if (gpuOpens()) list.push_back({"--target cuda", {"--target", "cuda"}});
    if (std::getenv("TEXC_E2E_ALL_VARIANTS")) {
      list.push_back({"-O2 --fuse=elementwise --threads 3", {"-O2", "--fuse=elementwise", "--threads", "3"}});
      list.push_back({"-O1 --fuse=all --threads 4", {"-O1", "--fuse=all", "--threads", "4"}});
      list.push_back({"-O0 --fuse=elementwise --threads 1", {"-O0", "--fuse=elementwise", "--threads", "1"}});
    }
    // TEXC_E2E_CPU=NAME: the CPU variants' code for another CPU this host runs (haswell: the AVX2
    // code and 16-register tile rule of an AMD EPYC, on an AVX-512 host). texc refuses a CPU whose
    // code cannot run here, so every variant would then fail, saying why. The variants keep their
    // names (tests look them up); the command lines in the logs show the switch.
    if (const char* cpu = std::getenv("TEXC_E2E_CPU"); cpu && *cpu)
      for (Variant& v : list)
        if (std::find(v.args.begin(), v.args.end(), "--target") == v.args.end()) v.args.insert(v.args.end(), {"--cpu", cpu});
    return list;
  }();
  return v;
}

std::string ProcessResult::describe() const {
  if (spawnFailed) return "could not be started";
  if (timedOut) return "timed out after " + fmtDouble(seconds) + " s and was killed";
  if (signal) return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  return "exit " + std::to_string(exitCode);
}

void runJobs(std::vector<Job>& jobs, int parallel, double timeoutSeconds) {
  using Clock = std::chrono::steady_clock;
  struct Running {
    size_t job;
    pid_t pid;
    Clock::time_point start;
  };
  std::vector<Running> running;
  size_t next = 0;
  while (next < jobs.size() || !running.empty()) {
    while (next < jobs.size() && static_cast<int>(running.size()) < parallel) {
      Job& job = jobs[next];
      std::vector<char*> argv;
      for (std::string& a : job.argv) argv.push_back(a.data());
      argv.push_back(nullptr);
      posix_spawn_file_actions_t actions;
      posix_spawn_file_actions_init(&actions);
      posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
      posix_spawn_file_actions_addopen(&actions, 1, job.logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      posix_spawn_file_actions_adddup2(&actions, 1, 2);
      pid_t pid = 0;
      int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
      posix_spawn_file_actions_destroy(&actions);
      if (rc != 0) {
        job.result.spawnFailed = true;
        std::ofstream(job.logPath) << "posix_spawn: " << std::strerror(rc) << "\n";
      } else {
        running.push_back({next, pid, Clock::now()});
      }
      ++next;
    }
    bool progressed = false;
    for (size_t r = 0; r < running.size();) {
      Job& job = jobs[running[r].job];
      double elapsed = std::chrono::duration<double>(Clock::now() - running[r].start).count();
      int status = 0;
      pid_t got = waitpid(running[r].pid, &status, WNOHANG);
      if (got == 0 && elapsed > timeoutSeconds) {
        kill(running[r].pid, SIGKILL);
        got = waitpid(running[r].pid, &status, 0);
        job.result.timedOut = true;
      }
      if (got == running[r].pid || got < 0) {
        job.result.seconds = elapsed;
        if (got > 0 && WIFEXITED(status)) job.result.exitCode = WEXITSTATUS(status);
        if (got > 0 && WIFSIGNALED(status) && !job.result.timedOut) job.result.signal = WTERMSIG(status);
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(r));
        progressed = true;
        continue;
      }
      ++r;
    }
    if (!progressed && !running.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

const PreparedProgram& prepare(const ProgramSpec& spec) {
  // Every texc run starts on poisoned memory and runs its kernels a second time on what the first
  // left (docs/testing.md, "Poisoned memory"); TEXC_POISON=0 in the environment turns it off.
  static const bool poisonSet = ::setenv("TEXC_POISON", "1", /*overwrite=*/0) == 0;
  (void)poisonSet;
  static std::map<std::string, PreparedProgram> cache;
  static size_t ordinal = 0;
  auto it = cache.find(spec.label);
  if (it != cache.end()) return it->second;
  PreparedProgram& prep = cache[spec.label];
  try {
    prepareInto(spec, prep, ordinal++);
  } catch (const std::exception& e) {
    prep.error = e.what();
    if (prep.error.empty()) prep.error = "unknown error";
  }
  return prep;
}

const Program* analyzedProgram(const ProgramSpec& spec) {
  static std::map<std::string, std::optional<Program>> cache;
  auto it = cache.find(spec.label);
  if (it == cache.end()) {
    std::optional<Program> p;
    try {
      p = analyzeSpec(spec);
    } catch (const std::exception&) {
      // prepare() reports it, in the test that runs every program.
    }
    it = cache.emplace(spec.label, std::move(p)).first;
  }
  return it->second ? &*it->second : nullptr;
}

std::string shellCommand(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) {
    if (!s.empty()) s += ' ';
    bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=./,+:") ==
                                   std::string::npos;
    if (plain) {
      s += a;
    } else {
      s += '\'';
      for (char ch : a) s += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
      s += '\'';
    }
  }
  return s;
}

std::vector<std::string> checkRun(const ProgramSpec& spec, const PreparedProgram& prep, size_t variantIndex) {
  std::vector<std::string> problems;
  if (!prep.error.empty()) {
    problems.push_back("could not prepare " + spec.relPath + ": " + prep.error);
    return problems;
  }
  const Program& p = prep.program;
  const Job& job = prep.runs.at(variantIndex);
  const std::string rerun = "\n  rerun: " + shellCommand(job.argv);
  std::string log;
  try {
    log = readFile(job.logPath);
  } catch (const std::exception&) {
  }
  if (job.result.exitCode != 0 || job.result.signal || job.result.timedOut || job.result.spawnFailed) {
    problems.push_back("texc " + job.result.describe() + " (expected exit 0)" + rerun + "\n  output:\n" + tail(log, 3000));
    return problems;
  }

  // Exactly the outputs, nothing else (no temporaries left behind).
  const fs::path outDir = job.argv.back();
  std::set<std::string> expected, found;
  for (int id : p.outputs) expected.insert(p.tensors[id].name + ".npy");
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(outDir, ec)) found.insert(e.path().filename().string());
  if (ec) problems.push_back("cannot list the output directory " + outDir.string() + ": " + ec.message() + rerun);
  for (const std::string& f : found)
    if (!expected.count(f)) problems.push_back("unexpected file '" + f + "' in the output directory" + rerun);

  const char* statsPath = std::getenv("TEXC_E2E_STATS");
  for (int id : p.outputs) {
    const TensorInfo& info = p.tensors[id];
    const fs::path path = outDir / (info.name + ".npy");
    if (!found.count(info.name + ".npy")) {
      problems.push_back("output '" + info.name + "' was not written" + rerun);
      continue;
    }
    Tensor t;
    try {
      t = readNpy(path);
    } catch (const std::exception& e) {
      problems.push_back("output '" + info.name + "': " + e.what() + rerun);
      continue;
    }
    if (t.type != elemType(info.dtype) || t.shape != info.shape) {
      problems.push_back("output '" + info.name + "' holds " + describe(t) + ", expected " +
                         describe(elemType(info.dtype), info.shape) + rerun);
      continue;
    }
    std::vector<double> got = toDoubles(t);
    const std::vector<std::string>& args = variants()[variantIndex].args;
    const bool fast = std::find(args.begin(), args.end(), "--math=fast") != args.end();
    const BoundResult& bounds = fast ? prep.fastBounds : prep.bounds;
    Comparison c = compareValues(prep.reference[id].data, bounds.bounds[id], got, info.shape, toleranceFor(info.dtype));
    if (statsPath) {
      std::ofstream(statsPath, std::ios::app) << spec.relPath << '\t' << variants()[variantIndex].name << '\t' << info.name
                                              << '\t' << c.worstRatio << '\t' << c.uncertain << '/' << c.elements << '\n';
    }
    if (c.mismatches > 0)
      problems.push_back("output '" + info.name + "' (" + describe(t) + "): " + std::to_string(c.mismatches) + " of " +
                         std::to_string(c.elements) + " elements differ from the float64 reference beyond the tolerance\n" +
                         c.details + "  (tolerance = atol + rtol*|ref| + 3*bound; docs/testing.md)" + rerun);
    // Uncertain elements are not compared; a program where many are checks too little.
    if (c.uncertain * 4 > c.elements)
      problems.push_back("output '" + info.name + "': " + std::to_string(c.uncertain) + " of " + std::to_string(c.elements) +
                         " elements have an uncertain reference (a comparison or floor of inexact values too close "
                         "to call); rewrite the program so that most elements can be checked");
  }
  return problems;
}

void keepTemporaryFiles() { tempRoot().keep = true; }

}  // namespace texc::e2e
