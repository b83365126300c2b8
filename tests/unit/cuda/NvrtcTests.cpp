// NVRTC: every suite program's CUDA C compiles to PTX that ptxas accepts for sm_90; compile
// errors point at the generated lines; the PTX cache; --arch parsing. Tests that need NVRTC or
// ptxas are skipped when they are absent, and fail instead in CI where the toolkit is installed
// (tests/support/Skip.h).
#include <fmt/format.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>

#include "CudaTestSupport.h"
#include "compiler/backend/cuda/CodeGenCUDA.h"
#include "compiler/backend/cuda/Nvrtc.h"
#include "runtime/Timer.h"
#include "tests/support/Skip.h"

namespace texc::cudatest {
namespace {

// ptxas from the toolkit ($CUDA_HOME/bin, /usr/local/cuda/bin) or the PATH; empty when absent.
std::string findPtxas() {
  std::vector<std::string> candidates;
  if (const char* home = std::getenv("CUDA_HOME"); home && *home) candidates.push_back(std::string(home) + "/bin/ptxas");
  candidates.push_back("/usr/local/cuda/bin/ptxas");
  for (const std::string& c : candidates)
    if (::access(c.c_str(), X_OK) == 0) return c;
  if (std::system("ptxas --version > /dev/null 2>&1") == 0) return "ptxas";
  return "";
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / fmt::format("texc-nvrtc-test-{}", ::getpid());
  TempDir() { fs::create_directories(path); }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Compiles `source` to PTX for sm_80, sm_90 and sm_75 (before bf16 mma and cp.async), hands each
// to `check` and has `ptxas` (findPtxas) assemble it.
// How often `what` occurs in `text`.
int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

void forEachArch(const std::string& source, const std::string& ptxas, const std::function<void(const std::string&, const std::string&)>& check) {
  TempDir tmp;
  for (const char* arch : {"sm_80", "sm_90", "sm_75"}) {
    INFO(arch);
    PtxOptions opts;
    opts.arch = arch;
    opts.useCache = false;
    PtxResult r = compileToPtx(source, "texc_program.cu", opts);
    check(arch, r.ptx);
    fs::path ptx = tmp.path / "program.ptx";
    std::ofstream(ptx) << r.ptx;
    std::string cmd = fmt::format("'{}' -arch={} '{}' -o /dev/null 2>&1", ptxas, arch, ptx.string());
    CHECK(std::system(cmd.c_str()) == 0);
  }
}

TEST_CASE("nvrtc: every example and e2e program compiles to PTX that ptxas accepts for sm_90", "[cuda][nvrtc]") {
  std::string why;
  if (!nvrtcAvailable(&why)) testsupport::skipUnlessCudaRequired(why);
  std::string ptxas = findPtxas();
  if (ptxas.empty()) testsupport::skipUnlessCudaRequired("ptxas not found (CUDA_HOME/bin, /usr/local/cuda/bin, PATH)");
  TempDir tmp;
  int compiled = 0;
  for (const TestProgram& p : suitePrograms()) {
    INFO(p.label);
    std::unique_ptr<Compilation> c = compileTo(p, Stage::CUDA);
    REQUIRE(c->ok);
    REQUIRE(c->state.cuda);
    PtxOptions opts;
    opts.useCache = false;
    PtxResult r = compileToPtx(c->state.cuda->source, "texc_program.cu", opts);
    CHECK_FALSE(r.fromCache);
    CHECK(r.ptx.find(".target sm_90") != std::string::npos);
    for (const CudaKernel& k : c->state.cuda->kernels) CHECK(r.ptx.find(".entry " + k.symbol) != std::string::npos);
    fs::path ptx = tmp.path / "program.ptx";
    std::ofstream(ptx) << r.ptx;
    fs::path log = tmp.path / "ptxas.log";
    int rc = std::system(fmt::format("'{}' -arch=sm_90 '{}' -o '{}' > '{}' 2>&1", ptxas, ptx.string(), (tmp.path / "program.cubin").string(),
                                     log.string())
                             .c_str());
    std::ifstream logIn(log);
    std::string logText((std::istreambuf_iterator<char>(logIn)), std::istreambuf_iterator<char>());
    INFO("ptxas: " << logText);
    CHECK(rc == 0);
    ++compiled;
  }
  CHECK(compiled >= 60);
}

TEST_CASE("nvrtc: bf16/f16 contractions are mma.sync in the PTX for sm_80 and sm_90, shuffles before", "[cuda][nvrtc]") {
  std::string why;
  if (!nvrtcAvailable(&why)) testsupport::skipUnlessCudaRequired(why);
  std::string ptxas = findPtxas();
  if (ptxas.empty()) testsupport::skipUnlessCudaRequired("ptxas not found (CUDA_HOME/bin, /usr/local/cuda/bin, PATH)");
  TestProgram p = makeProgram(fs::path(TEXC_SOURCE_DIR) / "tests" / "e2e" / "lowp_matmul_bf16.tex", {"M=2100", "N=2100", "K=40"});
  std::unique_ptr<Compilation> c = compileTo(p, Stage::CUDA);
  REQUIRE(c->ok);
  REQUIRE(c->state.cuda);
  forEachArch(c->state.cuda->source, ptxas, [&](const std::string& arch, const std::string& ptx) {
    const bool tensorCores = arch != "sm_75";
    // 16 fragments per k-step in each of C and G's sum (bf16), and H (f16).
    CHECK(count(ptx, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") == (tensorCores ? 32 : 0));
    CHECK(count(ptx, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") == (tensorCores ? 16 : 0));
    if (!tensorCores) CHECK(ptx.find("shfl.sync") != std::string::npos);
  });
}

TEST_CASE("nvrtc: f32 matmul stages its tiles with cp.async in three stages for sm_80 and sm_90, plain copies before", "[cuda][nvrtc]") {
  std::string why;
  if (!nvrtcAvailable(&why)) testsupport::skipUnlessCudaRequired(why);
  std::string ptxas = findPtxas();
  if (ptxas.empty()) testsupport::skipUnlessCudaRequired("ptxas not found (CUDA_HOME/bin, /usr/local/cuda/bin, PATH)");
  std::unique_ptr<Compilation> c = compileTo(makeProgram(fs::path(TEXC_SOURCE_DIR) / "examples" / "matmul.tex", {}), Stage::CUDA);
  REQUIRE(c->ok);
  REQUIRE(c->state.cuda);
  forEachArch(c->state.cuda->source, ptxas, [&](const std::string& arch, const std::string& ptx) {
    const bool async = arch != "sm_75";
    // 2 copies of 16 bytes of A and 2 of B per thread and k-step, zero-filled where the source
    // size is 0.
    CHECK((ptx.find("cp.async.cg.shared.global") != std::string::npos) == async);
    CHECK((ptx.find(", 16, %r") != std::string::npos) == async);
    // Three stages: each step waits until at most one group (the next step's) is in flight.
    CHECK((ptx.find("cp.async.wait_group 1") != std::string::npos) == async);
    CHECK((ptx.find("cp.async.commit_group") != std::string::npos) == async);
  });
}

// --math=fast: f32 matmul on TF32 tensor cores: two m16n8k8 per fragment and k-step (4 x 4
// fragments of a warp: 32), 24 conversions per k-half (16 of A, 8 of B); before sm_80 the
// shuffled fallback, which ptxas accepts too.
TEST_CASE("nvrtc: f32 matmul with --math=fast runs mma.m16n8k8.tf32 for sm_80 and sm_90", "[cuda][nvrtc]") {
  std::string why;
  if (!nvrtcAvailable(&why)) testsupport::skipUnlessCudaRequired(why);
  std::string ptxas = findPtxas();
  if (ptxas.empty()) testsupport::skipUnlessCudaRequired("ptxas not found (CUDA_HOME/bin, /usr/local/cuda/bin, PATH)");
  PipelineOptions fast;
  fast.target = Target::Cuda;
  fast.math = MathMode::Fast;
  // 4096 x 4096: 128 x 128 tiles (two per SM)
  std::unique_ptr<Compilation> c =
      compileTo(makeProgram(fs::path(TEXC_SOURCE_DIR) / "examples" / "matmul.tex", {"M=4096", "N=4096"}), Stage::CUDA, fast);
  REQUIRE(c->ok);
  REQUIRE(c->state.cuda);
  forEachArch(c->state.cuda->source, ptxas, [&](const std::string& arch, const std::string& ptx) {
    const bool tensorCores = arch != "sm_75";
    CHECK(count(ptx, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32") == (tensorCores ? 32 : 0));
    CHECK(count(ptx, "cvt.rna.tf32.f32") == (tensorCores ? 48 : 0));
    if (!tensorCores) CHECK(ptx.find("shfl.sync") != std::string::npos);
  });
}

// The row kernels' max and min compile to selections: softmax's PTX branches only for its loops
// (6 conditional branches; 56 and 75 unconditional ones when max had early returns).
TEST_CASE("nvrtc: softmax's NaN-propagating max is branchless in the PTX", "[cuda][nvrtc]") {
  std::string why;
  if (!nvrtcAvailable(&why)) testsupport::skipUnlessCudaRequired(why);
  std::string ptxas = findPtxas();
  if (ptxas.empty()) testsupport::skipUnlessCudaRequired("ptxas not found (CUDA_HOME/bin, /usr/local/cuda/bin, PATH)");
  std::unique_ptr<Compilation> c = compileTo(makeProgram(fs::path(TEXC_SOURCE_DIR) / "examples" / "softmax.tex", {}), Stage::CUDA);
  REQUIRE(c->ok);
  REQUIRE(c->state.cuda);
  forEachArch(c->state.cuda->source, ptxas, [&](const std::string& arch, const std::string& ptx) {
    INFO(arch);
    size_t conditional = 0;  // `@%p bra`: a predicated branch
    for (size_t at = ptx.find(" bra"); at != std::string::npos; at = ptx.find(" bra", at + 1))
      conditional += ptx.find('@', ptx.rfind('\n', at)) < at;
    CHECK(conditional <= 8);
    CHECK(ptx.find("bra.uni") == std::string::npos);
    CHECK(ptx.find("selp.f32") != std::string::npos);
  });
}

TEST_CASE("nvrtc: compile time of gelu, matmul and conv_pool at their default sizes", "[cuda][nvrtc]") {
  std::string why;
  if (!nvrtcAvailable(&why)) testsupport::skipUnlessCudaRequired(why);
  for (const char* name : {"gelu.tex", "matmul.tex", "conv_pool.tex"}) {
    std::unique_ptr<Compilation> c = compileTo(makeProgram(fs::path(TEXC_SOURCE_DIR) / "examples" / name, {}), Stage::CUDA);
    REQUIRE(c->ok);
    PtxOptions opts;
    opts.useCache = false;
    PtxResult r = compileToPtx(c->state.cuda->source, "texc_program.cu", opts);
    CHECK(r.compileMs > 0);
    // Printed for docs/cuda.md (the figures there come from this test).
    WARN(fmt::format("NVRTC {} compile time of examples/{} ({} kernels: {}): {:.1f} ms", r.nvrtcVersion, name, c->state.cuda->kernels.size(),
                     strategyName(c->state.cuda->kernels[0].strategy), r.compileMs));
  }
}

TEST_CASE("nvrtc: a compile error shows the generated source line it points at", "[cuda][nvrtc]") {
  std::string why;
  if (!nvrtcAvailable(&why)) testsupport::skipUnlessCudaRequired(why);
  std::string source = "extern \"C\" __global__ void broken(float* p) {\n  p[0] = no_such_name;\n}\n";
  PtxOptions opts;
  opts.useCache = false;
  try {
    compileToPtx(source, "broken.cu", opts);
    FAIL("the broken source compiled");
  } catch (const CudaCompileError& e) {
    std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find("broken.cu(2)") != std::string::npos);
    CHECK(msg.find("no_such_name") != std::string::npos);
    CHECK(msg.find("    2 |   p[0] = no_such_name;") != std::string::npos);
  }
}

TEST_CASE("nvrtc: PTX is cached by source hash and reused", "[cuda][nvrtc]") {
  std::string why;
  if (!nvrtcAvailable(&why)) testsupport::skipUnlessCudaRequired(why);
  TempDir tmp;
  const char* old = std::getenv("XDG_CACHE_HOME");
  std::string saved = old ? old : "";
  ::setenv("XDG_CACHE_HOME", tmp.path.c_str(), 1);
  std::string source = "extern \"C\" __global__ void twice(float* p) { p[threadIdx.x] *= 2.0f; }\n";
  PtxResult first = compileToPtx(source, "twice.cu");
  PtxResult second = compileToPtx(source, "twice.cu");
  PtxResult other = compileToPtx(source + "// changed\n", "twice.cu");
  PtxOptions sm80;
  sm80.arch = "sm_80";
  PtxResult otherArch = compileToPtx(source, "twice.cu", sm80);
  if (old) ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  else ::unsetenv("XDG_CACHE_HOME");
  CHECK_FALSE(first.fromCache);
  CHECK(second.fromCache);
  CHECK(second.ptx == first.ptx);
  CHECK_FALSE(other.fromCache);
  CHECK_FALSE(otherArch.fromCache);
  CHECK(otherArch.ptx.find(".target sm_80") != std::string::npos);
  CHECK(fs::exists(tmp.path / "texc" / "ptx"));
}

TEST_CASE("nvrtc: --arch values", "[cuda][nvrtc]") {
  CHECK(parseArch("sm_90") == 90);
  CHECK(parseArch("sm_80") == 80);
  CHECK(parseArch("compute_90") == 90);
  CHECK(parseArch("90") == 90);
  CHECK(parseArch("sm_") == -1);
  CHECK(parseArch("sm_9x") == -1);
  CHECK(parseArch("sm_10") == -1);  // below what NVRTC supports
  CHECK(parseArch("gfx90a") == -1);
  CHECK_THROWS_AS(compileToPtx("", "x.cu", PtxOptions{"sm_banana", false}), std::invalid_argument);
}

TEST_CASE("nvrtc: annotateLog adds the cited line after each message", "[cuda][nvrtc]") {
  std::string log = "k.cu(3): error: bad thing\nk.cu(99): warning: out of range\nno line here\n";
  std::string src = "a\nb\nthe third line\n";
  std::string out = annotateLog(log, src);
  CHECK(out.find("k.cu(3): error: bad thing\n      3 | the third line\n") != std::string::npos);
  CHECK(out.find("k.cu(99): warning: out of range\nno line here\n") != std::string::npos);
}

}  // namespace
}  // namespace texc::cudatest
