#include "compiler/analysis/HostModel.h"

#include <fmt/format.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <ctime>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <stdexcept>

#include "compiler/backend/llvm/LLVMTarget.h"
#include "compiler/backend/llvm/OrcJIT.h"
#include "runtime/Buffer.h"
#include "runtime/CacheDir.h"
#include "runtime/Timer.h"

namespace texc {

namespace {

// Best of 5 copies of 64 MiB (bytes read + written per second): kHostCopyMethod.
double measureCopyGBs() {
  const size_t n = size_t(1) << 24;
  Buffer a(n * sizeof(float)), b(n * sizeof(float));
  std::memset(a.data(), 1, a.size());
  std::memset(b.data(), 0, b.size());
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    Stopwatch clock;
    std::memcpy(b.data(), a.data(), a.size());
    best = std::min(best, clock.seconds());
  }
  return 2.0 * a.size() / best / 1e9;
}

// JIT-compiles a loop of 12 independent FMA chains on host-width vectors and times it, best of
// 3: kHostPeakMethod.
double measureFmaGflops() {
  std::vector<std::string> features = hostCPUFeatures();
  int lanes = std::find(features.begin(), features.end(), "+avx512f") != features.end() ? 16
              : std::find(features.begin(), features.end(), "+avx") != features.end()   ? 8
                                                                                          : 4;
  auto context = std::make_unique<llvm::LLVMContext>();
  auto module = std::make_unique<llvm::Module>("peak", *context);
  llvm::IRBuilder<> b(*context);
  auto* vty = llvm::FixedVectorType::get(b.getFloatTy(), lanes);
  auto* fty = llvm::FunctionType::get(b.getFloatTy(), {b.getInt64Ty()}, false);
  auto* f = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, "texc_peak", *module);
  auto* entry = llvm::BasicBlock::Create(*context, "entry", f);
  auto* loop = llvm::BasicBlock::Create(*context, "loop", f);
  auto* exit = llvm::BasicBlock::Create(*context, "exit", f);
  const int chains = 12;
  b.SetInsertPoint(entry);
  b.CreateBr(loop);
  b.SetInsertPoint(loop);
  llvm::PHINode* i = b.CreatePHI(b.getInt64Ty(), 2);
  i->addIncoming(b.getInt64(0), entry);
  std::vector<llvm::PHINode*> acc;
  llvm::Value* x = llvm::ConstantFP::get(vty, 0.999999);
  llvm::Value* y = llvm::ConstantFP::get(vty, 1e-7);
  std::vector<llvm::Value*> next;
  // PHIs first: they must open the block.
  for (int c = 0; c < chains; ++c) {
    acc.push_back(b.CreatePHI(vty, 2));
    acc.back()->addIncoming(llvm::ConstantFP::get(vty, 1.0 + c), entry);
  }
  for (int c = 0; c < chains; ++c) next.push_back(b.CreateIntrinsic(llvm::Intrinsic::fma, {vty}, {acc[c], x, y}));
  llvm::Value* inext = b.CreateAdd(i, b.getInt64(1));
  i->addIncoming(inext, loop);
  for (int c = 0; c < chains; ++c) acc[c]->addIncoming(next[c], loop);
  b.CreateCondBr(b.CreateICmpSLT(inext, f->getArg(0)), loop, exit);
  b.SetInsertPoint(exit);
  llvm::Value* sum = next[0];
  for (int c = 1; c < chains; ++c) sum = b.CreateFAdd(sum, next[c]);
  b.CreateRet(b.CreateExtractElement(sum, b.getInt64(0)));

  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*module, &os)) throw std::logic_error("peak kernel is invalid: " + os.str());
  OrcJIT jit(2);
  jit.addModule(std::move(module), std::move(context));
  auto fn = reinterpret_cast<float (*)(int64_t)>(jit.lookup("texc_peak"));
  const int64_t iters = 20'000'000;
  volatile float sink = fn(1000);
  double best = 1e30;
  for (int r = 0; r < 3; ++r) {
    Stopwatch clock;
    sink = fn(iters);
    best = std::min(best, clock.seconds());
  }
  (void)sink;
  return 2.0 * lanes * chains * static_cast<double>(iters) / best / 1e9;
}

