// map-gpu and sync-gpu-threads: the mapping each kind of kernel gets is visible in the printed
// loop IR (the kernel's "# gpu:" lines, the marks after its loops), the passes run for the cuda
// target only, codegen-cuda prints what they chose, and the verifier checks the mapping.
#include <catch2/catch.hpp>
#include <stdexcept>

#include "CudaTestSupport.h"
#include "compiler/backend/cuda/CodeGenCUDA.h"
#include "compiler/loops/Walk.h"
#include "compiler/loops/gpu/MapGpu.h"
#include "compiler/loops/gpu/SyncGpuThreads.h"
#include "compiler/passes/Pipeline.h"

namespace texc::cudatest {
namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::unique_ptr<Compilation> compiled(const std::string& example, const std::vector<std::string>& defines = {},
                                      FuseMode fuse = FuseMode::All) {
  TestProgram p = makeProgram(fs::path(TEXC_SOURCE_DIR) / "examples" / example, defines);
  std::unique_ptr<Compilation> c = compileTo(p, Stage::CUDA, Target::Cuda, fuse);
  REQUIRE(c->ok);
  REQUIRE(c->state.loops);
  return c;
}

TEST_CASE("map-gpu: an elementwise kernel is grid-stride with float4, its loops marked grid", "[cuda][map-gpu]") {
  std::unique_ptr<Compilation> c = compiled("gelu.tex");
  const loops::Kernel& k = c->state.loops->kernels[0];
  REQUIRE(k.gpu);
  CHECK(k.gpu->strategy == loops::GpuStrategy::GridStride);
  CHECK(k.gpu->float4);
  std::string text = loops::printLoopProgram(*c->state.loops);
  INFO(text);
  CHECK(has(text, "  # gpu: grid-stride, launch <<<8192, 256>>>\n"));
  CHECK(has(text, "  # gpu: float4: four elements per thread, read as float4: x, r\n"));
  CHECK(has(text, " grid\n"));
  CHECK_FALSE(has(text, " blocks\n"));
  // What codegen-cuda prints is the mapping: the same launch and notes.
  const CudaKernel& ck = c->state.cuda->kernels[0];
  CHECK(ck.blocks == k.gpu->blocks);
  CHECK(ck.threads == k.gpu->threads);
  CHECK(ck.mapping == k.gpu->notes);
}

TEST_CASE("map-gpu: attention's online softmax is online-tile: a query row per 16 threads, in registers, K and V staged", "[cuda][map-gpu]") {
  // The kernel as one pass over all 4096 keys (split-keys would run it in 4 slices: SplitKeysTests.cpp).
  PipelineOptions o;
  o.target = Target::Cuda;
  o.disabledPasses = {"split-keys"};
  std::unique_ptr<Compilation> c = compileTo(makeProgram(fs::path(TEXC_SOURCE_DIR) / "examples" / "attention.tex", {"N=4096"}), Stage::CUDA, o);
  REQUIRE(c->ok);
  REQUIRE(c->state.loops->kernels.size() == 1);
  const loops::Kernel& k = c->state.loops->kernels[0];
  REQUIRE(k.gpu);
  CHECK(k.gpu->strategy == loops::GpuStrategy::OnlineTile);
  std::string text = loops::printLoopProgram(*c->state.loops);
  INFO(text);
  // 4096 rows x 16 lanes = 65536 threads; 8 rows of 16 lanes per 128-thread block.
  CHECK(has(text, "  # gpu: online-tile, launch <<<512, 128>>>\n"));
  CHECK(has(text, "  # gpu: 8 query rows per block, 16 threads each; keys in stages of 32 through shared memory\n"));
  CHECK(has(text, "  # gpu: the row's 64 elements → 4*lane + u, u < 4 (lane = threadIdx.x % 16; groups of 4, read from the staged "
                  "keys by 16-byte shared loads); rows in registers: O, Q; the row's sums combined by xor shuffles among its lanes\n"));
  CHECK(has(text, "staged in shared memory: K (32 x 64), V (32 x 64); the running max and sum in registers\n"));
  CHECK(has(text, "for i < 4096 parallel tile-rows\n"));
  CHECK(has(text, "for j < 4096 staged\n"));
  // The CUDA C: the stages in shared memory, two barriers per stage, the causal mask's stage skip.
  const std::string& src = c->state.cuda->source;
  CHECK(has(src, "__shared__ __align__(16) float stage0[2048];  // K: 32 keys x 64\n"));
  CHECK(has(src, "__shared__ __align__(16) float stage1[2048];  // V: 32 keys x 64\n"));
  CHECK(has(src, "if (!live) continue;  // the mask excludes this stage for every row of the block\n"));
  CHECK(has(src, "stage0[jj * 64 + d_]"));
  CHECK(has(src, "stage1[jj * 64 + d_]"));
  // V's elements of the key go into registers before the predicated update (so that they are one
  // 16-byte shared load, not four loads inside the branch NVRTC makes of the select).
  CHECK(has(src, "          staged1[u] = stage1[jj * 64 + d_];\n"));
  CHECK(has(src, "O_p_row[u] = on ? ((O_p_row[u] * acc4) + (acc5 * staged1[u])) : O_p_row[u];\n"));
  // The output and Q rows in registers, read and written once; the dot product's partials
  // combined among the row's 16 lanes; every thread runs every key, its writes predicated.
  CHECK(has(src, "float O_p_row[4] = {};\n"));
  CHECK(has(src, "Q_p_row[u] = active ? Q_p[64 * i_ + 4 * lane + u] : 0.0f;\n"));
  CHECK(has(src, "for (int x = 8; x > 0; x /= 2) acc6 = acc6 + __shfl_xor_sync(rowMask, acc6, x);"));
  CHECK(has(src, "const bool on = active && (i_ - j_) >= 0 && (i_ - j_) < 4096;"));
  CHECK(has(src, "O_p[64 * i_ + 4 * lane + u] = O_p_row[u];\n"));
  CHECK(!has(src, "O_p[64 * i_ + d_]"));  // no read or write of the output row inside the key loop
  CHECK(!has(src, "/ 0.0f"));             // infinities as bit casts, not divisions
  const CudaKernel& ck = c->state.cuda->kernels[0];
  CHECK(ck.blocks == 512);
  CHECK(ck.threads == 128);
}

TEST_CASE("map-gpu: a fused softmax is row-block, and sync-gpu-threads places its combines", "[cuda][map-gpu]") {
  std::unique_ptr<Compilation> c = compiled("softmax.tex", {"R=4096", "D=4096"});
  const loops::Kernel& k = c->state.loops->kernels[0];
  REQUIRE(k.gpu);
  CHECK(k.gpu->strategy == loops::GpuStrategy::RowBlock);
  CHECK(k.gpu->synced);
  std::string text = loops::printLoopProgram(*c->state.loops);
  INFO(text);
  CHECK(has(text, "  # gpu: row-block, launch <<<4096, 256>>>\n"));
  CHECK(has(text, "  # gpu: i → blockIdx.x\n"));
  CHECK(has(text, "for i < 4096 parallel blocks\n"));  // the CPU marks of lowering stay; the backend ignores them
  CHECK(has(text, "for j < 4096 threads\n"));
  CHECK(has(text, ": combine across threads after it: max acc0 (warp shuffles, then shared memory between two barriers), broadcast\n"));
  CHECK(has(text, ": combine across threads after it: sum acc1"));
  int combines = 0;
  for (const loops::GpuRowSync& s : k.gpu->sync) combines += !s.accs.empty();
  CHECK(combines == 2);
}

TEST_CASE("map-gpu: a row reduction with few rows is block-reduce, matmul is tiled-contract", "[cuda][map-gpu]") {
  std::unique_ptr<Compilation> s = compiled("softmax.tex", {"R=5", "D=300"}, FuseMode::Elementwise);
  const loops::LoopProgram& sp = *s->state.loops;
  REQUIRE(sp.kernels[0].gpu);
  CHECK(sp.kernels[0].gpu->strategy == loops::GpuStrategy::BlockReduce);
  CHECK(sp.kernels[0].gpu->terms == 300);
  std::string text = loops::printLoopProgram(sp);
  INFO(text);
  CHECK(has(text, "  # gpu: block-reduce, launch <<<5, 256>>>\n"));
  CHECK(has(text, "for j < 300 threads\n"));

  std::unique_ptr<Compilation> m = compiled("matmul.tex", {"M=4096", "N=4096"});
  const loops::Kernel& k = m->state.loops->kernels[0];
  REQUIRE(k.gpu);
  CHECK(k.gpu->strategy == loops::GpuStrategy::TiledContraction);
  std::string mm = loops::printLoopProgram(*m->state.loops);
  INFO(mm);
  CHECK(has(mm, "  # gpu: tiled-contract, launch <<<"));
  CHECK(has(mm, "  # gpu: tile 128x128, 8x8 registers per thread, k-step 16; staged loads of the term: rows #0, columns #1\n"));
  CHECK(has(mm, " tile-rows\n"));
  CHECK(has(mm, " tile-cols\n"));
  CHECK(has(mm, " staged\n"));
}

TEST_CASE("map-gpu: the options turn strategies off, and the CPU pipeline never maps", "[cuda][map-gpu]") {
  std::unique_ptr<Compilation> c = compiled("softmax.tex", {"R=5", "D=300"});
  loops::LoopProgram p = *c->state.loops;
  loops::gpu::GpuMapOptions o;
  o.rowBlocks = false;
  loops::gpu::mapGpu(p, o);
  CHECK(p.kernels[0].gpu->strategy == loops::GpuStrategy::GridStride);
  CHECK(loops::verifyLoopProgram(p).empty());

  TestProgram cpu = makeProgram(fs::path(TEXC_SOURCE_DIR) / "examples" / "softmax.tex", {"R=5", "D=300"});
  std::unique_ptr<Compilation> onCpu = compileTo(cpu, Stage::LLVM, Target::Cpu);
  REQUIRE(onCpu->ok);
  for (const loops::Kernel& k : onCpu->state.loops->kernels) CHECK_FALSE(k.gpu);
  CHECK_FALSE(has(loops::printLoopProgram(*onCpu->state.loops), "# gpu:"));
}

TEST_CASE("map-gpu: the pipeline runs the mapping passes before codegen-cuda, for cuda only", "[cuda][map-gpu]") {
  std::string cuda, cpu, cudaLoops;
  PipelineOptions cudaOptions, cpuOptions;
  cudaOptions.target = Target::Cuda;
  for (const PassInfo* p : buildPipeline(cudaOptions, Stage::CUDA)) cuda += std::string(p->name) + " ";
  for (const PassInfo* p : buildPipeline(cpuOptions, Stage::LLVM)) cpu += std::string(p->name) + " ";
  for (const PassInfo* p : buildPipeline(cudaOptions, Stage::Plan)) cudaLoops += std::string(p->name) + " ";
  CHECK(has(cuda, "plan-memory map-gpu sync-gpu-threads codegen-cuda "));
  CHECK_FALSE(has(cpu, "map-gpu"));
  CHECK_FALSE(has(cpu, "sync-gpu-threads"));
  CHECK_FALSE(has(cudaLoops, "map-gpu"));
  REQUIRE(findPass("map-gpu"));
  CHECK(findPass("map-gpu")->stage == Stage::Loops);
  CHECK(findPass("sync-gpu-threads")->stage == Stage::Loops);
}

TEST_CASE("map-gpu: the verifier checks the mapping, and codegen-cuda refuses an unmapped program", "[cuda][map-gpu]") {
  std::unique_ptr<Compilation> c = compiled("softmax.tex", {"R=5", "D=300"});
  loops::LoopProgram p = *c->state.loops;
  REQUIRE(loops::verifyLoopProgram(p).empty());
  // A row-block kernel whose combines were not placed is refused by the printer.
  loops::LoopProgram unsynced = p;
  unsynced.kernels[0].gpu->synced = false;
  unsynced.kernels[0].gpu->sync.clear();
  CHECK_THROWS_AS(printCUDA(unsynced), std::logic_error);
  // Marks without a mapping, a mark of another strategy, a launch the hardware refuses.
  loops::LoopProgram bad = p;
  bad.kernels[0].gpu->threads = 48;
  loops::forEachStmt(bad.kernels[0].body, [](loops::Stmt& s) {
    if (loops::Loop* l = s.getIf<loops::Loop>()) l->gpu = loops::GpuLoop::Staged;
  });
  std::string all;
  for (const std::string& problem : loops::verifyLoopProgram(bad)) all += problem + "\n";
  INFO(all);
  CHECK(has(all, "48 threads per block"));
  CHECK(has(all, "a loop marked staged in a row-block kernel"));
  bad.kernels[0].gpu.reset();
  CHECK(has(loops::verifyLoopProgram(bad).front(), "loops marked for the GPU in a kernel without a GPU mapping"));
  CHECK_THROWS_AS(printCUDA(bad), std::logic_error);
  // generateCUDA maps a copy itself, whatever the program held.
  CHECK(generateCUDA(bad).kernels[0].strategy == CudaStrategy::RowBlock);
}

// fuse-pool-into-gemm: conv + scale/bias + pool is one tiled kernel whose columns include the
// window loop (marked tile-cols), the verifier accepts it after every pass, and a window the
// tile cannot take is reported.
TEST_CASE("map-gpu: a pool in the tiled contraction's epilogue has its window among the columns", "[cuda][map-gpu]") {
  // The loop IR verifier after every pass, Release builds too.
  std::unique_ptr<Compilation> c = compileForCuda("examples/conv_pool.tex", {"N=2"}, {}, /*verify=*/true);
  REQUIRE(c->ok);
  const loops::LoopProgram& p = *c->state.loops;
  REQUIRE(p.kernels.size() == 1);
  const loops::Kernel& k = p.kernels[0];
  REQUIRE(k.gpu);
  CHECK(k.gpu->strategy == loops::GpuStrategy::TiledContraction);
  CHECK(k.gpu->window == 4);
  const std::string printed = loops::printLoopProgram(p);
  CHECK(has(printed, "# gpu: tile 64x64, 4x4 registers per thread, k-step 16; staged loads of the term: rows #0, columns #1; 4 columns per output (a pool's window)"));
  CHECK(has(printed, "for yx < 784 tile-cols"));
  CHECK(has(printed, "for w < 4 tile-cols"));
  CHECK(has(printed, "for crs < 576 staged"));
  CHECK(loops::verifyLoopProgram(p).empty());
  loops::LoopProgram bad = p;
  bad.kernels[0].gpu->window = 3;
  // The weights go by 16-byte copies (W's rows are read in order along crs) into unpadded rows.
  REQUIRE(k.gpu->vectorCopies == std::vector<int>{0});
  CHECK(k.gpu->rowPad == 0);
  bad.kernels[0].gpu->rowPad = 1;
  std::string all;
  for (const std::string& problem : loops::verifyLoopProgram(bad)) all += problem + "\n";
  CHECK(has(all, "a pool window of other than 2, 4 or 8 columns"));
  CHECK(has(all, "16-byte copies into shared rows whose padding is not a multiple of 16 bytes"));
}

}  // namespace
}  // namespace texc::cudatest

namespace texc::cudatest {
namespace {

// The IR verifiers after every pass of the cuda pipeline, on every suite program (Release builds
// do not run them on their own): the GPU mapping's checks included, on every kernel map-gpu maps.
TEST_CASE("map-gpu: every suite program passes the verifiers after every pass of the cuda pipeline", "[cuda][map-gpu]") {
  int checked = 0;
  std::vector<TestProgram> programs = suitePrograms();
  programs.push_back(makeProgram(fs::path(TEXC_SOURCE_DIR) / "examples" / "attention.tex", {"N=4096"}));  // split-keys, rows in registers
  programs.push_back(makeProgram(fs::path(TEXC_SOURCE_DIR) / "examples" / "matmul.tex", {"M=128", "K=4096", "N=4096"}));  // split-k
  for (const TestProgram& prog : programs) {
    INFO(prog.label);
    const std::string file = fs::relative(prog.path, TEXC_SOURCE_DIR).string();
    std::unique_ptr<Compilation> c = compileForCuda(file, prog.defines, {}, /*verify=*/true);
    CHECK(c->ok);
    checked += c->ok;
  }
  CHECK(checked >= 60);
}

}  // namespace
}  // namespace texc::cudatest
