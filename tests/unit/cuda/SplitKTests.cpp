// split-k (cuda target): a tiled contraction whose tiles leave SMs idle and whose reduction is long
// becomes a batch of partial sums over slices of the reduction and a kernel that adds them; the
// rule's numbers, what the two kernels are, how map-gpu maps them, and where it does not apply.
#include <catch2/catch.hpp>

#include "CudaTestSupport.h"
#include "compiler/backend/cuda/CodeGenCUDA.h"
#include "compiler/loops/gpu/SplitK.h"
#include "compiler/passes/Pipeline.h"

namespace texc::cudatest {
namespace {

TEST_CASE("split-k: the number of slices", "[cuda][split-k]") {
  using loops::gpu::splitKSlices;
  // M = 128, N = K = 4096 at 64x64: 128 tiles for 132 SMs. 3 does not divide K; 4 gives 512 blocks.
  CHECK(splitKSlices(128, 4096, 132) == 4);
  // 2 tiles: no S up to 16 reaches 264 blocks; the most slices of at least 256 terms.
  CHECK(splitKSlices(2, 2048, 132) == 8);
  CHECK(splitKSlices(1, 1536, 132) == 6);
  CHECK(splitKSlices(100, 1030, 132) == 2);  // 5 slices would hold 206 terms
  // Enough tiles for every SM (matmul 1024: 256 of 64x64), or too short a reduction: none.
  CHECK(splitKSlices(256, 1024, 132) == 0);
  CHECK(splitKSlices(132, 8192, 132) == 0);
  CHECK(splitKSlices(4, 511, 132) == 0);
  CHECK(splitKSlices(4, 1031, 132) == 0);  // a prime
  CHECK(splitKSlices(24, 1000, 132) == 0);  // under kMinSplitK: the sum's launch would cost what the split saves
}

TEST_CASE("split-k: a short, wide product with a long reduction becomes partial sums and their sum", "[cuda][split-k]") {
  std::unique_ptr<Compilation> c = verifiedCuda("examples/matmul.tex", {"M=128", "N=4096", "K=4096"});
  const loops::LoopProgram& p = *c->state.loops;
  INFO(loops::printLoopProgram(p));
  CHECK(loops::verifyLoopProgram(p).empty());
  REQUIRE(p.kernels.size() == 2);
  const loops::Buffer& partials = p.buffers.back();
  CHECK(partials.name == "C_partials");
  CHECK(partials.kind == loops::BufferKind::Temp);
  CHECK(partials.shape == std::vector<int64_t>{4, 128, 4096});
  // The slices: a batch of 4 on the tiled contraction, 128 tiles each; both operands by 16-byte
  // copies at addresses that carry the slice.
  const loops::Kernel& part = p.kernels[0];
  REQUIRE(part.gpu);
  CHECK(part.gpu->strategy == loops::GpuStrategy::TiledContraction);
  CHECK(part.gpu->blocks == 512);
  CHECK(contains(part.schedule, "split-K: the reduction's 4096 terms in 4 slices of 1024 (kslice): 512 blocks for 132 SMs, where the tiles alone gave 128"));
  const std::string& src = c->state.cuda->source;
  CHECK(contains(src, "&A_p[4096 * i_ + (k_ + 1024 * kslice_)]"));
  CHECK(contains(src, "&B_p[4096 * (1024 * kslice_ + k_) + j_]"));
  CHECK(contains(src, "C_partials_p[524288 * kslice_ + 4096 * i_ + j_] = acc0;"));
  // The sum: slice by slice, in order, into C.
  const loops::Kernel& sum = p.kernels[1];
  REQUIRE(sum.gpu);
  CHECK(sum.gpu->strategy == loops::GpuStrategy::GridStride);
  CHECK(p.buffers[static_cast<size_t>(sum.outputBuffer)].name == "C");
  CHECK(contains(loops::printLoopProgram(p), "      for kslice < 4\n        acc0 += C_partials[kslice, i, j]\n      C[i, j] = acc0\n"));
  // The memory plan places the partial sums in the arena.
  REQUIRE(c->state.memoryPlan);
  CHECK(c->state.memoryPlan->find(static_cast<int>(p.buffers.size() - 1)) != nullptr);
}

TEST_CASE("split-k: where it does not apply", "[cuda][split-k]") {
  // Enough tiles: matmul 1024 runs 256 tiles of 64x64.
  CHECK(verifiedCuda("examples/matmul.tex", {"M=1024", "N=1024", "K=1024"})->state.loops->kernels.size() == 1);
  // Too short a reduction to cut into slices of 256.
  CHECK(verifiedCuda("examples/matmul.tex", {"M=64", "N=64", "K=1000"})->state.loops->kernels.size() == 1);
  CHECK(verifiedCuda("examples/matmul_bias_gelu.tex", {})->state.loops->kernels.size() == 1);  // 24 tiles, K = 512
  // A pool in the epilogue (the tile's columns are windows) is left alone.
  CHECK(verifiedCuda("tests/e2e/lowp_matmul_pool8_bf16.tex", {"K=2048"})->state.loops->kernels.size() == 1);
  // --disable-pass, --no-tile and the CPU target.
  PipelineOptions off;
  off.disabledPasses = {"split-k"};
  CHECK(verifiedCuda("examples/matmul.tex", {"M=128", "N=4096", "K=4096"}, off)->state.loops->kernels.size() == 1);
  PipelineOptions untiled;
  untiled.tile = false;
  CHECK(verifiedCuda("examples/matmul.tex", {"M=128", "N=4096", "K=4096"}, untiled)->state.loops->kernels.size() == 1);
  TestProgram mm = makeProgram(fs::path(TEXC_SOURCE_DIR) / "examples" / "matmul.tex", {"M=128", "N=4096", "K=4096"});
  std::unique_ptr<Compilation> cpu = compileTo(mm, Stage::Loops, Target::Cpu);
  REQUIRE(cpu->ok);
  CHECK(cpu->state.loops->kernels.size() == 1);
}

}  // namespace
}  // namespace texc::cudatest