// Reads a whole file; "" when it cannot be read.
std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Replaces the cache in one rename, so that a concurrent reader sees the old file or the new one.
void writeCache(const std::filesystem::path& path, const HostModelRecord& r) {
  if (path.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  std::filesystem::path tmp = path;
  tmp += fmt::format(".tmp{}", static_cast<long>(::getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << formatHostModelRecord(r);
    if (!out) return;
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

const char* kHeader = "texc host model, format 2";

bool parsePositive(const std::string& text, double& out) {
  char* end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return !text.empty() && end == text.c_str() + text.size() && std::isfinite(out) && out > 0;
}

bool parseInteger(const std::string& text, int64_t& out) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  out = v;
  return !text.empty() && end == text.c_str() + text.size() && errno == 0;
}

HardwareModel modelOf(const HostModelRecord& r, bool justNow, const std::filesystem::path& path) {
  return HardwareModel{"host", r.bandwidthGBs, r.peakGflops, 0, describeHostModel(r, justNow, path.string())};
}

int64_t unixNow() { return static_cast<int64_t>(std::time(nullptr)); }

}  // namespace

std::string formatHostModelRecord(const HostModelRecord& r) {
  return fmt::format("{}\nmeasured_at {}\nbandwidth_gbs {}\nbandwidth_at {}\nbandwidth_how {}\npeak_gflops {}\npeak_how {}\n", kHeader,
                     r.measuredAt, r.bandwidthGBs, r.bandwidthAt, r.bandwidthHow, r.peakGflops, r.peakHow);
}

std::optional<HostModelRecord> parseHostModelRecord(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != kHeader) return std::nullopt;
  HostModelRecord r;
  // Every field must appear exactly once; unknown keys are an error too (a newer format would
  // change the header).
  std::set<std::string> seen;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    size_t space = line.find(' ');
    if (space == std::string::npos) return std::nullopt;
    std::string key = line.substr(0, space), value = line.substr(space + 1);
    if (!seen.insert(key).second) return std::nullopt;
    bool ok = key == "measured_at"     ? parseInteger(value, r.measuredAt)
              : key == "bandwidth_at"  ? parseInteger(value, r.bandwidthAt)
              : key == "bandwidth_gbs" ? parsePositive(value, r.bandwidthGBs)
              : key == "peak_gflops"   ? parsePositive(value, r.peakGflops)
              : key == "bandwidth_how" ? (r.bandwidthHow = value, !value.empty())
              : key == "peak_how"      ? (r.peakHow = value, !value.empty())
                                       : false;
    if (!ok) return std::nullopt;
  }
  if (seen.size() != 6) return std::nullopt;
  return r;
}

bool hostModelStale(const HostModelRecord& r, int64_t now) {
  // A measurement more than a few minutes in the future means the clock changed: its age is unknown.
  return now - r.measuredAt > kHostModelMaxAgeSeconds || r.measuredAt - now > 300;
}

std::string formatUtc(int64_t unixSeconds) {
  std::time_t t = static_cast<std::time_t>(unixSeconds);
  std::tm tm{};
  if (!gmtime_r(&t, &tm)) return fmt::format("{} s after 1970", unixSeconds);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", &tm);
  return text;
}

std::string describeHostModel(const HostModelRecord& r, bool justNow, const std::string& cachePath) {
  std::string when = justNow ? "just now (" + formatUtc(r.measuredAt) + ")" : "on " + formatUtc(r.measuredAt);
  std::string bandwidth = r.bandwidthAt == r.measuredAt ? r.bandwidthHow
                                                        : fmt::format("{}, on {}", r.bandwidthHow, formatUtc(r.bandwidthAt));
  std::string cached = cachePath.empty() ? "not cached: neither XDG_CACHE_HOME nor HOME is set"
                                         : fmt::format("cached in {}, measured again after a day", cachePath);
  return fmt::format("measured by texc on this machine {}; bandwidth: {}; peak: {}; {}", when, bandwidth, r.peakHow, cached);
}

