#include "compiler/backend/cuda/Nvrtc.h"

#include <dlfcn.h>
#include <unistd.h>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

#include "runtime/CacheDir.h"
#include "runtime/Timer.h"

namespace texc {

namespace {

// The few NVRTC entry points texc uses, declared here so that no CUDA header is needed
// (signatures as in nvrtc.h; nvrtcResult is an int enum, nvrtcProgram an opaque pointer).
using NvrtcProgram = void*;
struct Nvrtc {
  void* handle = nullptr;
  std::string path;
  int (*version)(int*, int*) = nullptr;
  const char* (*errorString)(int) = nullptr;
  int (*createProgram)(NvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*) = nullptr;
  int (*destroyProgram)(NvrtcProgram*) = nullptr;
  int (*compileProgram)(NvrtcProgram, int, const char* const*) = nullptr;
  int (*getPTXSize)(NvrtcProgram, size_t*) = nullptr;
  int (*getPTX)(NvrtcProgram, char*) = nullptr;
  int (*getProgramLogSize)(NvrtcProgram, size_t*) = nullptr;
  int (*getProgramLog)(NvrtcProgram, char*) = nullptr;
  std::string error;  // why loading failed
};

template <typename F>
bool bind(void* h, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(h, name));
  return fn != nullptr;
}

const Nvrtc& library() {
  static Nvrtc lib;
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::string> candidates;
    for (const char* env : {"CUDA_HOME", "CUDA_PATH"})
      if (const char* home = std::getenv(env); home && *home) {
        candidates.push_back(std::string(home) + "/lib64/libnvrtc.so");
        candidates.push_back(std::string(home) + "/lib/libnvrtc.so");
      }
    candidates.push_back("/usr/local/cuda/lib64/libnvrtc.so");
    for (const char* soname : {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"}) candidates.push_back(soname);
    std::string tried;
    for (const std::string& c : candidates) {
      // RTLD_GLOBAL is not needed; NVRTC finds libnvrtc-builtins next to itself.
      void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!h) {
        tried += (tried.empty() ? "" : ", ") + c;
        continue;
      }
      bool ok = bind(h, "nvrtcVersion", lib.version) && bind(h, "nvrtcGetErrorString", lib.errorString) &&
                bind(h, "nvrtcCreateProgram", lib.createProgram) && bind(h, "nvrtcDestroyProgram", lib.destroyProgram) &&
                bind(h, "nvrtcCompileProgram", lib.compileProgram) && bind(h, "nvrtcGetPTXSize", lib.getPTXSize) &&
                bind(h, "nvrtcGetPTX", lib.getPTX) && bind(h, "nvrtcGetProgramLogSize", lib.getProgramLogSize) &&
                bind(h, "nvrtcGetProgramLog", lib.getProgramLog);
      if (!ok) {
        tried += (tried.empty() ? "" : ", ") + c + " (missing symbols)";
        dlclose(h);
        continue;
      }
      lib.handle = h;
      lib.path = c;
      return;
    }
    lib.error = "NVRTC (libnvrtc.so) not found; tried " + tried + " (set CUDA_HOME to the CUDA toolkit)";
  });
  return lib;
}

}  // namespace

bool nvrtcAvailable(std::string* why) {
  const Nvrtc& lib = library();
  if (!lib.handle && why) *why = lib.error;
  return lib.handle != nullptr;
}

int parseArch(const std::string& arch) {
  std::string digits = arch;
  for (const char* prefix : {"sm_", "compute_"})
    if (digits.rfind(prefix, 0) == 0) digits = digits.substr(std::string(prefix).size());
  if (digits.empty() || digits.size() > 3) return -1;
  for (char c : digits)
    if (c < '0' || c > '9') return -1;
  int n = std::stoi(digits);
  return n >= 50 ? n : -1;
}

