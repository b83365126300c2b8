// The generated CUDA C, run on the CPU: every suite program (and a few at sizes that select the
// tiled and block-reduction kernels) is generated with small launch shapes, compiled as C++
// together with CudaEmulation.h into one shared object, run kernel by kernel over its grid with
// one host thread per CUDA thread, and compared with the float64 reference under the tolerance
// rule of the end-to-end tests (docs/testing.md). Each program runs twice: forward, then
// adversarially (blocks and threads in reverse order, NaN-filled shared memory, outputs and
// intermediates), and the two runs must agree bit for bit. Needs a C++ compiler at run time
// ($CXX or c++); without one the test is skipped (tests/support/Skip.h).
#include <dlfcn.h>
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>

#include "CudaTestSupport.h"
#include "compiler/backend/cuda/CodeGenCUDA.h"
#include "compiler/driver/Execution.h"
#include "compiler/reference/ErrorBound.h"
#include "compiler/reference/Reference.h"
#include "compiler/reference/Tolerance.h"
#include "tests/support/Skip.h"

namespace texc::cudatest {
namespace {

struct Case {
  TestProgram program;
  FuseMode fuse = FuseMode::All;
  bool tf32 = false;  // --math=fast: f32 contractions on (emulated) TF32 tensor cores, judged by fast mode's bounds
  std::unique_ptr<Compilation> compiled;
  CudaModule module;
  std::string prefix;
};

// Programs at sizes where the tiled contraction and the block reductions are chosen.
std::vector<TestProgram> extraPrograms() {
  fs::path ex = fs::path(TEXC_SOURCE_DIR) / "examples";
  fs::path e2e = fs::path(TEXC_SOURCE_DIR) / "tests" / "e2e";
  return {
      makeProgram(ex / "matmul.tex", {"M=70", "K=37", "N=66"}),
      makeProgram(ex / "matmul.tex", {"M=64", "K=32", "N=128"}),
      makeProgram(ex / "matmul.tex", {"M=130", "K=20", "N=129"}),  // 128x128 tiles, 8x8 per thread
      makeProgram(ex / "matmul.tex", {"M=40", "K=20", "N=140"}),   // 64x128 tiles, 4x8 per thread
      makeProgram(ex / "matmul.tex", {"M=135", "K=18", "N=50"}),   // 128x64 tiles, 8x4 per thread
      makeProgram(ex / "matmul_bias_gelu.tex", {"M=33", "K=48", "N=17"}),
      makeProgram(e2e / "bmm.tex", {"B=2", "M=20", "K=17", "N=18"}),
      makeProgram(e2e / "qkt_batched.tex", {"H=2", "M=19", "N=33", "D=17"}),  // A B^T, tiled with K[b, j, d] staged
      // ... with rows of a multiple of 4: Q by 16-byte copies into an unpadded tile, K by elements.
      makeProgram(e2e / "qkt_batched.tex", {"H=2", "M=19", "N=33", "D=20"}),
      // bf16 tensor-core tiles of 64x64 with 16-byte copies: 128 copies of each operand's step
      // for 256 threads (half of them copy nothing).
      makeProgram(e2e / "lowp_matmul_bf16.tex", {"M=40", "K=32", "N=48"}),
      // split-k on implicit GEMMs: 1080 terms in 4 slices of 270, the padding guard and the
      // weights' indices at 270 * kslice + crs.
      makeProgram(e2e / "conv_implicit_gemm.tex", {"K=17", "C=120", "H=7", "W=9"}),
      // Fused row kernels (row-block) with 64-thread blocks: rows of several strides with a
      // partial last one, rows shorter than a warp, and more rows than blocks.
      makeProgram(ex / "softmax.tex", {"R=3", "D=300"}),
      makeProgram(ex / "softmax.tex", {"R=4", "D=7"}),
      makeProgram(ex / "layernorm.tex", {"R=3", "D=300"}),
      makeProgram(ex / "layernorm.tex", {"R=7", "D=65"}),
      makeProgram(ex / "attention.tex", {"N=70", "Dh=5"}),
      // Rows in registers split over 16 lanes (shuffle-combined dot products), a partial last tile.
      makeProgram(ex / "attention.tex", {"N=70", "Dh=16"}),
      makeProgram(ex / "attention.tex", {"N=45", "Dh=12"}),  // 4 lanes of 3, 32 rows per block
      makeProgram(ex / "attention.tex", {"N=40", "Dh=128"}),  // 32 lanes of 4 consecutive elements
      makeProgram(ex / "attention.tex", {"N=40", "Dh=256"}),  // 32 lanes of 2 groups of 4
      // split-keys: the keys in slices (causal: the later slices of the first rows are empty,
      // their max -inf), the slices' max, sum and output rows combined; one lane per row (Dh=5).
      makeProgram(ex / "attention.tex", {"N=512", "Dh=16"}),
      makeProgram(ex / "attention.tex", {"N=520", "Dh=5"}),
      makeProgram(fs::path(TEXC_SOURCE_DIR) / "bench" / "workloads" / "attention_full.tex", {"N=768", "Dh=12"}),
      makeProgram(ex / "conv_pool.tex", {"N=1", "C=4", "K=3", "H=10", "W=8"}),
      // Convolutions as implicit GEMMs (implicit-gemm): padded, valid, rectangular and strided
      // kernels, the pool after them, and f16/bf16 ones on tensor cores, with the padding staged
      // as zeros; tails in rows, pixels and c*r*s.
      makeProgram(e2e / "conv_implicit_gemm.tex", {"K=17", "C=5", "H=7", "W=9"}),
      makeProgram(e2e / "conv_pool_fused.tex", {"K=18", "C=3", "H=12", "W=14"}),  // 168 pixels: 64x128 tiles
      makeProgram(e2e / "conv_stride2_tiled.tex", {"N=2", "K=16", "H=9", "W=11"}),
      makeProgram(e2e / "lowp_conv_bf16.tex", {"K=20"}),
      makeProgram(e2e / "lowp_conv_f16.tex", {"K=17"}),
      // Pools in the tile's epilogue (fuse-pool-into-gemm) with tails: 17 channels, windows of 8
      // over 160 columns, three images; a product's column pairs over 65 columns; bf16 on mma.
      makeProgram(e2e / "conv_minpool_wide.tex", {"N=3", "C=2", "K=17", "H=13", "W=21"}),
      makeProgram(e2e / "matmul_colpool.tex", {"M=70", "K=33", "N=130"}),
      makeProgram(e2e / "lowp_conv_pool_bf16.tex", {"N=2", "K=40", "H=10", "W=6"}),
      // Tensor cores (mma.m16n8k16, emulated lane by lane): 128x128 tiles of 8 warps with 4x4
      // fragments each, tails in every dimension, bf16 and f16 (A B^T).
      makeProgram(e2e / "lowp_matmul_bf16.tex", {"M=130", "N=129", "K=40"}),
      // ... with rows of a multiple of 8 halves: staged by 16-byte cp.async in three stages.
      makeProgram(e2e / "lowp_matmul_bf16.tex", {"M=130", "N=136", "K=40"}),
  };
}

std::string compilerCommand() {
  const char* cxx = std::getenv("CXX");
  return cxx && *cxx ? cxx : "c++";
}

TEST_CASE("cuda emulation: the generated CUDA C of every program matches the float64 reference", "[cuda][emulation]") {
  if (std::system((compilerCommand() + " --version > /dev/null 2>&1").c_str()) != 0)
    testsupport::skipTest("no C++ compiler ('" + compilerCommand() + "') to build the emulated kernels with");
  std::vector<Case> cases;
  for (TestProgram& p : suitePrograms()) cases.push_back({p, FuseMode::All, false, nullptr, {}, ""});
  for (TestProgram& p : extraPrograms()) cases.push_back({p, FuseMode::All, false, nullptr, {}, ""});
  // TF32 tensor cores (--math=fast): m16n8k8 fragments emulated lane by lane, the operands
  // rounded as cvt.rna does; tails in every dimension, an epilogue, a padded convolution.
  {
    fs::path ex = fs::path(TEXC_SOURCE_DIR) / "examples";
    fs::path e2e = fs::path(TEXC_SOURCE_DIR) / "tests" / "e2e";
    for (TestProgram p : {makeProgram(ex / "matmul.tex", {"M=130", "K=20", "N=129"}), makeProgram(ex / "matmul.tex", {"M=130", "K=20", "N=132"}),
                          makeProgram(ex / "matmul_bias_gelu.tex", {"M=33", "K=48", "N=17"}),
                          makeProgram(e2e / "conv_pool_fused.tex", {"K=18", "C=3", "H=12", "W=14"}),
                          makeProgram(e2e / "matmul_colpool.tex", {"M=37", "K=24", "N=80"})})  // windows of 2: a lane's pair
      cases.push_back({p, FuseMode::All, true, nullptr, {}, ""});
  }
  // Unfused, softmax and conv+pool become several kernels of every kind.
  for (const char* name : {"softmax.tex", "conv_pool.tex", "attention.tex"})
    for (const TestProgram& p : suitePrograms())
      if (p.path.filename() == name) cases.push_back({p, FuseMode::None, false, nullptr, {}, ""});

  // Small blocks and a small grid cap: the grid-stride loops run several rounds and the block
  // reductions combine several warps.
  CudaCodeGenOptions opts;
  opts.threadsPerBlock = 64;
  opts.maxBlocks = 3;
  opts.multiprocessors = 1;  // small programs keep their 128-wide tiles (two tiles fill one SM)
  fs::path dir = fs::temp_directory_path() / fmt::format("texc-cuda-emulation-{}", ::getpid());
  fs::create_directories(dir);
  std::string source = "#include \"CudaEmulation.h\"\n";
  std::map<CudaStrategy, int> strategies;
  int float4Programs = 0;
  int pooledTiles = 0, pooledMmaTiles = 0;  // fuse-pool-into-gemm: pools in tile epilogues
  int splitPrograms = 0;                     // split-k: partial sums over slices of a reduction
  for (size_t n = 0; n < cases.size(); ++n) {
    Case& c = cases[n];
    c.compiled = compileTo(c.program, Stage::Loops, Target::Cuda, c.fuse);
    INFO(c.program.label);
    REQUIRE(c.compiled->ok);
    c.prefix = fmt::format("p{}_", n);
    opts.symbolPrefix = c.prefix;
    opts.tf32 = c.tf32;
    c.module = generateCUDA(*c.compiled->state.loops, opts);
    for (const loops::Kernel& k : c.compiled->state.loops->kernels)
      if (k.schedule.rfind("split-K: the reduction's", 0) == 0) {
        ++splitPrograms;
        break;
      }
    if (c.tf32) CHECK(c.module.source.find("texc_mma_tf32(frag") != std::string::npos);
    source += fmt::format("// ----- {}\n{}", c.program.label, c.module.source);
    if (c.module.source.find("make_float4(") != std::string::npos) ++float4Programs;
    // The launcher's view of each kernel: the buffer table unpacked into typed parameters.
    for (const CudaKernel& k : c.module.kernels) {
      strategies[k.strategy]++;
      for (const std::string& note : k.mapping)
        if (note.rfind("pool in the epilogue", 0) == 0) (note.find("a lane's pair") != std::string::npos ? pooledMmaTiles : pooledTiles)++;
      std::string args;
      for (size_t b = 0; b < k.paramTypes.size(); ++b) args += fmt::format("{}({})b[{}]", b ? ", " : "", k.paramTypes[b], b);
      source += fmt::format("extern \"C\" void {}_entry(void* const* b) {{ {}({}); }}\n\n", k.symbol, k.symbol, args);
    }
  }
  // Every strategy is exercised.
  CHECK(strategies[CudaStrategy::GridStride] > 0);
  CHECK(strategies[CudaStrategy::BlockReduce] > 0);
  CHECK(strategies[CudaStrategy::TiledContraction] > 0);
  CHECK(strategies[CudaStrategy::RowBlock] > 0);
  CHECK(strategies[CudaStrategy::OnlineTile] > 0);  // attention, its batched and cross forms, online weighted sums
  CHECK(float4Programs > 0);  // the vectorised elementwise kernels
  CHECK(pooledTiles >= 2);     // windows of 8 (a min pool) and 2 (a matrix product's columns), shuffled across lanes
  CHECK(pooledMmaTiles >= 4);  // on bf16 and TF32 tensor cores: a lane's pair, then 0, 1 or 2 shuffles
  CHECK(splitPrograms >= 3);   // f32 with an epilogue, bf16 tensor cores with a rounded store, implicit GEMMs
  WARN(fmt::format("{} programs: {} grid-stride kernels (float4 ones in {} programs), {} block-reduce, {} tiled ({} with a pool in the "
                   "epilogue, {} of them on tensor cores; split-K in {} programs), {} row-block, {} online-tile",
                   cases.size(), strategies[CudaStrategy::GridStride], float4Programs, strategies[CudaStrategy::BlockReduce],
                   strategies[CudaStrategy::TiledContraction], pooledTiles + pooledMmaTiles, pooledMmaTiles, splitPrograms,
                   strategies[CudaStrategy::RowBlock], strategies[CudaStrategy::OnlineTile]));

  fs::path src = dir / "kernels.cpp";
  fs::path lib = dir / "kernels.so";
  std::ofstream(src) << source;
  fs::path headerDir = fs::path(TEXC_SOURCE_DIR) / "tests" / "unit" / "cuda";
  std::string cmd = fmt::format("{} -std=c++20 -O1 -w -fPIC -shared -pthread -I'{}' '{}' -o '{}' > '{}' 2>&1", compilerCommand(),
                                headerDir.string(), src.string(), lib.string(), (dir / "cc.log").string());
  int rc = std::system(cmd.c_str());
  if (rc != 0) {
    std::ifstream log(dir / "cc.log");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    FAIL("the generated CUDA C did not compile as C++ (" << src.string() << "):\n" << text.substr(0, 6000));
  }
  void* handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(handle != nullptr);
  using Launch = void (*)(void (*)(void* const*), void* const*, unsigned, unsigned, bool);
  auto launch = reinterpret_cast<Launch>(dlsym(handle, "texc_emu_launch"));
  auto setAdversarial = reinterpret_cast<void (*)(bool)>(dlsym(handle, "texc_emu_set_adversarial"));
  REQUIRE(launch != nullptr);
  REQUIRE(setAdversarial != nullptr);

  int checked = 0;
  for (Case& c : cases) {
    INFO(c.program.label << (c.fuse == FuseMode::None ? " --fuse=none" : "") << (c.tf32 ? " tf32" : ""));
    const Program& p = *c.compiled->state.graph;
    const Program& analysed = *c.compiled->state.analysed;
    std::vector<Tensor> tensors(p.tensors.size());
    std::vector<RefTensor> refInputs;
    for (size_t k = 0; k < p.inputs.size(); ++k) {
      int id = p.inputs[k];
      tensors[id] = makeTensor(elemTypeOf(p.tensors[id].dtype), p.tensors[id].shape);
      fillRandom(tensors[id], 1, k);
      refInputs.push_back({p.tensors[id].shape, toDoubles(tensors[id])});
    }
    auto runKernels = [&](std::vector<void*>& ptrs, bool adversarial) {
      setAdversarial(adversarial);
      for (const CudaKernel& k : c.module.kernels) {
        auto entry = reinterpret_cast<void (*)(void* const*)>(dlsym(handle, (k.symbol + "_entry").c_str()));
        REQUIRE(entry != nullptr);
        // Grid-stride kernels have no communication between threads (no barrier, no shuffle).
        bool cooperative = k.strategy != CudaStrategy::GridStride;
        launch(entry, ptrs.data(), static_cast<unsigned>(k.blocks), static_cast<unsigned>(k.threads), cooperative);
      }
      setAdversarial(false);
    };
    // The loop program's own temporaries after the graph's tensors (split-K's partial sums):
    // memory the run provides, as the device arena does.
    const loops::LoopProgram& lp = *c.compiled->state.loops;
    std::vector<std::vector<unsigned char>> scratch;
    auto bindScratch = [&](std::vector<void*>& ptrs, unsigned char fill) {
      for (size_t b = ptrs.size(); b < lp.buffers.size(); ++b) {
        scratch.emplace_back(static_cast<size_t>(lp.buffers[b].numElements()) * dtypeBytes(lp.buffers[b].dtype), fill);
        ptrs.push_back(scratch.back().data());
      }
    };
    std::vector<void*> ptrs = bindTensors(p, tensors);
    bindScratch(ptrs, 0);
    runKernels(ptrs, false);
    // Again, adversarially: blocks and threads last to first, shared memory and every tensor the
    // kernels write (outputs and intermediates) filled with NaN. The emulation is deterministic,
    // so the outputs must match the first run bit for bit.
    std::vector<Tensor> poisoned(p.tensors.size());
    for (int id : p.inputs) poisoned[id] = copyTensor(tensors[id]);
    std::vector<void*> poisonedPtrs = bindTensors(p, poisoned);
    bindScratch(poisonedPtrs, 0xFF);
    for (size_t id = 0; id < p.tensors.size(); ++id)
      if (!p.tensors[id].isInput) std::memset(poisoned[id].data.data(), 0xFF, poisoned[id].data.size());
    runKernels(poisonedPtrs, true);
    for (int id : p.outputs) {
      const Buffer& a = tensors[id].data;
      const Buffer& b = poisoned[id].data;
      size_t bytes = elemBytes(tensors[id].type), differ = 0, first = 0;
      for (size_t i = 0; i * bytes < a.size(); ++i)
        if (std::memcmp(a.data() + i * bytes, b.data() + i * bytes, bytes) != 0 && differ++ == 0) first = i;
      std::string what;
      if (differ > 0)
        what = fmt::format("output {}: {} of {} elements differ between the forward run and the adversarial one (reversed order, "
                           "NaN-filled memory); first {}: {} vs {}",
                           p.tensors[id].name, differ, a.size() / bytes, first, toDoubles(tensors[id])[first], toDoubles(poisoned[id])[first]);
      INFO(what);
      CHECK(differ == 0);
    }
    // The tolerance rule of the e2e suite (compiler/reference/Tolerance.h).
    BoundResult bounds = evaluateBounds(analysed, refInputs, c.tf32 ? MathMode::Fast : MathMode::Precise);
    for (size_t o = 0; o < p.outputs.size(); ++o) {
      int id = p.outputs[o];
      int refId = analysed.outputs[o];
      std::vector<double> got = toDoubles(tensors[id]);
      Comparison c = compareValues(bounds.values[refId].data, bounds.bounds[refId], got, p.tensors[id].shape,
                                   toleranceFor(p.tensors[id].dtype));
      INFO("output " << p.tensors[id].name << ": " << c.mismatches << " of " << got.size() << " elements differ\n" << c.details);
      CHECK(c.mismatches == 0);
    }
    ++checked;
  }
  CHECK(checked >= 20);
  dlclose(handle);
  std::error_code ec;
  if (!std::getenv("TEXC_KEEP_EMULATION")) fs::remove_all(dir, ec);
}

}  // namespace
}  // namespace texc::cudatest
