// The driver with --target cuda: compile --emit cuda|ptx (no GPU needed), --arch, the usage
// errors, and run --target cuda, which on a machine without a GPU exits 3 saying what is missing
// and writes nothing (with a GPU it runs and checks against the reference).
#include <catch2/catch.hpp>

#include "../driver/DriverTestUtil.h"
#include "compiler/backend/cuda/CudaDriver.h"
#include "compiler/backend/cuda/Nvrtc.h"
#include "tests/support/Skip.h"

namespace texc::drivertest {
namespace {

std::string example(const char* name) { return (kExamples / name).string(); }

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST_CASE("cuda driver: compile --emit cuda prints the CUDA C, no GPU needed", "[cuda][driver]") {
  Sandbox box;
  Result r = runTexc(box, {"compile", example("gelu.tex"), "--emit", "cuda"});
  INFO(r.describe());
  REQUIRE(r.status == 0);
  CHECK(has(r.out, "extern \"C\" __global__"));
  CHECK(has(r.out, "blockIdx.x*256+threadIdx.x"));
  // --target cuda alone emits CUDA C too.
  Result t = runTexc(box, {"compile", example("gelu.tex"), "--target", "cuda"});
  CHECK(t.status == 0);
  CHECK(t.out == r.out);
  // -o writes the same bytes.
  Result o = runTexc(box, {"compile", example("gelu.tex"), "--emit", "cuda", "-o", "gelu.cu"});
  CHECK(o.status == 0);
  CHECK(readBytes(box.work() / "gelu.cu") == r.out);
}

TEST_CASE("cuda driver: codegen-cuda is a pass: --print-after and --dump-dir show it", "[cuda][driver]") {
  Sandbox box;
  Result r = runTexc(box, {"compile", example("softmax.tex"), "--emit", "cuda", "--print-after", "codegen-cuda", "--dump-dir", "dumps"});
  INFO(r.describe());
  REQUIRE(r.status == 0);
  CHECK(has(r.err, "// ----- IR after codegen-cuda -----"));
  bool dumped = false;
  for (const auto& e : fs::directory_iterator(box.work() / "dumps")) dumped = dumped || has(e.path().filename().string(), "-codegen-cuda.cu");
  CHECK(dumped);
}

TEST_CASE("cuda driver: the mapping passes are listed for cuda only and print their effect", "[cuda][driver]") {
  Sandbox box;
  Result cuda = runTexc(box, {"passes", "--target", "cuda", "--cpu", "haswell"});
  Result cpu = runTexc(box, {"passes", "--cpu", "haswell"});
  INFO(cuda.describe());
  REQUIRE(cuda.status == 0);
  REQUIRE(cpu.status == 0);
  CHECK(has(cuda.out, "map-gpu"));
  CHECK(has(cuda.out, "sync-gpu-threads"));
  CHECK(cuda.out.find("map-gpu") < cuda.out.find("codegen-cuda"));
  CHECK_FALSE(has(cuda.out, "# not in this pipeline: map-gpu"));
  // The CPU pipeline lists them only as left out.
  CHECK(has(cpu.out, "# not in this pipeline: map-gpu (--target cpu"));
  CHECK(has(cpu.out, "# not in this pipeline: sync-gpu-threads (--target cpu"));
  CHECK_FALSE(has(cpu.out, ". map-gpu "));
  // --print-after=map-gpu: the loop IR with the kernel's mapping and the marks on its loops.
  Result r = runTexc(box, {"compile", example("softmax.tex"), "--target", "cuda", "--cpu", "haswell", "--print-after", "map-gpu"});
  INFO(r.describe());
  REQUIRE(r.status == 0);
  CHECK(has(r.err, "IR after map-gpu"));
  CHECK(has(r.err, "  # gpu: row-block, launch <<<"));
  CHECK(has(r.err, " blocks\n"));
  CHECK(has(r.err, " threads\n"));
  CHECK_FALSE(has(r.err, "combine across threads"));  // sync-gpu-threads places them, after map-gpu
  // --print-after-all: sync-gpu-threads adds the combines.
  Result all = runTexc(box, {"compile", example("softmax.tex"), "--target", "cuda", "--cpu", "haswell", "--print-after-all"});
  REQUIRE(all.status == 0);
  size_t sync = all.err.find("IR after sync-gpu-threads");
  REQUIRE(sync != std::string::npos);
  CHECK(all.err.find("combine across threads after it", sync) != std::string::npos);
  // The CPU pipeline never prints a mapping.
  Result onCpu = runTexc(box, {"compile", example("softmax.tex"), "--cpu", "haswell", "--print-after-all", "--emit", "loops"});
  REQUIRE(onCpu.status == 0);
  CHECK_FALSE(has(onCpu.err, "# gpu:"));
}

TEST_CASE("cuda driver: compile --emit ptx, for sm_90 by default without a GPU or for --arch", "[cuda][driver]") {
  std::string why;
  if (!nvrtcAvailable(&why)) testsupport::skipUnlessCudaRequired(why);
  Sandbox box;
  Result r = runTexc(box, {"compile", example("matmul.tex"), "--emit", "ptx", "--arch", "sm_80"});
  INFO(r.describe());
  REQUIRE(r.status == 0);
  CHECK(has(r.out, ".target sm_80"));
  CHECK(has(r.out, ".entry texc_k0_C"));
  Result d = runTexc(box, {"compile", example("gelu.tex"), "--emit", "ptx", "--time-passes"});
  INFO(d.describe());
  REQUIRE(d.status == 0);
  CHECK(has(d.err, "nvrtc"));
  bool gpu = true;
  try {
    CudaDevice::open();
  } catch (const CudaUnavailable&) {
    gpu = false;
  }
  if (!gpu) CHECK(has(d.out, ".target sm_90"));
}

TEST_CASE("cuda driver: usage errors exit 2", "[cuda][driver]") {
  Sandbox box;
  struct Bad {
    std::vector<std::string> args;
    const char* message;
  };
  std::vector<Bad> bad = {
      {{"compile", example("gelu.tex"), "--target", "cuda", "--emit", "llvm"}, "--emit llvm is a CPU form"},
      {{"compile", example("gelu.tex"), "--emit", "ptx", "--arch", "sm_banana"}, "--arch 'sm_banana'"},
      {{"compile", example("gelu.tex"), "--emit", "cuda", "--arch", "sm_90"}, "--arch applies to --emit ptx only"},
      {{"compile", example("gelu.tex"), "--target", "tpu"}, "--target"},
      {{"run", example("gelu.tex"), "--target", "tpu", "--random", "1"}, "--target"},
  };
  for (const Bad& b : bad) {
    Result r = runTexc(box, b.args);
    INFO(r.describe());
    CHECK(r.status == 2);
    CHECK(has(r.err, b.message));
    CHECK(r.out.empty());
  }
}

TEST_CASE("cuda driver: run --target cuda without a GPU exits 3 naming what is missing", "[cuda][driver]") {
  Sandbox box;
  bool gpu = true;
  std::string why;
  try {
    CudaDevice::open();
  } catch (const CudaUnavailable& e) {
    gpu = false;
    why = e.what();
  }
  if (gpu) {
    // A machine with a GPU: the same command runs and matches the reference.
    Result r = runTexc(box, {"run", example("softmax.tex"), "-D", "R=64", "-D", "D=1000", "--target", "cuda", "--random", "1", "--check"});
    INFO(r.describe());
    CHECK(r.status == 0);
    CHECK(has(r.out, "y: max abs error"));
    return;
  }
  Result r = runTexc(box, {"run", example("gelu.tex"), "-D", "N=4", "-D", "D=8", "--target", "cuda", "--random", "1", "--output-dir", "out"});
  INFO(r.describe());
  CHECK(r.status == 3);
  CHECK(has(r.err, "--target cuda: "));
  CHECK((has(r.err, "libcuda") || has(r.err, "no CUDA device") || has(r.err, "cuInit")));
  CHECK(has(r.err, why));
  CHECK(!fs::exists(box.work() / "out"));
  CHECK(fs::is_empty(box.work()));
  Result c = runTexc(box, {"compare", example("gelu.tex"), "-D", "N=4", "-D", "D=8", "--target", "cuda", "--repeat", "1"});
  INFO(c.describe());
  CHECK(c.status == 3);
  CHECK(has(c.err, "--target cuda: "));
  CHECK(c.out.empty());
}

}  // namespace
}  // namespace texc::drivertest
