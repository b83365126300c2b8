#include "compiler/target/CpuTarget.h"

#include <fmt/format.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

namespace texc {

namespace {

// Per-core L1d and L2 of the CPUs a user is likely to name; anything else gets the generic
// defaults (32 KiB, 512 KiB), as does a host whose sysconf does not say. docs/cli.md lists them.
struct CacheDefaults {
  const char* cpu;
  int64_t l1Kib, l2Kib;
};
constexpr CacheDefaults kCacheDefaults[] = {
    {"haswell", 32, 256},          {"broadwell", 32, 256},       {"skylake", 32, 256},
    {"skylake-avx512", 32, 1024},  {"cascadelake", 32, 1024},    {"cooperlake", 32, 1024},
    {"icelake-client", 48, 512},   {"icelake-server", 48, 1280}, {"tigerlake", 48, 1280},
    {"sapphirerapids", 48, 2048},  {"emeraldrapids", 48, 2048},  {"graniterapids", 48, 2048},
    {"znver1", 32, 512},           {"znver2", 32, 512},          {"znver3", 32, 512},
    {"znver4", 32, 1024},          {"znver5", 48, 1024},
};

void setDefaultCaches(CpuTarget& t) {
  t.l1Bytes = 32 * 1024;
  t.l2Bytes = 512 * 1024;
  // The last level varies by part more than by core design: one generic figure for named CPUs.
  t.l3Bytes = 32 * 1024 * 1024;
  t.cacheSource = "generic defaults";
  for (const CacheDefaults& d : kCacheDefaults)
    if (t.name == d.cpu) {
      t.l1Bytes = d.l1Kib * 1024;
      t.l2Bytes = d.l2Kib * 1024;
      t.cacheSource = "defaults for " + t.name;
    }
}

// The size of one instance of the level-3 cache as Linux's sysfs describes cpu0's caches ("32768K"),
// or 0. sysconf's figure is not used for it: under a hypervisor it is often the whole socket's (all
// core complexes' slices together), several times what one core can use.
int64_t sysfsLevel3Bytes() {
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream level(dir + "level"), size(dir + "size");
    int lv = 0;
    std::string text;
    if (!(level >> lv) || !(size >> text)) break;
    if (lv != 3 || text.empty()) continue;
    int64_t value = 0;
    size_t used = 0;
    try {
      value = std::stoll(text, &used);
    } catch (const std::exception&) {
      return 0;
    }
    const char unit = used < text.size() ? text[used] : ' ';
    return unit == 'K' ? value * 1024 : unit == 'M' ? value * 1024 * 1024 : value;
  }
  return 0;
}

void setHostCaches(CpuTarget& t) {
  setDefaultCaches(t);
  long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);
  long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  const int64_t l3 = sysfsLevel3Bytes();
  if (l3 > 0) t.l3Bytes = l3;
  if (l1 > 0 && l2 > 0) t.cacheSource = l3 > 0 ? "sysconf; L3 from sysfs" : "sysconf";
  if (l1 > 0) t.l1Bytes = l1;
  if (l2 > 0) t.l2Bytes = l2;
}

// The host's features as LLVM reports them: every key LLVM's detection knows, on or off.
std::map<std::string, bool> hostFeatureMap() {
  std::map<std::string, bool> out;
  for (const auto& f : llvm::sys::getHostCPUFeatures()) out[f.first().str()] = f.second;
  return out;
}

// Whether texc's generated code may use instructions of this feature: the vector and arithmetic
// extensions. System features (pku, shstk, waitpkg, ...) are left out: a virtual machine often hides
// them, and no kernel of texc's executes them, so their absence must not stop a run.
bool isCodeFeature(const std::string& key) {
  for (const char* prefix : {"sse", "ssse3", "avx", "fma", "f16c", "amx", "bmi", "lzcnt", "popcnt", "movbe", "adx", "cx16",
                             "gfni", "vaes", "vpclmulqdq", "pclmul", "xop", "tbm"})
    if (key.rfind(prefix, 0) == 0) return true;
  return false;
}

std::vector<std::string> signedList(const std::map<std::string, bool>& features) {
  std::vector<std::string> out;
  for (const auto& [key, on] : features) out.push_back((on ? "+" : "-") + key);
  // LLVM tunes Intel's AVX-512 parts to prefer 256-bit vectors, which would leave the loop
  // vectoriser at <8 x float> there; texc's math-heavy loops gain from the full width.
  if (features.count("avx512f") && features.at("avx512f")) out.push_back("-prefer-256-bit");
  std::sort(out.begin(), out.end());
  return out;
}

const llvm::Target& nativeTarget(const std::string& triple) {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) throw std::runtime_error("texc: no LLVM target for " + triple + ": " + error);
  return *target;
}

