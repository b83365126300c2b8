// split-keys (cuda target): an online-softmax kernel with too few query rows runs its keys in
// slices that store their max, sum and output rows, and a kernel combines them; the rule's
// numbers, the two kernels, how map-gpu maps them, and where it does not apply.
#include <catch2/catch.hpp>

#include "CudaTestSupport.h"
#include "compiler/backend/cuda/CodeGenCUDA.h"
#include "compiler/loops/gpu/SplitKeys.h"
#include "compiler/passes/Pipeline.h"

namespace texc::cudatest {
namespace {

TEST_CASE("split-keys: the number of slices", "[cuda][split-keys]") {
  using loops::gpu::splitKeysSlices;
  CHECK(splitKeysSlices(4096, 4096) == 4);    // 16384 rows x slices
  CHECK(splitKeysSlices(1, 4096) == 16);      // one query row (decoding): the most slices of 256 keys
  CHECK(splitKeysSlices(512, 512) == 2);      // slices of at least 256 keys
  CHECK(splitKeysSlices(16384, 4096) == 0);   // enough rows already (a batch of heads)
  CHECK(splitKeysSlices(4096, 500) == 0);     // too few keys for two slices
  CHECK(splitKeysSlices(100, 4099) == 0);     // a prime number of keys
}

TEST_CASE("split-keys: causal attention at N = 4096 runs its keys in 4 slices, then combines them", "[cuda][split-keys]") {
  std::unique_ptr<Compilation> c = verifiedCuda("examples/attention.tex", {"N=4096"});
  const loops::LoopProgram& p = *c->state.loops;
  const std::string text = loops::printLoopProgram(p);
  INFO(text);
  for (const std::string& problem : loops::verifyLoopProgram(p)) FAIL_CHECK(problem);
  REQUIRE(p.kernels.size() == 2);
  CHECK(contains(text, "buffer O_max : f32[4, 4096] temp\nbuffer O_sum : f32[4, 4096] temp\nbuffer O_part : f32[4, 4096, 64] temp\n"));
  // The slices: the pass over 1024 keys at 1024 * kslice + j, the mask rewritten with it, the
  // output row and the statistics stored per slice.
  CHECK(contains(text, "  for kslice < 4 parallel blocks\n    for i < 4096 tile-rows\n"));
  CHECK(contains(text, "      for j < 1024 staged\n        if 0 <= (i - (1024 * kslice + j)) < 4096  # otherwise the term is skipped\n"));
  CHECK(contains(text, "O_part[kslice, i, d] = ((O_part[kslice, i, d] * acc4) + (acc5 * V[(1024 * kslice + j), d]))"));
  CHECK(contains(text, "      O_max[kslice, i] = acc0\n      O_sum[kslice, i] = acc1\n"));
  // The combination, then the kernel's own normalisation.
  CHECK(contains(text, "    for kslice < 4 threads\n      acc0 = max(acc0, O_max[kslice, i])\n"));
  CHECK(contains(text, "acc1 += (select((O_max[kslice, i] == -inf), 0, exp((O_max[kslice, i] - acc0))) * O_sum[kslice, i])"));
  CHECK(contains(text, "acc7 += (select((O_max[kslice, i] == -inf), 0, exp((O_max[kslice, i] - acc0))) * O_part[kslice, i, d])"));
  CHECK(contains(text, "    for d < 64 vector threads\n      O[i, d] = (O[i, d] * (1 / acc1))\n"));
  // The slices' kernel stays online-tile with rows in registers (now 4 lanes of 16 elements for
  // 16384 rows), the causal stage skip reading the slice; one lane stores the statistics.
  const loops::Kernel& keys = p.kernels[0];
  REQUIRE(keys.gpu);
  CHECK(keys.gpu->strategy == loops::GpuStrategy::OnlineTile);
  const std::string& src = c->state.cuda->source;
  CHECK(contains(src, "const float* __restrict__ O_p, float* __restrict__ O_max_p, float* __restrict__ O_sum_p, float* __restrict__ O_part_p"));
  CHECK(contains(src, "if (active && lane == 0) O_max_p[4096 * kslice_ + i_] = acc0;"));
  CHECK(contains(src, "live = live && (i_ - (1024 * kslice_ + j_)) >= 0;"));
  REQUIRE(c->state.memoryPlan);
  for (size_t b = 4; b < 7; ++b) CHECK(c->state.memoryPlan->find(static_cast<int>(b)) != nullptr);
}

TEST_CASE("split-keys: where it does not apply", "[cuda][split-keys]") {
  // Short key passes, and the CPU target (tile-online-softmax there).
  CHECK(verifiedCuda("examples/attention.tex", {"N=300"})->state.loops->kernels.size() == 1);
  PipelineOptions off;
  off.disabledPasses = {"split-keys"};
  CHECK(verifiedCuda("examples/attention.tex", {"N=4096"}, off)->state.loops->kernels.size() == 1);
  TestProgram attention = makeProgram(fs::path(TEXC_SOURCE_DIR) / "examples" / "attention.tex", {"N=4096"});
  std::unique_ptr<Compilation> cpu = compileTo(attention, Stage::Loops, Target::Cpu);
  REQUIRE(cpu->ok);
  CHECK(cpu->state.loops->kernels.size() == 1);
  // A logsumexp's pass reads nothing per key that online-tile stages: it is not online-tile,
  // and not split.
  CHECK(verifiedCuda("tests/e2e/logsumexp_rows.tex", {"C=4096"})->state.loops->kernels.size() == 2);
}

}  // namespace
}  // namespace texc::cudatest
