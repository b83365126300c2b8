#include "tests/random/EmulatedCuda.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "compiler/backend/cuda/CudaExecutable.h"
#include "runtime/Buffer.h"

namespace texc::random {

namespace fs = std::filesystem;

namespace {

std::string compilerCommand() {
  const char* cxx = std::getenv("CXX");
  return cxx && *cxx ? cxx : "c++";
}

// The same flags for the precompiled header and every program: a header is only used precompiled
// when they match. -O0: the programs are small, and compile time is what a run spends here.
const char* kFlags = "-std=c++20 -O0 -w -fPIC -pthread";

std::string readText(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The directory holding CudaEmulation.h (and its .gch); removed when the process that made it ends.
struct EmulationDir {
  fs::path dir;
  pid_t owner = 0;
  std::string problem;
  ~EmulationDir() {
    std::error_code ec;
    if (!dir.empty() && getpid() == owner) fs::remove_all(dir, ec);
  }
};

EmulationDir& emulationDir() {
  static EmulationDir d = [] {
    EmulationDir e;
    e.owner = getpid();
    if (std::system((compilerCommand() + " --version > /dev/null 2>&1").c_str()) != 0) {
      e.problem = fmt::format("no C++ compiler ('{}') to build the emulated kernels with", compilerCommand());
      return e;
    }
    e.dir = fs::temp_directory_path() / fmt::format("texc-difftest-cuda-{}", getpid());
    std::error_code ec;
    fs::create_directories(e.dir, ec);
    fs::copy_file(TEXC_CUDA_EMULATION_HEADER, e.dir / "CudaEmulation.h", fs::copy_options::overwrite_existing, ec);
    if (ec) {
      e.problem = fmt::format("cannot copy the emulation header: {}", ec.message());
      return e;
    }
    // Without the precompiled header every program still compiles, only slower.
    std::string cmd = fmt::format("{} {} -x c++-header '{}' -o '{}' > /dev/null 2>&1", compilerCommand(), kFlags,
                                  (e.dir / "CudaEmulation.h").string(), (e.dir / "CudaEmulation.h.gch").string());
    (void)std::system(cmd.c_str());
    return e;
  }();
  return d;
}

// An element's bytes in memory order, as hex.
std::string hexBytes(const std::byte* p, size_t n) {
  std::string out = "0x";
  for (size_t i = 0; i < n; ++i) out += fmt::format("{:02x}", static_cast<unsigned>(p[i]));
  return out;
}

}  // namespace

const std::string& prepareCudaEmulation() { return emulationDir().problem; }

void runEmulatedCuda(const CudaModule& module, const loops::LoopProgram& program, const loops::MemoryPlan* plan,
                     void* const* host) {
  const EmulationDir& e = emulationDir();
  if (!e.problem.empty()) throw std::runtime_error(e.problem);

  // One entry point per kernel that unpacks the buffer table into typed parameters, as the
  // driver API does from the launch's parameter array.
  std::string source = "#include \"CudaEmulation.h\"\n" + module.source;
  for (const CudaKernel& k : module.kernels) {
    std::string args;
    for (size_t b = 0; b < k.paramTypes.size(); ++b) args += fmt::format("{}({})b[{}]", b ? ", " : "", k.paramTypes[b], b);
    source += fmt::format("extern \"C\" void {}_entry(void* const* b) {{ {}({}); }}\n", k.symbol, k.symbol, args);
  }
  // A new name per call: the emulation's inline variables are unique symbols, which keep a loaded
  // object from ever being unloaded, and dlopen of a loaded path would return the old kernels.
  static int calls = 0;
  std::string stem = fmt::format("kernels-{}-{}", getpid(), calls++);
  fs::path src = e.dir / (stem + ".cpp"), lib = e.dir / (stem + ".so"), log = e.dir / (stem + ".log");
  std::ofstream(src) << source;
  std::string cmd = fmt::format("{} {} -shared -I'{}' '{}' -o '{}' > '{}' 2>&1", compilerCommand(), kFlags, e.dir.string(),
                                src.string(), lib.string(), log.string());
  int rc = std::system(cmd.c_str());
  auto cleanup = [&] {
    std::error_code ec;
    for (const fs::path& p : {src, lib, log}) fs::remove(p, ec);
  };
  if (rc != 0) {
    std::string text = readText(log).substr(0, 3000);
    cleanup();
    throw std::runtime_error("the generated CUDA C does not compile as C++:\n" + text);
  }
  void* handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  cleanup();  // the loaded object stays mapped
  if (!handle) throw std::runtime_error(std::string("cannot load the emulated kernels: ") + dlerror());
  using Launch = void (*)(void (*)(void* const*), void* const*, unsigned, unsigned, bool);
  auto launch = reinterpret_cast<Launch>(dlsym(handle, "texc_emu_launch"));
  auto setAdversarial = reinterpret_cast<void (*)(bool)>(dlsym(handle, "texc_emu_set_adversarial"));
  std::vector<void (*)(void* const*)> entries;
  for (const CudaKernel& k : module.kernels) {
    entries.push_back(reinterpret_cast<void (*)(void* const*)>(dlsym(handle, (k.symbol + "_entry").c_str())));
    if (!launch || !setAdversarial || !entries.back()) {
      dlclose(handle);
      throw std::runtime_error("the emulated kernels lack " + k.symbol);
    }
  }

  // The device arena, laid out as CudaExecutable lays it out on the GPU.
  DeviceArenaLayout layout = deviceArenaLayout(program, plan);
  std::vector<size_t> bytes;
  for (const loops::Buffer& b : program.buffers) bytes.push_back(static_cast<size_t>(b.numElements()) * dtypeBytes(b.dtype));
  // One run of every kernel in program order on a fresh arena whose bytes, inputs aside, are `fill`.
  auto runAll = [&](Buffer& arena, unsigned char fill, bool adversarial) {
    arena = Buffer::uninitialized(std::max<size_t>(layout.bytes, 256));
    std::memset(arena.data(), fill, arena.size());
    std::vector<void*> device;
    for (size_t b = 0; b < program.buffers.size(); ++b) {
      device.push_back(arena.data() + layout.offsets[b]);
      if (program.buffers[b].kind == loops::BufferKind::Input) std::memcpy(device[b], host[b], bytes[b]);
    }
    setAdversarial(adversarial);
    for (size_t n = 0; n < module.kernels.size(); ++n) {
      const CudaKernel& k = module.kernels[n];
      // Grid-stride kernels have no communication between threads (no barrier, no shuffle).
      launch(entries[n], device.data(), static_cast<unsigned>(k.blocks), static_cast<unsigned>(k.threads),
             k.strategy != CudaStrategy::GridStride);
    }
    setAdversarial(false);
  };
  // Forward on zeroed memory, then adversarially (blocks and threads last to first, NaN in
  // shared memory and in every byte of the arena that is not an input). The emulation is
  // deterministic, so the outputs must agree bit for bit; the second run's are returned, so
  // that an element never written reaches the comparison with the reference as NaN.
  Buffer forward, adversarial;
  runAll(forward, 0x00, false);
  runAll(adversarial, 0xFF, true);
  dlclose(handle);
  for (size_t b = 0; b < program.buffers.size(); ++b) {
    if (program.buffers[b].kind != loops::BufferKind::Output) continue;
    const std::byte* f = forward.data() + layout.offsets[b];
    const std::byte* a = adversarial.data() + layout.offsets[b];
    size_t width = dtypeBytes(program.buffers[b].dtype);
    for (size_t i = 0; i * width < bytes[b]; ++i)
      if (std::memcmp(f + i * width, a + i * width, width) != 0)
        throw std::runtime_error(fmt::format(
            "the adversarial run (blocks and threads in reverse order, NaN-filled memory) differs from the forward run: "
            "{} element {}: bytes {} forward, {} adversarial",
            program.buffers[b].name, i, hexBytes(f + i * width, width), hexBytes(a + i * width, width)));
    std::memcpy(host[b], a, bytes[b]);
  }
}

}  // namespace texc::random