std::string annotateLog(const std::string& log, const std::string& source) {
  std::vector<std::string> lines;
  std::istringstream in(source);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::string out;
  std::istringstream logIn(log);
  for (std::string l; std::getline(logIn, l);) {
    out += l + "\n";
    // "name(LINE): error: ..."
    size_t open = l.find('(');
    size_t close = l.find("): ");
    if (open == std::string::npos || close == std::string::npos || close < open) continue;
    std::string num = l.substr(open + 1, close - open - 1);
    if (num.empty() || num.find_first_not_of("0123456789") != std::string::npos) continue;
    size_t n = std::stoul(num);
    if (n >= 1 && n <= lines.size()) out += fmt::format("  {:>5} | {}\n", n, lines[n - 1]);
  }
  return out;
}

PtxResult compileToPtx(const std::string& source, const std::string& name, const PtxOptions& options) {
  int arch = parseArch(options.arch);
  if (arch < 0) throw std::invalid_argument(fmt::format("--arch '{}': expected sm_XX, e.g. sm_90", options.arch));
  const Nvrtc& lib = library();
  if (!lib.handle) throw NvrtcUnavailable(lib.error);
  int major = 0, minor = 0;
  lib.version(&major, &minor);
  PtxResult result;
  result.nvrtcVersion = fmt::format("{}.{}", major, minor);
  std::vector<std::string> opts = {fmt::format("--gpu-architecture=compute_{}", arch), "--std=c++17", "-default-device",
                                   "--fmad=true"};

  std::string key;
  for (const std::string& o : opts) key += o + "\n";
  key += result.nvrtcVersion + "\n";
  std::filesystem::path cached;
  const std::filesystem::path ptxCache = options.useCache ? cacheDirectory("ptx") : std::filesystem::path();
  if (!ptxCache.empty()) {
    cached = ptxCache / fmt::format("{:016x}.ptx", fnv1a(source, fnv1a(key)));
    std::ifstream f(cached, std::ios::binary);
    if (f) {
      std::stringstream ss;
      ss << f.rdbuf();
      result.ptx = ss.str();
      // Files are renamed into place whole; still, never trust one without a PTX header.
      if (!result.ptx.empty() && result.ptx.find(".version") != std::string::npos) {
        result.fromCache = true;
        return result;
      }
    }
  }

  Stopwatch clock;
  NvrtcProgram prog = nullptr;
  int rc = lib.createProgram(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr);
  if (rc != 0) throw CudaCompileError(fmt::format("nvrtcCreateProgram: {}", lib.errorString(rc)));
  std::vector<const char*> argv;
  for (const std::string& o : opts) argv.push_back(o.c_str());
  rc = lib.compileProgram(prog, static_cast<int>(argv.size()), argv.data());
  size_t logSize = 0;
  lib.getProgramLogSize(prog, &logSize);
  std::string log(logSize, '\0');
  if (logSize > 0) lib.getProgramLog(prog, log.data());
  while (!log.empty() && log.back() == '\0') log.pop_back();
  if (rc != 0) {
    lib.destroyProgram(&prog);
    throw CudaCompileError(fmt::format("NVRTC {} could not compile the generated CUDA C for {} ({}):\n{}", result.nvrtcVersion,
                                       options.arch, lib.errorString(rc), annotateLog(log, source)));
  }
  size_t size = 0;
  lib.getPTXSize(prog, &size);
  result.ptx.assign(size, '\0');
  lib.getPTX(prog, result.ptx.data());
  lib.destroyProgram(&prog);
  while (!result.ptx.empty() && result.ptx.back() == '\0') result.ptx.pop_back();
  result.compileMs = clock.milliseconds();

  if (!cached.empty()) {
    // Written to a temporary name and renamed, so a reader never sees half a file; a cache that
    // cannot be written is not an error.
    std::error_code ec;
    std::filesystem::create_directories(cached.parent_path(), ec);
    std::filesystem::path tmp = cached;
    tmp += fmt::format(".tmp{}", static_cast<long>(getpid()));
    {
      std::ofstream f(tmp, std::ios::binary);
      f << result.ptx;
    }
    std::filesystem::rename(tmp, cached, ec);
    if (ec) std::filesystem::remove(tmp, ec);
  }
  return result;
}

}  // namespace texc