CpuTarget resolveHost() {
  CpuTarget t;
  t.name = llvm::sys::getHostCPUName().str();
  t.host = true;
  t.features = signedList(hostFeatureMap());
  setHostCaches(t);
  return t;
}

CpuTarget resolveNamed(const std::string& name) {
  const std::string triple = llvm::sys::getProcessTriple();
  const llvm::Target& target = nativeTarget(triple);
  // A generic subtarget first: asking for an unknown CPU directly makes LLVM print a warning.
  std::unique_ptr<llvm::MCSubtargetInfo> generic(target.createMCSubtargetInfo(triple, "", ""));
  if (!generic || !generic->isCPUStringValid(name)) {
    std::string known;
    if (generic)
      for (const llvm::SubtargetSubTypeKV& cpu : generic->getAllProcessorDescriptions())
        for (const char* common : {"haswell", "skylake-avx512", "icelake-server", "sapphirerapids", "znver3", "znver4"})
          if (std::string(cpu.Key) == common) known += (known.empty() ? "" : ", ") + std::string(common);
    throw std::invalid_argument(fmt::format("--cpu {}: not a CPU that LLVM knows (for example host, {})", name, known));
  }
  std::unique_ptr<llvm::MCSubtargetInfo> sti(target.createMCSubtargetInfo(triple, name, ""));
  // The features over the keys the host reports, so host and named CPUs list the same keys and
  // missingHostFeatures compares like with like (LLVM's tuning flags are not among them).
  std::map<std::string, bool> features = hostFeatureMap();
  for (auto& [key, on] : features) on = false;
  for (const llvm::SubtargetFeatureKV& kv : sti->getAllProcessorFeatures())
    if (features.count(kv.Key)) features[kv.Key] = sti->getFeatureBits().test(kv.Value);
  CpuTarget t;
  t.name = name;
  t.features = signedList(features);
  // The documented defaults, unless this is the host's own CPU: then its caches are known.
  if (name == llvm::sys::getHostCPUName()) setHostCaches(t);
  else setDefaultCaches(t);
  return t;
}

}  // namespace

bool CpuTarget::has(const std::string& feature) const {
  return std::binary_search(features.begin(), features.end(), "+" + feature);
}

int CpuTarget::vectorFloats() const { return has("avx512f") ? 16 : has("avx") ? 8 : 4; }

int CpuTarget::vectorRegisters() const { return has("avx512f") ? 32 : 16; }

std::string CpuTarget::isaName() const { return has("avx512f") ? "avx512" : has("avx2") ? "avx2" : has("avx") ? "avx" : "sse"; }

std::string CpuTarget::describe() const {
  return fmt::format("{}{}: {}, {} x {}-bit vector registers; L1d {} KiB, L2 {} KiB, L3 {} MiB ({})", name,
                     host ? " (host)" : "", isaName(), vectorRegisters(), vectorFloats() * 32, l1Bytes / 1024, l2Bytes / 1024,
                     l3Bytes / (1024 * 1024), cacheSource);
}

const CpuTarget& cpuTarget(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, CpuTarget> resolved;
  const std::string key = name.empty() ? "host" : name;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = resolved.find(key);
  if (it == resolved.end()) it = resolved.emplace(key, key == "host" ? resolveHost() : resolveNamed(key)).first;
  return it->second;
}

bool isAmdCpu(const std::string& name) {
  for (const char* prefix : {"znver", "bdver", "btver", "k8", "opteron", "athlon", "amdfam10", "barcelona"})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

std::vector<std::string> missingHostFeatures(const CpuTarget& cpu) {
  std::vector<std::string> missing;
  if (cpu.host) return missing;
  std::map<std::string, bool> host = hostFeatureMap();
  for (const std::string& f : cpu.features) {
    if (f[0] != '+' || !isCodeFeature(f.substr(1))) continue;
    auto it = host.find(f.substr(1));
    if (it != host.end() && !it->second) missing.push_back(f.substr(1));
  }
  return missing;
}

namespace {

// Linux's request for the AMX tile data state (arch/x86/include/uapi/asm/prctl.h): granted to the
// whole process, once.
bool requestTileData() {
#if defined(__linux__) && defined(SYS_arch_prctl)
  constexpr long kRequestPermission = 0x1023;  // ARCH_REQ_XCOMP_PERM
  constexpr long kTileData = 18;               // XFEATURE_XTILEDATA
  static const bool granted = syscall(SYS_arch_prctl, kRequestPermission, kTileData) == 0;
  return granted;
#else
  return false;
#endif
}

}  // namespace

bool amxUsable(const CpuTarget& cpu) {
  if (!cpu.has("amx-tile") || !cpu.has("amx-bf16")) return false;
  static const bool hostHasTiles = cpuTarget("host").has("amx-tile");
  return !hostHasTiles || requestTileData();
}

}  // namespace texc