HardwareModel hostHardwareModelAt(int64_t now, bool remeasure) {
  std::filesystem::path path = cacheDirectory("host-model");
  if (!remeasure && !path.empty())
    if (std::optional<HostModelRecord> r = parseHostModelRecord(readFile(path)); r && !hostModelStale(*r, now))
      return modelOf(*r, false, path);
  HostModelRecord r;
  r.bandwidthGBs = measureCopyGBs();
  r.peakGflops = measureFmaGflops();
  r.measuredAt = r.bandwidthAt = now;
  r.bandwidthHow = kHostCopyMethod;
  r.peakHow = kHostPeakMethod;
  writeCache(path, r);
  return modelOf(r, true, path);
}

HardwareModel hostHardwareModel(bool remeasure) { return hostHardwareModelAt(unixNow(), remeasure); }

bool recordHostBandwidth(double gbs, const std::string& how) {
  std::filesystem::path path = cacheDirectory("host-model");
  if (path.empty()) return false;
  std::optional<HostModelRecord> r = parseHostModelRecord(readFile(path));
  // No valid cache: the next run that needs the model measures it in full.
  if (!r || !(gbs > r->bandwidthGBs)) return false;
  r->bandwidthGBs = gbs;
  r->bandwidthAt = unixNow();
  r->bandwidthHow = how;
  writeCache(path, *r);
  return true;
}

namespace {

const char* kHwUsage = "expected host, h100, h200 or figures bw=GB/s,peak=GFLOP/s[,launch=us] (e.g. bw=12.5,peak=103.7)";

// Parses "bw=12.5,peak=103.7[,launch=4]" into `hw`; returns "" or what is wrong.
std::string parseFigures(const std::string& text, HardwareModel& hw) {
  std::set<std::string> seen;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? text.size() + 1 : comma + 1;
    size_t eq = item.find('=');
    if (eq == std::string::npos) return fmt::format("'{}' is not key=value; {}", item, kHwUsage);
    std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key != "bw" && key != "peak" && key != "launch") return fmt::format("unknown figure '{}' (bw, peak, launch); {}", key, kHwUsage);
    if (!seen.insert(key).second) return fmt::format("'{}' is given twice", key);
    double v = 0;
    bool ok = parsePositive(value, v) || (key == "launch" && value == "0");
    if (!ok) return fmt::format("{}= needs a positive number, got '{}'", key, value);
    (key == "bw" ? hw.bandwidthGBs : key == "peak" ? hw.peakGflops : hw.launchOverheadUs) = v;
  }
  if (!seen.count("bw")) return fmt::format("bw=GB/s is missing; {}", kHwUsage);
  if (!seen.count("peak")) return fmt::format("peak=GFLOP/s is missing; {}", kHwUsage);
  hw.name = "given";
  hw.source = fmt::format("given with --hw {}", text);
  return "";
}

}  // namespace

std::string checkHardwareSpec(const std::string& text) {
  if (text == "host" || namedHardwareModel(text)) return "";
  if (text.find('=') == std::string::npos) return fmt::format("unknown hardware model '{}'; {}", text, kHwUsage);
  HardwareModel hw;
  return parseFigures(text, hw);
}

HardwareModel hardwareModelFor(const std::string& text) {
  if (text == "host") return hostHardwareModel();
  if (std::optional<HardwareModel> named = namedHardwareModel(text)) return *named;
  HardwareModel hw;
  std::string error = parseFigures(text, hw);
  if (!error.empty()) throw std::invalid_argument("--hw: " + error);
  return hw;
}

}  // namespace texc
