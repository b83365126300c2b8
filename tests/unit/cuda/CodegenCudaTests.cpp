// CodeGenCUDA: which mapping each kind of kernel gets, the dump's mapping comments, guards,
// low-precision storage, and that every suite program generates (no GPU or NVRTC needed).
#include <algorithm>
#include <catch2/catch.hpp>
#include <set>

#include "CudaTestSupport.h"
#include "compiler/backend/cuda/CodeGenCUDA.h"
#include "compiler/backend/cuda/CudaExecutable.h"
#include "compiler/passes/Pipeline.h"

namespace texc::cudatest {
namespace {

// The CUDA module of the program at `path` (relative to the source tree).
CudaModule generateAt(const fs::path& path, const std::vector<std::string>& defines = {}, FuseMode fuse = FuseMode::All) {
  TestProgram p = makeProgram(fs::path(TEXC_SOURCE_DIR) / path, defines);
  std::unique_ptr<Compilation> c = compileTo(p, Stage::CUDA, Target::Cuda, fuse);
  REQUIRE(c->ok);
  REQUIRE(c->state.cuda);
  return *c->state.cuda;
}
CudaModule generate(const std::string& example, const std::vector<std::string>& defines = {}, FuseMode fuse = FuseMode::All) {
  return generateAt(fs::path("examples") / example, defines, fuse);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST_CASE("codegen-cuda: fused gelu is one grid-stride kernel with float4 loads and its mapping printed", "[cuda][codegen]") {
  CudaModule m = generate("gelu.tex");
  REQUIRE(m.kernels.size() == 1);
  const CudaKernel& k = m.kernels[0];
  CHECK(k.strategy == CudaStrategy::GridStride);
  CHECK(k.threads == 256);
  CHECK(k.blocks == 8192);  // capped; the grid-stride loop covers the rest
  CHECK(has(m.source, "extern \"C\" __global__ void __launch_bounds__(256) texc_k0_"));
  CHECK(has(m.source, "q = blockIdx.x*256+threadIdx.x, grid-stride"));
  CHECK(has(m.source, "q += (int)gridDim.x * 256"));
  // x and r have the output's shape: float4; b is broadcast: read per element.
  CHECK(has(m.source, "const float4 x_p4 = reinterpret_cast<const float4*>(x_p)[q];"));
  CHECK(has(m.source, "const float4 r_p4 = reinterpret_cast<const float4*>(r_p)[q];"));
  CHECK_FALSE(has(m.source, "b_p4"));
  CHECK(has(m.source, "reinterpret_cast<float4*>(out_p)[q] = make_float4("));
  CHECK(has(m.source, "tanhf("));
  // Inputs are const, the output is not; every buffer is __restrict__.
  CHECK(has(m.source, "const float* __restrict__ x_p"));
}

TEST_CASE("codegen-cuda: an elementwise kernel over a size not a multiple of 4 stays scalar", "[cuda][codegen]") {
  CudaModule m = generate("gelu.tex", {"N=3", "D=7"});
  REQUIRE(m.kernels.size() == 1);
  CHECK_FALSE(has(m.source, "float4"));
  CHECK(has(m.source, "t = blockIdx.x*256+threadIdx.x, grid-stride"));
  CHECK(has(m.source, "t += (int)gridDim.x * 256"));
}

TEST_CASE("codegen-cuda: a one-dimensional output maps i to blockIdx.x*256+threadIdx.x", "[cuda][codegen]") {
  CudaModule m = generate("fusion_add_mul.tex", {"N=257"});
  REQUIRE(!m.kernels.empty());
  bool found = false;
  for (const CudaKernel& k : m.kernels)
    for (const std::string& line : k.mapping) found = found || has(line, "→ blockIdx.x*256+threadIdx.x");
  CHECK(found);
}

TEST_CASE("codegen-cuda: softmax's row reductions are block reductions with warp shuffles", "[cuda][codegen]") {
  // --fuse=elementwise keeps the max and the sum as kernels of their own.
  CudaModule m = generate("softmax.tex", {}, FuseMode::Elementwise);
  REQUIRE(m.kernels.size() == 3);
  CHECK(m.kernels[0].strategy == CudaStrategy::BlockReduce);  // max
  CHECK(m.kernels[1].strategy == CudaStrategy::BlockReduce);  // sum of exp
  CHECK(m.kernels[2].strategy == CudaStrategy::GridStride);   // normalise
  CHECK(m.kernels[0].blocks == 4096);
  CHECK(has(m.source, "__shfl_xor_sync(0xffffffffu, acc0, o)"));
  CHECK(has(m.source, "__shared__ float partial[8];"));
  CHECK(has(m.source, "texc_max(acc0, "));
  CHECK(has(m.source, "__syncthreads();"));
}

TEST_CASE("codegen-cuda: fused softmax and layernorm are row-block kernels: a block per row, its phases block-strided", "[cuda][codegen]") {
  for (const char* name : {"softmax.tex", "layernorm.tex"}) {
    INFO(name);
    CudaModule m = generate(name);
    REQUIRE(m.kernels.size() == 1);
    const CudaKernel& k = m.kernels[0];
    CHECK(k.strategy == CudaStrategy::RowBlock);
    CHECK(k.threads == 256);
    CHECK(k.blocks == 4096);
    CHECK(has(m.source, "__shared__ float partial[1][8];"));
    // Rows in registers: x read once, 16 elements per thread in 4 groups of 4 consecutive ones
    // (float4, 16-byte loads and stores), y written once after the last phase.
    CHECK(has(m.source, "const float4 v = __ldg(reinterpret_cast<const float4*>(x_p + 4096 * i_ + 4 * (threadIdx.x + 256 * q)));\n"));
    CHECK(has(m.source, "      const int e = 4 * (threadIdx.x + 256 * (s / 4)) + s % 4;\n"));
    CHECK(has(m.source, "*reinterpret_cast<float4*>(y_p + 4096 * i_ + 4 * (threadIdx.x + 256 * q)) = make_float4(y_p_row[4 * q], "
                        "y_p_row[4 * q + 1], y_p_row[4 * q + 2], y_p_row[4 * q + 3]);\n"));
    CHECK(std::count(k.mapping.begin(), k.mapping.end(),
                     "rows in registers: y, x (16 per thread, s unrolled; read and written as float4, 4 consecutive elements a "
                     "group); the output row written once, after the last phase") == 1);
    CHECK(has(m.source, "acc1 = acc1 + __shfl_xor_sync(0xffffffffu, acc1, o);"));
    CHECK(has(m.source, "acc1 = (threadIdx.x & 31) < 8 ? partial[0][threadIdx.x & 31] : 0.0f;"));
    REQUIRE(k.mapping.size() >= 3);
    CHECK(k.mapping[0] == "i → blockIdx.x");
    CHECK(std::count(k.mapping.begin(), k.mapping.end(), "phase 3: j → 4*(threadIdx.x + 256*(s/4)) + s%4, s < 16") == 1);
  }
  // A row whose width is not a multiple of 4 keeps scalar loads, element s at threadIdx.x + 256 s;
  // one of 300 (75 groups of 4 over 256 threads) has a ragged last group.
  CudaModule odd = generate("layernorm.tex", {"R=3", "D=301"});
  CHECK(has(odd.source, "x_p_row[s] = threadIdx.x + 256 * s < 301 ? x_p[301 * i_ + threadIdx.x + 256 * s] : 0.0f;  // read once"));
  CHECK_FALSE(has(odd.source, "float4"));
  CudaModule ragged = generate("layernorm.tex", {"R=3", "D=300"});
  CHECK(has(ragged.source, "if (threadIdx.x + 256 * q < 75) {"));
  CHECK(has(ragged.source, "if (threadIdx.x + 256 * (s / 4) < 75) {"));
  CudaModule softmax = generate("softmax.tex");
  CHECK(has(softmax.source, "acc0 = texc_max(acc0, __shfl_xor_sync(0xffffffffu, acc0, o));"));
  // The exp-and-sum loop stores and reduces; the next one reads y after the block's barriers.
  CHECK(has(softmax.source, "//   phase 2: stores y, sum into acc1, combined across the block and broadcast"));
  // The normalisation: one reciprocal per row, a multiplication per element.
  CHECK(has(softmax.source, "const float rcp1 = 1.0f / acc1;\n"));
  CHECK(has(softmax.source, "y_p_row[s] = (y_p_row[s] * rcp1);"));
  CHECK(!has(softmax.source, "/ acc1)"));
  // A max is exact: the division by it stays a division, as the unfused program's does.
  CudaModule byMax = generateAt("tests/e2e/max_scaled_rows.tex");
  CHECK(has(byMax.source, "y_p_row[s] = (x_p_row[s] / acc0);"));
  CHECK_FALSE(has(byMax.source, "rcp0"));
  // Rows shorter than a warp: one warp per row, no shared memory, and no barrier: each thread
  // reads back only the y it stored itself.
  CudaModule tiny = generate("softmax.tex", {"R=5", "D=7"});
  REQUIRE(tiny.kernels.size() == 1);
  CHECK(tiny.kernels[0].strategy == CudaStrategy::RowBlock);
  CHECK(tiny.kernels[0].threads == 32);
  CHECK_FALSE(has(tiny.source, "partial["));
  CHECK(has(tiny.source, "acc1 = acc1 + __shfl_xor_sync(0xffffffffu, acc1, o);"));
  CHECK_FALSE(has(tiny.source, "__syncthreads()"));
  // Many rows shorter than a warp: one thread per row.
  CHECK(generate("softmax.tex", {"R=20000", "D=7"}).kernels[0].strategy == CudaStrategy::GridStride);
}

TEST_CASE("codegen-cuda: row-block can be switched off, and leaves row bodies it cannot map to grid-stride", "[cuda][codegen]") {
  TestProgram p = makeProgram(fs::path(TEXC_SOURCE_DIR) / "examples" / "softmax.tex", {"R=5", "D=300"});
  std::unique_ptr<Compilation> c = compileTo(p, Stage::Loops);
  REQUIRE(c->ok);
  REQUIRE(generateCUDA(*c->state.loops, {}).kernels[0].strategy == CudaStrategy::RowBlock);
  CudaCodeGenOptions o;
  o.rowBlocks = false;
  CHECK(generateCUDA(*c->state.loops, o).kernels[0].strategy == CudaStrategy::GridStride);
  // A loop that reads the accumulator it reduces (a running value) keeps its serial semantics.
  loops::LoopProgram changed = *c->state.loops;
  loops::Loop& body = changed.kernels[0].body[0].as<loops::Loop>();
  REQUIRE(body.body.size() == 5);
  loops::Loop& expSum = body.body[3].as<loops::Loop>();
  REQUIRE(expSum.body.size() == 2);
  loops::Expr running;
  running.kind = loops::ExprKind::AccRead;
  running.acc = expSum.body[1].as<loops::AccUpdate>().acc;
  expSum.body[0].as<loops::Store>().value = running;
  CHECK(generateCUDA(changed, {}).kernels[0].strategy == CudaStrategy::GridStride);
  // A store every thread would make (y[i, 0] in a loop over j) keeps its serial semantics too.
  changed = *c->state.loops;
  loops::Loop& normalise = changed.kernels[0].body[0].as<loops::Loop>().body[4].as<loops::Loop>();
  REQUIRE(normalise.body[0].is<loops::Store>());
  normalise.body[0].as<loops::Store>().index[1] = IndexExpr::makeConst(0);
  CHECK(generateCUDA(changed, {}).kernels[0].strategy == CudaStrategy::GridStride);
}

TEST_CASE("codegen-cuda: a row-block phase that reads what other threads stored waits for the block", "[cuda][codegen]") {
  TestProgram p = makeProgram(fs::path(TEXC_SOURCE_DIR) / "examples" / "softmax.tex", {"R=3", "D=300"});
  std::unique_ptr<Compilation> c = compileTo(p, Stage::Loops);
  REQUIRE(c->ok);
  // Softmax's row body, then: acc2 = -inf; for j { acc2 = max(acc2, y[i, 299 - j]) } -- y[i, 299 - j]
  // was stored by another thread in the phase before, which has no reduction (no barrier).
  loops::LoopProgram changed = *c->state.loops;
  loops::Kernel& k = changed.kernels[0];
  loops::Block& row = k.body[0].as<loops::Loop>().body;
  REQUIRE(row.size() == 5);
  const loops::Loop& normalise = row[4].as<loops::Loop>();
  REQUIRE(normalise.body[0].is<loops::Store>());
  const loops::Store& normaliseStore = normalise.body[0].as<loops::Store>();
  loops::AccInit init;
  init.acc = k.numAccs++;
  init.reduce = ReduceKind::Max;
  loops::Expr mirrored;
  mirrored.kind = loops::ExprKind::Load;
  mirrored.buffer = normaliseStore.buffer;
  mirrored.index = normaliseStore.index;
  IndexExpr j = mirrored.index[1];
  mirrored.index[1] = IndexExpr{};
  mirrored.index[1].kind = IndexExpr::Kind::Sub;
  mirrored.index[1].ops = {IndexExpr::makeConst(299), j};
  loops::AccUpdate update;
  update.acc = init.acc;
  update.reduce = ReduceKind::Max;
  update.value = mirrored;
  loops::Loop loop = normalise;
  loop.body = {update};
  row.push_back(init);
  row.push_back(loop);
  CudaModule m = generateCUDA(changed, {});
  REQUIRE(m.kernels[0].strategy == CudaStrategy::RowBlock);
  CHECK(has(m.source, "__syncthreads();  // this phase reads what other threads wrote\n    // phase 4\n"));
  CHECK(has(m.source, "acc2 = texc_max(acc2, y_p[300 * i_ + (299 - j_)]);"));
  // Phases 2 and 3 follow a reduction's barriers: no barrier of their own.
  CHECK_FALSE(has(m.source, "__syncthreads();  // this phase reads what other threads wrote\n    // phase 3\n"));
  // y is only touched in row i: no barrier between rows.
  CHECK_FALSE(has(m.source, "the block's next row"));
}

TEST_CASE("codegen-cuda: matmul is a shared-memory tiled contraction with register blocks", "[cuda][codegen]") {
  // 4096 x 4096 outputs: 1024 tiles of 128 x 128, at least two per SM of 132.
  CudaModule m = generate("matmul.tex", {"M=4096", "N=4096"});
  REQUIRE(m.kernels.size() == 1);
  const CudaKernel& k = m.kernels[0];
  CHECK(k.strategy == CudaStrategy::TiledContraction);
  CHECK(k.threads == 256);
  CHECK(k.blocks == (4096 / 128) * (4096 / 128));
  // Three stages of 16 KB (A's rows unpadded, 16-byte aligned: a warp reads two rows 16 words
  // apart, in different banks).
  CHECK(has(m.source, "__shared__ __align__(16) float tileA0[3][128][16];"));  // 16-byte copies need 16-byte alignment
  CHECK(has(m.source, "__shared__ __align__(16) float tileB0[3][16][128];"));
  // f32 operands in f32, rows of a multiple of 4: staged by 16-byte cp.async (four elements of
  // a row each), the copies of the step two ahead issued before this step's arithmetic, each
  // step's waited for (and a barrier) before it computes.
  CHECK(has(m.source, "texc_cp_async16(&tileA0[(cur + 2) % 3][e / 4][4 * (e % 4)], ok ? &A_p[256 * i_ + k_] : A_p, ok);"));
  CHECK(has(m.source, "texc_cp_async16(&tileB0[0][e / 32][4 * (e % 32)], ok ? &B_p[4096 * k_ + j_] : B_p, ok);"));
  CHECK(has(m.source, "texc_cp_async16(&tileB0[1][e / 32][4 * (e % 32)], ok ? &B_p[4096 * k_ + j_] : B_p, ok);"));
  CHECK(has(m.source, "const int i_ = row0 + e / 4, k_ = (k0 + 32) + 4 * (e % 4);"));
  CHECK(has(m.source, "texc_cp_async_wait<1>();"));
  CHECK(has(m.source, "texc_cp_async_commit();  // an empty group keeps the count"));
  CHECK(has(m.source, "//   16-byte copies (four elements of a row each, cp.async.cg): A, B"));
  CHECK(has(m.source, "cp.async.ca.shared.global"));
  CHECK_FALSE(has(m.source, "nextA0"));
  bool noted = false;
  for (const std::string& n : k.mapping) noted = noted || has(n, "by cp.async (sm_80+), three buffers");
  CHECK(noted);
  // Registers budgeted for two blocks per SM (128 per thread), and the mapping says so.
  CHECK(k.minBlocksPerSM == 2);
  CHECK(has(m.source, "extern \"C\" __global__ void __launch_bounds__(256, 2) texc_k0_C("));
  CHECK(has(m.source, "//   registers: at most 128 per thread (__launch_bounds__(256, 2)), so that 2 blocks share an SM"));
  CHECK(has(m.source, "regs[8][8]"));
  // K = 256 is a multiple of the k-step: no tail check.
  CHECK_FALSE(has(m.source, "if (k0 + kk >= 256) break;"));
  CudaModule odd = generate("matmul.tex", {"M=70", "K=37", "N=66"});
  REQUIRE(odd.kernels[0].strategy == CudaStrategy::TiledContraction);
  CHECK(has(odd.source, "if (k0 + kk >= 37) break;"));
  CHECK(has(odd.source, "regs[4][4]"));  // outputs under 128x128: 64x64 tiles
  CHECK(odd.kernels[0].blocks == 4);
  // K = 37 rows are no multiple of 4: A by element copies, into two stages with padded rows.
  CHECK(has(odd.source, "__shared__ float tileA0[2][64][17];"));
  CHECK(has(odd.source, "texc_cp_async(&tileA0[cur ^ 1][e / 16][e % 16]"));
  CHECK(has(odd.source, "texc_cp_async_wait<0>();"));
  // 512 x 384 (the example's size) in 128 x 128 tiles would be 12 blocks for 132 SMs: the tiles
  // shrink to 64 x 64 (48 blocks, as many as there are).
  CudaModule small = generate("matmul.tex");
  CHECK(small.kernels[0].blocks == 8 * 6);
  CHECK(has(small.source, "regs[4][4]"));
  // 1024 x 1024: 64 tiles of 128 x 128, 256 of 64 x 64 (as close to two per SM as it gets).
  CudaModule mid = generate("matmul.tex", {"M=1024", "N=1024"});
  CHECK(mid.kernels[0].blocks == 256);
  // On a GPU of 8 SMs (the option) the 1024 x 1024 matmul keeps 128 x 128 tiles.
  TestProgram p = makeProgram(fs::path(TEXC_SOURCE_DIR) / "examples" / "matmul.tex", {"M=1024", "N=1024"});
  std::unique_ptr<Compilation> c = compileTo(p, Stage::Loops);
  REQUIRE(c->ok);
  CudaCodeGenOptions few;
  few.multiprocessors = 8;
  CudaModule eight = generateCUDA(*c->state.loops, few);
  CHECK(eight.kernels[0].blocks == 64);
  CHECK(has(eight.source, "regs[8][8]"));
}

// --math=fast opts f32 contractions into TF32 tensor cores; precise keeps the FMA tile.
TEST_CASE("codegen-cuda: --math=fast runs f32 contractions on TF32 tensor cores", "[cuda][codegen]") {
  auto compile = [](MathMode math) {
    PipelineOptions o;
    o.target = Target::Cuda;
    o.math = math;
    // 4096 x 4096: 128 x 128 tiles (two per SM)
    std::unique_ptr<Compilation> c =
        compileTo(makeProgram(fs::path(TEXC_SOURCE_DIR) / "examples" / "matmul.tex", {"M=4096", "N=4096"}), Stage::CUDA, o);
    REQUIRE(c->ok);
    REQUIRE(c->state.cuda);
    return *c->state.cuda;
  };
  CudaModule fast = compile(MathMode::Fast);
  REQUIRE(fast.kernels.size() == 1);
  CHECK(fast.kernels[0].strategy == CudaStrategy::TiledContraction);
  // Staged by cp.async, the tensor-core tile fits two blocks per SM (119-125 registers).
  CHECK(fast.kernels[0].minBlocksPerSM == 2);
  CHECK(has(fast.source, "//   tensor cores (--math=fast): f32 operands staged as f32 and rounded to TF32 (cvt.rna)"));
  CHECK(has(fast.source, "__shared__ __align__(16) float tileA[2][128][20];"));
  CHECK(has(fast.source, "__shared__ __align__(16) float tileB[2][16][136];"));
  // Its f32 operands go by 16-byte cp.async, two stages (three would pass 48 KB).
  CHECK(has(fast.source, "texc_cp_async16(&tileA[cur ^ 1][e / 4][4 * (e % 4)], ok ? &A_p[256 * i_ + k_] : A_p, ok);"));
  CHECK(has(fast.source, "//   16-byte copies (four elements of a row each, cp.async.cg): A, B"));
  CHECK(has(fast.source, "fa[a][2] = texc_tf32(r0[4]);"));
  CHECK(has(fast.source, "const unsigned fb0 = texc_tf32(tileB[cur][kh + t][c]), fb1 = texc_tf32(tileB[cur][kh + t + 4][c]);"));
  CHECK(has(fast.source, "texc_mma_tf32(frag[a][b], fa[a][0], fa[a][1], fa[a][2], fa[a][3], fb0, fb1);"));
  CudaModule precise = compile(MathMode::Precise);
  CHECK_FALSE(has(precise.source, "texc_mma_tf32(frag"));
  CHECK(has(precise.source, "regs[8][8]"));
}

TEST_CASE("codegen-cuda: bf16 and f16 contractions run on tensor cores, f32 and mixed ones do not", "[cuda][codegen]") {
  auto lowp = [](const std::vector<std::string>& defines) {
    TestProgram p = makeProgram(fs::path(TEXC_SOURCE_DIR) / "tests" / "e2e" / "lowp_matmul_bf16.tex", defines);
    std::unique_ptr<Compilation> c = compileTo(p, Stage::CUDA, Target::Cuda, FuseMode::All);
    REQUIRE(c->ok);
    REQUIRE(c->state.cuda);
    return *c->state.cuda;
  };
  // 2100 x 2100: 17 x 17 tiles of 128 x 128, two per SM of 132.
  CudaModule m = lowp({"M=2100", "N=2100", "K=40"});
  // The contractions: C and G's sum (G.1; F reads C) in bf16, T of bf16 x f16 (not one dtype), H in f16.
  int mma = 0, tiled = 0;
  for (const CudaKernel& k : m.kernels) {
    INFO(k.loopKernel);
    if (k.strategy != CudaStrategy::TiledContraction) continue;
    ++tiled;
    const bool tensor = k.loopKernel != "k3_T";
    bool noted = false, async = false;
    for (const std::string& n : k.mapping) {
      noted = noted || has(n, "tensor cores:");
      async = async || has(n, "cp.async");
    }
    CHECK(noted == tensor);
    // Staged through registers (rows of 2100 halves are no multiple of 8: no 16-byte copies), a
    // tensor-core tile keeps one block's register budget (at 128 registers it would spill).
    if (tensor) CHECK(k.minBlocksPerSM == 1);
    CHECK_FALSE(async);  // 16-bit operands widened to f32 on the way (or staged as 16-bit values): no byte copies
    mma += tensor;
  }
  CHECK(tiled == 4);
  CHECK(mma == 3);
  CHECK(has(m.source, "__shared__ unsigned short tileA[2][128][24];"));  // 16-bit operands, rows padded by 8
  CHECK(has(m.source, "__shared__ unsigned short tileB[2][16][136];"));
  CHECK(has(m.source, "float frag[4][4][4];"));  // 8 warps of 64x32: 4 x 4 fragments of 16x8
  CHECK(has(m.source, "texc_mma_bf16(frag[a][b], fa[a][0], fa[a][1], fa[a][2], fa[a][3], fb0, fb1);"));
  CHECK(has(m.source, "texc_mma_f16(frag[a][b]"));
  CHECK(has(m.source, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"));
  CHECK(has(m.source, "tileA0[cur ^ 1][e / 16][e % 16] = nextA0[s];"));  // T's operands through registers
  // Under 128 outputs a side: 64x64 tiles, 2 x 2 fragments per warp; so too when 128x128 tiles
  // would give an SM fewer than two.
  CHECK(has(lowp({"M=70", "N=90", "K=1100"}).source, "float frag[2][2][4];"));
  CHECK(has(lowp({"M=130", "N=129", "K=40"}).source, "float frag[2][2][4];"));
  // f32 matmul keeps the CUDA-core tile, and its module no tensor-core helpers.
  CudaModule f32 = generate("matmul.tex");
  CHECK_FALSE(has(f32.source, "texc_mma_"));
  CHECK_FALSE(has(f32.source, "mma.sync"));
}

TEST_CASE("codegen-cuda: matmul + bias + GELU: one tiled kernel with the epilogue on the register block", "[cuda][codegen]") {
  CudaModule m = generate("matmul_bias_gelu.tex");
  REQUIRE(m.kernels.size() == 1);
  CHECK(m.kernels[0].strategy == CudaStrategy::TiledContraction);
  // The matmul is read twice by gelu; lowering gives both reads one accumulator.
  CHECK(has(m.source, "acc0 = regs[r][c];"));
  CHECK_FALSE(has(m.source, "acc1 = regs[r][c];"));
  CHECK(has(m.source, "erff("));
}

TEST_CASE("codegen-cuda: small matmuls: few outputs use block reductions, short sums one thread each", "[cuda][codegen]") {
  CudaModule few = generate("matmul.tex", {"M=7", "K=33", "N=5"});
  REQUIRE(few.kernels.size() == 1);
  CHECK(few.kernels[0].strategy == CudaStrategy::BlockReduce);
  CudaModule shortSum = generate("matmul.tex", {"M=7", "K=8", "N=5"});
  REQUIRE(shortSum.kernels.size() == 1);
  CHECK(shortSum.kernels[0].strategy == CudaStrategy::GridStride);
  CHECK(has(shortSum.source, "for (int k_ = 0; k_ < 8; ++k_) {"));
}

// implicit-gemm: the convolution is a tiled contraction over (output channels, pixels, c*r*s)
// whose padding is staged as zeros of the input; fuse-pool-into-gemm puts the pool in its
// epilogue: the columns are (pooled pixel, window element), a window's 4 elements neighbouring
// lanes combined by shuffles, and the convolution's result is never stored.
TEST_CASE("codegen-cuda: conv+pool is an implicit GEMM whose padding is staged as zeros, the pool in its epilogue", "[cuda][codegen]") {
  CudaModule m = generate("conv_pool.tex", {"N=32"});
  REQUIRE(m.kernels.size() == 1);
  CHECK(m.kernels[0].strategy == CudaStrategy::TiledContraction);
  CHECK(m.kernels[0].loopKernel == "k0_sb_pool");
  CHECK(has(m.source, "//   k → row0 + threadIdx.x/16 + 16*r, r < 4"));
  CHECK(has(m.source, "//   yx * 4 + w → col0 + threadIdx.x%16 + 16*c, c < 8 (col0: the 128-column tile"));  // 64 x 128: 64 channels
  CHECK(has(m.source, "//   pool in the epilogue: the 4 elements of a window (w) are neighbouring columns of one warp, combined by 2 xor shuffles"));
  CHECK(has(m.source, "//   crs → k0 + kk, k0 in steps of 16"));
  CHECK(has(m.source, "//   padding: where the guard of the term fails, the column operand is staged as 0"));
  CHECK(has(m.source, "//   n → tile / 25, tile = blockIdx.x, grid-stride over 800 tiles"));
  // The guard is one unsigned comparison per condition, in the input's staging only; indices
  // that cannot be negative divide as C does.
  CHECK(has(m.source, "(unsigned)((((2 * (yx_ % 28) + (w_ % 2)) + (crs_ % 3)) - 1)) < 56u"));
  CHECK_FALSE(has(m.source, "texc_floordiv(crs_"));
  CHECK_FALSE(has(m.source, "// otherwise the term is skipped"));
  // The weights are W's rows read in order along crs: 16-byte copies at a linear address, into
  // unpadded rows (the kernel's reads of them become ld.shared.v4).
  CHECK(has(m.source, "//   16-byte copies (four elements of a row each, cp.async.cg): Wt"));
  CHECK(has(m.source, "__shared__ __align__(16) float tileA0[2][64][16];  // Wt at (i, k)"));
  CHECK(has(m.source, "ok ? &Wt_p[576 * k_ + crs_] : Wt_p, ok);"));
  // The window's elements combine across lanes before anything returns; the first stores.
  CHECK(has(m.source, "for (int o = 1; o < 4; o <<= 1) acc1 = texc_max(acc1, __shfl_xor_sync(0xffffffffu, acc1, o));"));
  CHECK(has(m.source, "if (!(k_ < 64 && colw < 3136) || !(w_ == 0)) continue;"));
  CHECK_FALSE(has(m.source, "sb_p["));
}

// A B^T: Q's rows go by 16-byte copies, K's columns element by element; Q's shared rows stay
// unpadded, so that every 16-byte copy lands 16-byte aligned (a padded row faults on a GPU).
TEST_CASE("codegen-cuda: a row operand copied 16 bytes at a time has unpadded shared rows", "[cuda][codegen]") {
  const std::string source = generateAt("tests/e2e/qkt_batched.tex", {"H=2", "M=64", "N=64", "D=64"}).source;
  CHECK(has(source, "//   16-byte copies (four elements of a row each, cp.async.cg): Q"));
  CHECK(has(source, "float tileA0[2][64][16];  // Q at (i, k)"));
  CHECK_FALSE(has(source, "[17];  // Q at (i, k)"));
  CHECK(has(source, "texc_cp_async(&tileB0["));  // K element by element
}

// Without tiling the convolution stays under the pool, one untiled nest with its skip guards.
TEST_CASE("codegen-cuda: conv+pool with --no-tile keeps the skip guards", "[cuda][codegen]") {
  PipelineOptions untiled;
  untiled.target = Target::Cuda;
  untiled.tile = false;
  std::unique_ptr<Compilation> c = compileTo(makeProgram(fs::path(TEXC_SOURCE_DIR) / "examples" / "conv_pool.tex", {}), Stage::CUDA, untiled);
  REQUIRE(c->ok);
  const CudaModule& m = *c->state.cuda;
  REQUIRE(m.kernels.size() == 1);
  CHECK(m.kernels[0].strategy == CudaStrategy::GridStride);
  CHECK(has(m.source, "// otherwise the term is skipped"));
  CHECK(has(m.source, ">= 0 && "));
}

TEST_CASE("codegen-cuda: options are honoured and checked", "[cuda][codegen]") {
  TestProgram p = makeProgram(fs::path(TEXC_SOURCE_DIR) / "examples" / "softmax.tex", {"R=5", "D=300"});
  std::unique_ptr<Compilation> c = compileTo(p, Stage::Loops);
  REQUIRE(c->ok);
  CudaCodeGenOptions o;
  o.symbolPrefix = "mine_";
  o.threadsPerBlock = 64;
  o.blockReductions = false;
  CudaModule m = generateCUDA(*c->state.loops, o);
  for (const CudaKernel& k : m.kernels) {
    CHECK(k.symbol.rfind("mine_", 0) == 0);
    CHECK(k.threads == 64);
    CHECK(k.strategy == CudaStrategy::GridStride);
  }
  o.threadsPerBlock = 48;
  CHECK_THROWS_AS(generateCUDA(*c->state.loops, o), std::invalid_argument);
}

TEST_CASE("codegen-cuda: f16 and bf16 are stored as 16-bit integers with rounding helpers", "[cuda][codegen]") {
  for (const char* name : {"lowp_f16.tex", "lowp_bf16.tex"}) {
    TestProgram p = makeProgram(fs::path(TEXC_SOURCE_DIR) / "tests" / "e2e" / name, {});
    std::unique_ptr<Compilation> c = compileTo(p, Stage::CUDA);
    REQUIRE(c->ok);
    const std::string& s = c->state.cuda->source;
    CHECK(has(s, "unsigned short* __restrict__"));
    CHECK((has(s, "texc_f16_store(") || has(s, "texc_bf16_store(")));
  }
}

TEST_CASE("codegen-cuda: every suite program generates, one kernel per loop kernel, names unique", "[cuda][codegen]") {
  int programs = 0;
  for (const TestProgram& p : suitePrograms()) {
    INFO(p.label);
    std::unique_ptr<Compilation> c = compileTo(p, Stage::CUDA);
    REQUIRE(c->ok);
    const CudaModule& m = *c->state.cuda;
    REQUIRE(m.kernels.size() == c->state.loops->kernels.size());
    std::set<std::string> names;
    for (const CudaKernel& k : m.kernels) {
      CHECK(names.insert(k.symbol).second);
      const std::string bounds = std::to_string(k.threads) + (k.minBlocksPerSM > 1 ? ", " + std::to_string(k.minBlocksPerSM) : "");
      CHECK(has(m.source, "void __launch_bounds__(" + bounds + ") " + k.symbol + "("));
      // Tiled contractions of FMAs budget their registers for two blocks per SM; the others
      // (tensor-core tiles among them) keep one.
      CHECK((k.minBlocksPerSM == 1 || (k.minBlocksPerSM == 2 && k.strategy == CudaStrategy::TiledContraction)));
      CHECK(k.paramTypes.size() == c->state.loops->buffers.size());
      CHECK(!k.mapping.empty());
      CHECK(k.blocks >= 1);
    }
    CHECK(verifyCudaModule(m, *c->state.loops).empty());
    ++programs;
  }
  CHECK(programs >= 60);
}

TEST_CASE("codegen-cuda: the verifier reports a module the launcher could not use", "[cuda][codegen]") {
  TestProgram p = makeProgram(fs::path(TEXC_SOURCE_DIR) / "examples" / "softmax.tex", {"R=5", "D=300"});
  std::unique_ptr<Compilation> c = compileTo(p, Stage::CUDA, Target::Cuda, FuseMode::Elementwise);  // three kernels
  REQUIRE(c->ok);
  CudaModule m = *c->state.cuda;
  REQUIRE(verifyCudaModule(m, *c->state.loops).empty());
  m.kernels[0].threads = 48;
  m.kernels[1].symbol = m.kernels[2].symbol;
  m.kernels[2].blocks = 0;
  m.kernels[0].paramTypes.pop_back();
  std::vector<std::string> problems = verifyCudaModule(m, *c->state.loops);
  std::string all;
  for (const std::string& s : problems) all += s + "\n";
  INFO(all);
  CHECK(has(all, "48 threads"));
  CHECK(has(all, "defined twice"));
  CHECK(has(all, "0 blocks"));
  CHECK(has(all, "parameters for"));
  m.kernels.pop_back();
  CHECK(has(verifyCudaModule(m, *c->state.loops).front(), "2 CUDA kernels for 3 loop kernels"));
  m.source = "";
  CHECK(!verifyCudaModule(m, *c->state.loops).empty());
}

TEST_CASE("codegen-cuda: the cuda target replaces the LLVM passes in the pipeline", "[cuda][codegen]") {
  PipelineOptions cudaOptions, cpuOptions;
  cudaOptions.target = Target::Cuda;
  std::string cuda, cpu;
  for (const PassInfo* p : buildPipeline(cudaOptions, Stage::CUDA)) cuda += std::string(p->name) + " ";
  for (const PassInfo* p : buildPipeline(cpuOptions, Stage::LLVM)) cpu += std::string(p->name) + " ";
  // The CPU-only loop passes (tile, sink-unit-loops, split-borders, fuse-into-tiles) are not in
  // the cuda pipeline; schedule-loops runs only with a schedule file's `loops` lines.
  // implicit-gemm, fuse-pool-into-gemm, map-gpu and sync-gpu-threads are the cuda pipeline's own loop passes.
  CHECK(has(cuda, "lower-to-loops implicit-gemm fuse-pool-into-gemm split-k split-keys fuse-row-passes plan-memory map-gpu sync-gpu-threads codegen-cuda "));
  CHECK_FALSE(has(cuda, "codegen-llvm"));
  CHECK(has(cpu, "lower-to-loops tile tile-online-softmax fuse-row-passes fuse-sibling-reductions sink-unit-loops split-borders fuse-into-tiles stream-stores pipeline-row-stores interleave-loops split-chains pair-bf16-lanes sum-lanes nonpositive-exp plan-memory codegen-llvm optimize-llvm "));
  CHECK_FALSE(has(cpu, "codegen-cuda"));
  // Up to the dataflow graph, both targets run the same passes.
  std::string a, b;
  for (const PassInfo* p : buildPipeline(cudaOptions, Stage::Graph)) a += p->name;
  for (const PassInfo* p : buildPipeline(cpuOptions, Stage::Graph)) b += p->name;
  CHECK(a == b);
}

// The device arena follows the memory plan: gelu unfused has 10 temps; on the cuda target they
// are planned without in-place writes, so temps whose lifetimes overlap never share a byte, dead
// ones are reused, and inputs and outputs have bytes of their own. No GPU needed: the layout is
// what CudaExecutable allocates and binds.
TEST_CASE("codegen-cuda: the device arena is laid out by the memory plan, without in-place writes", "[cuda][codegen]") {
  TestProgram p = makeProgram(fs::path(TEXC_SOURCE_DIR) / "examples" / "gelu.tex", {"N=4", "D=8"});
  std::unique_ptr<Compilation> c = compileTo(p, Stage::CUDA, Target::Cuda, FuseMode::None);
  REQUIRE(c->ok);
  REQUIRE(c->state.memoryPlan);
  const loops::LoopProgram& lp = *c->state.loops;
  const loops::MemoryPlan& plan = *c->state.memoryPlan;
  for (const loops::PlannedTemp& t : plan.temps) CHECK_FALSE(t.inPlace);
  CHECK(plan.temps.size() == 10);
  DeviceArenaLayout planned = deviceArenaLayout(lp, &plan);
  DeviceArenaLayout naive = deviceArenaLayout(lp, nullptr);
  CHECK(planned.bytes < naive.bytes);
  auto bytesOf = [&](size_t b) { return static_cast<size_t>(lp.buffers[b].numElements()) * dtypeBytes(lp.buffers[b].dtype); };
  auto lifetime = [&](size_t b) -> std::pair<int, int> {
    if (const loops::PlannedTemp* t = plan.find(static_cast<int>(b))) return {t->defKernel, t->lastKernel};
    return {-1, 1 << 30};  // inputs and outputs live throughout
  };
  for (size_t a = 0; a < lp.buffers.size(); ++a)
    for (size_t b = a + 1; b < lp.buffers.size(); ++b) {
      auto [da, la] = lifetime(a);
      auto [db, lb] = lifetime(b);
      bool overlapInTime = da <= lb && db <= la;
      bool overlapInBytes = planned.offsets[a] < planned.offsets[b] + bytesOf(b) && planned.offsets[b] < planned.offsets[a] + bytesOf(a);
      INFO(lp.buffers[a].name << " and " << lp.buffers[b].name);
      CHECK_FALSE((overlapInTime && overlapInBytes));
      CHECK(planned.offsets[a] % 64 == 0);
    }
}

}  // namespace
}  // namespace texc::cudatest
