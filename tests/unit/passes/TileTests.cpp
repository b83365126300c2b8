// The tile pass (compiler/loops/TileContractions.cpp) and its schedule rule (Schedule.cpp):
//
//   - goldens of the loop IR before and after tiling, with a fixed machine (AVX2: 8 floats per
//     register, 16 registers, 32 KiB L1, 512 KiB L2), so they do not depend on the host;
//   - semantics: for contractions with tails in every tiled dimension (odd and prime sizes),
//     batched, transposed, with fused epilogues, and under several schedules, the tiled loop
//     program verifies and gives bit-identical outputs to the untiled one under the loop-IR
//     interpreter (the tile keeps each element's k order, so the sums are the same);
//   - A B^T and strided convolutions, whose column operand is not contiguous in j: packed
//     (gathered) whatever the schedule says, and the LLVM code's gathers, packed or in place;
//   - what is not a contraction is left alone; the rule's arithmetic; the schedule file syntax
//     and its errors; the verifier's checks of the new statements.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <optional>
#include <tuple>

#include "LoopInterpreter.h"
#include <algorithm>

#include "PassTestSupport.h"
#include "compiler/backend/llvm/CodeGenLLVM.h"
#include "compiler/backend/llvm/CpuExecutable.h"
#include "compiler/loops/TileContractions.h"
#include "compiler/loops/Walk.h"
#include "compiler/passes/Pipeline.h"
#include "runtime/Buffer.h"
#include "runtime/ThreadPool.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

namespace texc::passtest {
namespace {

using Lowered = LoweredLoops;

// The untiled loop program of `text` (and its graph, for inputs and outputs).
Lowered lower(const std::string& name, const std::string& text) { return lowerOnly(name, text); }

std::vector<std::vector<double>> run(const Lowered& l, const loops::LoopProgram& lp, uint64_t seed) {
  return interpretOnRandomInputs(l, lp, seed);
}

const char* const kMatmulOdd =
    "input A : f32[97, 61]\ninput B : f32[61, 131]\noutput C[i, j] = sum(k: A[i, k] * B[k, j])\n";

const char* const kMatmulTransposedB =
    "input A : f32[97, 61]\ninput B : f32[131, 61]\noutput C[i, j] = sum(k: A[i, k] * B[j, k])\n";

struct SemanticsCase {
  const char* name;
  const char* text;
};

const SemanticsCase kCases[] = {
    {"matmul 97x131x61", kMatmulOdd},
    {"matmul 5x3x2 (smaller than one tile)", "input A : f32[5, 2]\ninput B : f32[2, 3]\noutput C[i, j] = sum(k: A[i, k] * B[k, j])\n"},
    {"matmul 13x29x531 (k blocks with a tail)",
     "input A : f32[13, 531]\ninput B : f32[531, 29]\noutput C[i, j] = sum(k: A[i, k] * B[k, j])\n"},
    {"batched matmul 3x7x19x23",
     "input A : f32[3, 7, 23]\ninput B : f32[3, 23, 19]\noutput C[b, i, j] = sum(k: A[b, i, k] * B[b, k, j])\n"},
    {"A transposed", "input A : f32[23, 17]\ninput B : f32[23, 37]\noutput C[i, j] = sum(k: A[k, i] * B[k, j])\n"},
    {"operands swapped", "input A : f32[11, 23]\ninput B : f32[23, 37]\noutput C[i, j] = sum(k: B[k, j] * A[i, k])\n"},
    {"bias and gelu epilogue",
     "input A : f32[7, 9]\ninput W : f32[9, 19]\ninput bias : f32[19]\nC[i, j] = sum(k: A[i, k] * W[k, j])\n"
     "h = C + bias\noutput y = 0.5 * h * (1 + erf(h * 0.7071067811865476))\n"},
    {"scaled epilogue reading i and j",
     "input A : f32[10, 12]\ninput B : f32[12, 17]\noutput C[i, j] = 0.5 * sum(k: A[i, k] * B[k, j]) + i - j\n"},
    // B not contiguous in j: the pack gathers it (forced on, whatever the schedule says).
    {"A B^T 97x131x61", kMatmulTransposedB},
    {"A B^T 13x29x531 (k blocks with a tail)",
     "input A : f32[13, 531]\ninput B : f32[29, 531]\noutput C[i, j] = sum(k: A[i, k] * B[j, k])\n"},
    {"batched Q K^T 3x7x19x23",
     "input Q : f32[3, 7, 23]\ninput K : f32[3, 19, 23]\noutput S[b, i, j] = sum(d: Q[b, i, d] * K[b, j, d])\n"},
    {"A^T B^T, operands swapped", "input A : f32[23, 17]\ninput B : f32[37, 23]\noutput C[i, j] = sum(k: B[j, k] * A[k, i])\n"},
    {"attention scores: scale and causal mask",
     "input Q : f32[37, 11]\ninput K : f32[41, 11]\n"
     "output S[i, j] = select(j <= i, sum(d: Q[i, d] * K[j, d]) * 0.125, -inf)\n"},
    {"B read at a stride of 2 in j", "input A : f32[11, 23]\ninput B : f32[23, 75]\noutput C[i, j < 37] = sum(k: A[i, k] * B[k, 2 * j])\n"},
    // f16/bf16: packed whatever the schedule says; a low-precision output keeps its partial sums
    // in f32 scratch (the interpreter checks every scratch address).
    {"bf16 matmul 13x29x531 (k blocks, partial sums in scratch)",
     "input A : bf16[13, 531]\ninput B : bf16[531, 29]\noutput C[i, j] = sum(k: A[i, k] * B[k, j])\n"},
    {"f16 A B^T 37x19x45 with a bias, f16 output",
     "input A : f16[37, 45]\ninput B : f16[19, 45]\ninput b : f16[19]\noutput C[i, j] = sum(k: A[i, k] * B[j, k]) + b[j]\n"},
    {"bf16 A, f32 B", "input A : bf16[11, 23]\ninput B : f32[23, 37]\noutput C[i, j] = sum(k: A[i, k] * B[k, j])\n"},
};

// Schedules that exercise each part of the tile: the default, no packing, k blocks that do not
// divide K, one-row tiles, wider columns, an mc that is not a multiple of the rows.
std::vector<std::pair<std::string, loops::ScheduleOverrides>> schedules() {
  std::vector<std::pair<std::string, loops::ScheduleOverrides>> out;
  out.push_back({"rule", {}});
  loops::ScheduleOverrides noPack;
  noPack.pack = false;
  noPack.packA = false;
  out.push_back({"no packing", noPack});
  loops::ScheduleOverrides small;
  small.kc = 5;
  small.mc = 12;
  out.push_back({"kc 5, mc 12", small});
  loops::ScheduleOverrides blocks;
  blocks.kc = 7;
  blocks.nc = 32;
  out.push_back({"kc 7, B packed 32 columns at a time", blocks});
  loops::ScheduleOverrides columns = blocks;
  columns.columnsOuter = true;
  columns.mc = 12;
  out.push_back({"kc 7, columns outer, B blocks of 32 columns, mc 12", columns});
  loops::ScheduleOverrides rows;
  rows.kc = 9;
  rows.columnsOuter = false;
  out.push_back({"kc 9, rows outer", rows});
  loops::ScheduleOverrides oneRow;
  oneRow.mr = 1;
  oneRow.nr = 8;
  oneRow.kc = 8;
  oneRow.pack = false;
  out.push_back({"1x8, B in place, kc 8", oneRow});
  loops::ScheduleOverrides wide;
  wide.mr = 4;
  wide.nr = 24;
  wide.mc = 10;
  out.push_back({"4x24, mc 10", wide});
  return out;
}

// Tiles `c`'s program under every schedule: exactly one contraction is tiled, the result
// verifies, and the interpreter computes the untiled nest's outputs bit for bit (inputs from `seed`).
void checkTiledMatchesUntiled(const SemanticsCase& c, const std::vector<std::pair<std::string, loops::ScheduleOverrides>>& scheds,
                              uint64_t seed, const loops::MachineInfo& machine = avx2Machine(), const char* mustPrint = nullptr) {
  Lowered l = lower(c.name, c.text);
  std::vector<std::vector<double>> expected = run(l, l.loops, seed);
  for (const auto& [what, overrides] : scheds) {
    INFO("schedule: " << what);
    loops::LoopProgram tiled = l.loops;
    CHECK(loops::tileContractions(tiled, machine, overrides) == 1);
    std::vector<std::string> problems = loops::verifyLoopProgram(tiled);
    const std::string printed = loops::printLoopProgram(tiled);
    INFO(printed);
    if (mustPrint) CHECK(printed.find(mustPrint) != std::string::npos);
    for (const std::string& p : problems) FAIL_CHECK(p);
    std::vector<std::vector<double>> got = run(l, tiled, seed);
    for (int id : l.graph.outputs) CHECK(got[id] == expected[id]);
  }
}

TEST_CASE("tile: tiled contractions compute what the untiled nests compute", "[passes][tile]") {
  for (const SemanticsCase& c : kCases) {
    DYNAMIC_SECTION(c.name) {
      checkTiledMatchesUntiled(c, schedules(), 7);
    }
  }
}

// A core with AVX512-BF16's vdpbf16ps (as Sapphire Rapids: 32 zmm registers, 2 MiB of L2).
loops::MachineInfo bf16DotMachine() {
  loops::MachineInfo m = avx2Machine();
  m.vectorFloats = 16;
  m.vectorRegisters = 32;
  m.l2Bytes = 2 << 20;
  m.bf16Dot = true;
  return m;
}

TEST_CASE("tile: bf16 x bf16 on a CPU with vdpbf16ps: packed in pairs along k, the same sums", "[passes][tile]") {
  // AVX512-BF16 (Cooper Lake, Sapphire Rapids, Zen 4): both packs keep the bf16 bits two k steps
  // to a 32-bit element, an odd window ending in +0; the interpreter reads the pairs back in k
  // order, so the sums are the untiled ones. Odd K, k blocks with odd tails, rows and columns
  // with tails.
  const loops::MachineInfo m = bf16DotMachine();
  const SemanticsCase cases[] = {
      {"bf16 matmul 13x29x531", "input A : bf16[13, 531]\ninput B : bf16[531, 29]\noutput C[i, j] = sum(k: A[i, k] * B[k, j])\n"},
      {"bf16 matmul 97x131x61, f32 output",
       "input A : bf16[97, 61]\ninput B : bf16[61, 131]\ninput u : f32\noutput C[i, j] = sum(k: A[i, k] * B[k, j]) * u\n"},
      {"bf16 matmul 5x3x1", "input A : bf16[5, 1]\ninput B : bf16[1, 3]\noutput C[i, j] = sum(k: A[i, k] * B[k, j])\n"},
  };
  for (const SemanticsCase& c : cases) {
    DYNAMIC_SECTION(c.name) {
      checkTiledMatchesUntiled(c, schedules(), 5, m, "two k steps per vdpbf16ps");
    }
  }
  // Without the instruction, or with an operand that is not bf16, the packs widen to f32.
  Lowered l = lower("f16", "input A : f16[13, 40]\ninput B : bf16[40, 29]\noutput C[i, j] = sum(k: A[i, k] * B[k, j])\n");
  loops::LoopProgram tiled = l.loops;
  REQUIRE(loops::tileContractions(tiled, m, {}) == 1);
  CHECK(loops::printLoopProgram(tiled).find("A is f16, B bf16: packed and widened to f32 once per panel") != std::string::npos);
  CHECK(loops::printLoopProgram(tiled).find("bf16 pairs") == std::string::npos);
  // A packed as pairs takes 2 bytes an element: its block gets twice the rows of an f32 block in
  // the same half of L2 (one thread, 2048 x 2048 x 2048, k blocks of 512: up to 1020 rows, so 3
  // blocks of 684, where f32 gets up to 510, 5 blocks of 414; B is packed once per block).
  loops::MachineInfo one = m;
  one.threads = 1;
  const loops::TileSchedule f32 = loops::chooseTileSchedule(one, 2048, 2048, 2048, {});
  const loops::TileSchedule paired = loops::chooseTileSchedule(one, 2048, 2048, 2048, {}, true, true, 2);
  CHECK(f32.kc == 512);
  CHECK(paired.kc == 512);
  CHECK(f32.mc == 414);
  CHECK(paired.mc == 684);
  CHECK(paired.packA);
  Lowered big = lower("bf16 2048", "input A : bf16[2048, 2048]\ninput B : bf16[2048, 2048]\noutput C[i, j] = sum(k: A[i, k] * B[k, j])\n");
  REQUIRE(loops::tileContractions(big.loops, one, {}) == 1);
  CHECK(loops::printLoopProgram(big.loops).find("A block 684x512 <= L2/2 (1024 KiB)") != std::string::npos);
  // A schedule file's mc whose bf16 A block would not fit the stack scratch is halved until it
  // does, and the note says so; a K too long for even one tile's pack leaves the contraction
  // untiled, with the reason (both were untiled without a word).
  Lowered asked = lower("bf16 2048", "input A : bf16[2048, 2048]\ninput B : bf16[2048, 2048]\noutput C[i, j] = sum(k: A[i, k] * B[k, j])\n");
  loops::ScheduleOverrides mc2048;
  mc2048.mc = 2048;
  REQUIRE(loops::tileContractions(asked.loops, one, mc2048) == 1);
  CHECK(loops::printLoopProgram(asked.loops).find("; mc = 2048 lowered to 1020: the packed A block must fit 1 MiB of stack scratch") !=
        std::string::npos);
  Lowered deep = lower("bf16 deep", "input A : bf16[12, 300000]\ninput B : bf16[300000, 16]\noutput C[i, j] = sum(k: A[i, k] * B[k, j])\n");
  loops::ScheduleOverrides unblocked;
  unblocked.kc = 1 << 20;
  unblocked.mc = 6;
  CHECK(loops::tileContractions(deep.loops, one, unblocked) == 0);
  CHECK(loops::printLoopProgram(deep.loops).find("not tiled: the row (A) operand must be packed (it is bf16)") != std::string::npos);
}

TEST_CASE("tile: bf16 x bf16 on a CPU with AMX tiles: 32x32 tiles, packs in tile order, the same sums", "[passes][tile][amx]") {
  // AMX (Sapphire Rapids): the register tile is 2x2 tiles of 16x16, each group of 16 pairs one
  // tdpbf16ps per tile; the A pack keeps each row's 16 pairs of a group side by side (an A tile),
  // the B pack pads the window's pairs with zeros to whole groups. Tails in every dimension, k
  // blocks with a tail that is not a whole group, an f32 output and A B^T.
  loops::MachineInfo m = bf16DotMachine();
  m.amxBf16 = true;
  const SemanticsCase cases[] = {
      {"bf16 matmul 13x29x531", "input A : bf16[13, 531]\ninput B : bf16[531, 29]\noutput C[i, j] = sum(k: A[i, k] * B[k, j])\n"},
      {"bf16 matmul 97x131x61, f32 output",
       "input A : bf16[97, 61]\ninput B : bf16[61, 131]\ninput u : f32\noutput C[i, j] = sum(k: A[i, k] * B[k, j]) * u\n"},
      {"bf16 matmul 5x3x1", "input A : bf16[5, 1]\ninput B : bf16[1, 3]\noutput C[i, j] = sum(k: A[i, k] * B[k, j])\n"},
      {"bf16 A B^T 40x33x70", "input A : bf16[40, 70]\ninput B : bf16[33, 70]\noutput C[i, j] = sum(k: A[i, k] * B[j, k])\n"},
  };
  loops::ScheduleOverrides kc64;
  kc64.kc = 64;
  for (const SemanticsCase& c : cases) {
    DYNAMIC_SECTION(c.name) {
      checkTiledMatchesUntiled(c, {{"rule", {}}, {"kc = 64", kc64}}, 5, m, "32 k steps per tdpbf16ps");
    }
  }
  // A not contiguous in k (A^T B): packed pair by pair, on the same tiles; a schedule file's
  // register tile asks for the vdpbf16ps micro-kernel.
  checkTiledMatchesUntiled({"bf16 A^T B", "input A : bf16[67, 17]\ninput B : bf16[67, 37]\noutput C[i, j] = sum(k: A[k, i] * B[k, j])\n"},
                           {{"rule", {}}, {"kc = 64", kc64}}, 5, m, "32 k steps per tdpbf16ps");
  loops::ScheduleOverrides mr6;
  mr6.mr = 6;
  checkTiledMatchesUntiled(cases[0], {{"mr = 6", mr6}}, 5, m, "two k steps per vdpbf16ps");
  // Blocks in whole tiles: k blocks of 32 steps, row blocks of 32 rows.
  Lowered big = lower("bf16 2048", "input A : bf16[2048, 2048]\ninput B : bf16[2048, 2048]\noutput C[i, j] = sum(k: A[i, k] * B[k, j])\n");
  loops::ScheduleOverrides kc100;
  kc100.kc = 100;
  REQUIRE(loops::tileContractions(big.loops, m, kc100) == 1);
  const std::string printed = loops::printLoopProgram(big.loops);
  CHECK(printed.find("k blocks of 128") != std::string::npos);
  CHECK(printed.find("tile 32x32") != std::string::npos);
  CHECK(loops::verifyLoopProgram(big.loops).empty());
}

// Convolutions (implicit GEMM): prime sizes, so that rows (output channels, tiles of 6), pixels
// (panels of 16, blocks of 32 or 128) and the flattened reduction (k blocks) all have tails.
const char* const kConvPadded =
    "input I : f32[2, 5, 7, 11]\ninput Wt : f32[13, 5, 3, 3]\ninput scale : f32[13]\ninput bias : f32[13]\n"
    "output O[n, k, y < 7, x < 11] = sum(c, r, s: I[n, c, y + r - 1, x + s - 1] * Wt[k, c, r, s]) * scale[k] + bias[k]\n";

const char* const kConvStride2 =
    "input I : f32[2, 5, 13, 11]\ninput Wt : f32[7, 5, 3, 3]\n"
    "output O[n, k, y < 7, x < 6] = sum(c, r, s: I[n, c, 2 * y + r - 1, 2 * x + s - 1] * Wt[k, c, r, s])\n";

const SemanticsCase kConvCases[] = {
    {"conv 3x3 pad 1, scale/bias, N=2, C=5, K=13, 7x11", kConvPadded},
    {"conv 3x3 pad 1, N=1, C=31, K=7, 13x3 (k blocks)",
     "input I : f32[1, 31, 13, 3]\ninput Wt : f32[7, 31, 3, 3]\n"
     "output O[n, k, y < 13, x < 3] = sum(c, r, s: I[n, c, y + r - 1, x + s - 1] * Wt[k, c, r, s])\n"},
    {"conv 3x3 without padding (input wider than the output)",
     "input I : f32[2, 3, 9, 19]\ninput Wt : f32[5, 3, 3, 3]\n"
     "output O[n, k, y < 7, x < 17] = sum(c, r, s: I[n, c, y + r, x + s] * Wt[k, c, r, s])\n"},
    {"conv 5x2, padding on one side", "input I : f32[1, 3, 5, 17]\ninput Wt : f32[11, 3, 5, 2]\n"
                                       "output O[n, k, y < 5, x < 17] = sum(c, r, s: I[n, c, y + r - 2, x + s] * Wt[k, c, r, s])\n"},
    {"conv 1x1", "input I : f32[3, 7, 5, 3]\ninput P : f32[11, 7]\noutput O[n, k, y < 5, x < 3] = sum(c: P[k, c] * I[n, c, y, x])\n"},
    // Strided: the input is gathered by its pack (2 * x + s - 1 is not contiguous in x).
    {"conv 3x3 stride 2 pad 1, N=2, C=5, K=7, 13x11 -> 7x6", kConvStride2},
    {"conv 3x3 stride 2 pad 1, C=31 (k blocks), 9x5 -> 5x3",
     "input I : f32[1, 31, 9, 5]\ninput Wt : f32[7, 31, 3, 3]\n"
     "output O[n, k, y < 5, x < 3] = sum(c, r, s: I[n, c, 2 * y + r - 1, 2 * x + s - 1] * Wt[k, c, r, s])\n"},
    {"bf16 conv 3x3 pad 1, C=31 (k blocks, partial sums in scratch), 5x7",
     "input I : bf16[2, 31, 5, 7]\ninput Wt : bf16[7, 31, 3, 3]\n"
     "output O[n, k, y < 5, x < 7] = sum(c, r, s: I[n, c, y + r - 1, x + s - 1] * Wt[k, c, r, s])\n"},
    {"conv 2x2 stride 2 without padding", "input I : f32[2, 3, 9, 17]\ninput Wt : f32[5, 3, 2, 2]\n"
                                           "output O[n, k, y < 4, x < 8] = sum(c, r, s: I[n, c, 2 * y + r, 2 * x + s] * Wt[k, c, r, s])\n"},
};

std::vector<std::pair<std::string, loops::ScheduleOverrides>> convSchedules() {
  std::vector<std::pair<std::string, loops::ScheduleOverrides>> out;
  for (auto& [what, o] : schedules())
    if (o.pack != false && o.packA != false) out.push_back({what, o});  // implicit GEMM needs both packs
  loops::ScheduleOverrides narrow;
  narrow.kc = 16;
  narrow.nc = 32;
  out.push_back({"kc 16, 32 pixels per block", narrow});
  loops::ScheduleOverrides im2col;
  im2col.conv = loops::ConvMode::Im2col;
  out.push_back({"--conv=im2col: the whole patch matrix first", im2col});
  loops::ScheduleOverrides panels = narrow;
  panels.packPanels = true;
  out.push_back({"pack_panels = on: the input packed panel by panel", panels});
  return out;
}

TEST_CASE("tile: convolutions as implicit GEMM compute what the untiled nests compute", "[passes][tile][conv]") {
  for (const SemanticsCase& c : kConvCases) {
    DYNAMIC_SECTION(c.name) {
      checkTiledMatchesUntiled(c, convSchedules(), 11);
    }
  }
}

TEST_CASE("tile: bf16 convolutions on a CPU with vdpbf16ps: padded and strided packs in pairs, k blocks of even length", "[passes][tile][conv]") {
  const loops::MachineInfo m = bf16DotMachine();
  const SemanticsCase cases[] = {
      {"bf16 conv 3x3 pad 1, C=31 (k blocks), 5x7",
       "input I : bf16[2, 31, 5, 7]\ninput Wt : bf16[7, 31, 3, 3]\n"
       "output O[n, k, y < 5, x < 7] = sum(c, r, s: I[n, c, y + r - 1, x + s - 1] * Wt[k, c, r, s])\n"},
      {"bf16 conv 3x3 stride 2 pad 1, C=5 (gathered pairs)",
       "input I : bf16[2, 5, 13, 11]\ninput Wt : bf16[7, 5, 3, 3]\n"
       "output O[n, k, y < 7, x < 6] = sum(c, r, s: I[n, c, 2 * y + r - 1, 2 * x + s - 1] * Wt[k, c, r, s])\n"},
  };
  std::vector<std::pair<std::string, loops::ScheduleOverrides>> scheds;
  // Pairs need windows of even length; --conv=im2col keeps widening packs.
  for (auto& [what, o] : convSchedules())
    if ((!o.kc || *o.kc % 2 == 0) && o.conv != loops::ConvMode::Im2col) scheds.push_back({what, o});
  for (const SemanticsCase& c : cases) {
    DYNAMIC_SECTION(c.name) {
      checkTiledMatchesUntiled(c, scheds, 13, m, "two k steps per vdpbf16ps");
    }
  }
  // The rule's k blocks are evened to an even length: 31 x 9 = 279 terms.
  Lowered l = lower("conv", cases[0].text);
  loops::LoopProgram tiled = l.loops;
  REQUIRE(loops::tileContractions(tiled, m, {}) == 1);
  const std::string printed = loops::printLoopProgram(tiled);
  INFO(printed);
  CHECK(printed.find("; bf16 pairs along k") != std::string::npos);
}

TEST_CASE("tile: bf16 convolutions on a CPU with AMX tiles: weights packed whole in tile order, windows at whole tiles", "[passes][tile][conv][amx]") {
  // The weights are packed whole, once, in A tiles: a k block must start at a whole tile of them
  // (k blocks of multiples of 32 steps); the input's padded, possibly strided pack pads each
  // window with zero pairs to whole groups. 130 x 9 = 1170 terms: two k blocks (of at least 1024
  // steps, evened out to 608 and 562: 19 and 18 groups, the last one padded).
  loops::MachineInfo m = bf16DotMachine();
  m.amxBf16 = true;
  const SemanticsCase cases[] = {
      {"bf16 conv 3x3 pad 1, C=31, 5x7",
       "input I : bf16[2, 31, 5, 7]\ninput Wt : bf16[7, 31, 3, 3]\n"
       "output O[n, k, y < 5, x < 7] = sum(c, r, s: I[n, c, y + r - 1, x + s - 1] * Wt[k, c, r, s])\n"},
      {"bf16 conv 3x3 stride 2 pad 1, C=5 (gathered pairs)",
       "input I : bf16[2, 5, 13, 11]\ninput Wt : bf16[7, 5, 3, 3]\n"
       "output O[n, k, y < 7, x < 6] = sum(c, r, s: I[n, c, 2 * y + r - 1, 2 * x + s - 1] * Wt[k, c, r, s])\n"},
      {"bf16 conv 3x3 pad 1, C=130 (two k blocks), 4x5",
       "input I : bf16[1, 130, 4, 5]\ninput Wt : bf16[3, 130, 3, 3]\n"
       "output O[n, k, y < 4, x < 5] = sum(c, r, s: I[n, c, y + r - 1, x + s - 1] * Wt[k, c, r, s])\n"},
  };
  loops::ScheduleOverrides kc40;
  kc40.kc = 40;  // rounded up to 64: whole tiles of the weights
  for (const SemanticsCase& c : cases) {
    DYNAMIC_SECTION(c.name) {
      checkTiledMatchesUntiled(c, {{"rule", {}}, {"kc = 40", kc40}}, 13, m, "32 k steps per tdpbf16ps");
    }
  }
  Lowered l = lower("conv", cases[2].text);
  loops::LoopProgram tiled = l.loops;
  REQUIRE(loops::tileContractions(tiled, m, {}) == 1);
  const std::string printed = loops::printLoopProgram(tiled);
  INFO(printed);
  CHECK(printed.find("k blocks evened out to 2 x 608") != std::string::npos);
  loops::LoopProgram rounded = l.loops;
  REQUIRE(loops::tileContractions(rounded, m, kc40) == 1);
  CHECK(loops::printLoopProgram(rounded).find("k blocks of 64: whole AMX tiles of the weights") != std::string::npos);
}

TEST_CASE("tile: with 16-float vectors the implicit GEMM packs its input panel by panel, before the panel's tiles", "[passes][tile][conv]") {
  // The panel (nr pixels by the k window) stays in L1 for the tiles of all the output channels
  // that read it; the block's pixel loop, and so the fused pool's binding, is unchanged.
  Lowered l = lower("56x56", "input I : f32[1, 64, 56, 56]\ninput Wt : f32[64, 64, 3, 3]\n"
                             "output O[n, k, y < 56, x < 56] = sum(c, r, s: I[n, c, y + r - 1, x + s - 1] * Wt[k, c, r, s])\n");
  loops::MachineInfo avx512 = bf16DotMachine();
  avx512.bf16Dot = false;
  loops::LoopProgram tiled = l.loops;
  REQUIRE(loops::tileContractions(tiled, avx512, {}) == 1);
  std::string text = loops::printLoopProgram(tiled);
  INFO(text);
  CHECK(text.find("input packed panel by panel, just before its tiles") != std::string::npos);
  const size_t panels = text.find("for yx_t <"), pack = text.find("pack s1["), tiles = text.find("for k_t <");
  REQUIRE(panels != std::string::npos);
  REQUIRE(pack != std::string::npos);
  CHECK(panels < pack);
  CHECK(pack < tiles);
  CHECK(text.find("[yx < 32]") != std::string::npos);  // one panel's columns, no panel split
  // pack_panels = off keeps the block's pack before the panel loop; AVX2 code keeps it too.
  loops::ScheduleOverrides off;
  off.packPanels = false;
  for (const auto& [what, machine, overrides] : {std::tuple{"pack_panels = off", avx512, off}, std::tuple{"AVX2", avx2Machine(), loops::ScheduleOverrides{}}}) {
    INFO(what);
    loops::LoopProgram blocks = l.loops;
    REQUIRE(loops::tileContractions(blocks, machine, overrides) == 1);
    text = loops::printLoopProgram(blocks);
    CHECK(text.find("panel by panel") == std::string::npos);
    CHECK(text.find("pack s1[") < text.find("for yx_t <"));
  }
}

TEST_CASE("tile: input_in_place = on leaves the implicit GEMM's input unpacked, its padding on the tile", "[passes][tile][conv]") {
  const char* conv = "input I : DT[1, 16, 12, 12]\ninput Wt : DT[16, 16, 3, 3]\n"
                     "output O[n, k, y < 12, x < 12] = sum(c, r, s: I[n, c, y + r - 1, x + s - 1] * Wt[k, c, r, s])\n";
  auto program = [&](const std::string& dtype) {
    std::string text = conv;
    for (size_t at; (at = text.find("DT")) != std::string::npos;) text.replace(at, 2, dtype);
    return text;
  };
  loops::ScheduleOverrides inPlace;
  inPlace.inputInPlace = true;
  for (const auto& [what, machine] : {std::pair{"AVX-512", bf16DotMachine()}, std::pair{"AVX2", avx2Machine()}}) {
    INFO(what);
    loops::MachineInfo m = machine;
    m.bf16Dot = false;
    Lowered l = lower("conv", program("f32"));
    REQUIRE(loops::tileContractions(l.loops, m, inPlace) == 1);
    const std::string text = loops::printLoopProgram(l.loops);
    INFO(text);
    CHECK(text.find("input read in place (input_in_place = on)") != std::string::npos);
    CHECK(text.find("input packed with its padding as zeros") == std::string::npos);
    // The weights' pack alone; the tile reads the input under its padding conditions.
    CHECK(text.find("pack s1[") == std::string::npos);
    CHECK(text.find("* (if 0 <= ") != std::string::npos);
    int tiles = 0;
    loops::forEachStmt(l.loops.kernels[0].body, [&](const loops::Stmt& st) {
      if (const auto* t = st.getIf<loops::Tile>()) {
        ++tiles;
        CHECK(t->colScratch < 0);
        CHECK(t->colPadding.size() == 2);
      }
    });
    CHECK(tiles == 1);
    CHECK(loops::verifyLoopProgram(l.loops).empty());
  }
  // An f16 input is still packed: the pack widens it once per panel.
  Lowered half = lower("conv f16", program("f16"));
  REQUIRE(loops::tileContractions(half.loops, avx2Machine(), inPlace) == 1);
  const std::string text = loops::printLoopProgram(half.loops);
  CHECK(text.find("input read in place") == std::string::npos);
  CHECK(text.find("pack s1[") != std::string::npos);
}

TEST_CASE("tile: pixel blocks that are the parallel loop come in a multiple of the threads", "[passes][tile][conv]") {
  // 98 panels of 32 pixels: 7 blocks of 14 would leave one of 2 threads a block alone; 14 blocks
  // of 7 pad no more panels. One thread keeps 7; a batch loop longer than the blocks is the
  // parallel loop instead, and its blocks stay as they are. (Blocks of the input's pack, as AVX2
  // code has them: packed panel by panel, the blocks are bounded by L2 instead, next test.)
  const char* one = "input I : f32[1, 64, 56, 56]\ninput Wt : f32[64, 64, 3, 3]\n"
                    "output O[n, k, y < 56, x < 56] = sum(c, r, s: I[n, c, y + r - 1, x + s - 1] * Wt[k, c, r, s])\n";
  loops::MachineInfo avx512 = bf16DotMachine();
  avx512.bf16Dot = false;
  avx512.l1Bytes = 48 * 1024;  // as the Sapphire Rapids class host: k blocks of 192, blocks of 448 pixels
  loops::ScheduleOverrides blockPack;
  blockPack.packPanels = false;
  for (int threads : {1, 2, 3}) {
    INFO(threads << " threads");
    avx512.threads = threads;
    Lowered l = lower("56x56", one);
    REQUIRE(loops::tileContractions(l.loops, avx512, blockPack) == 1);
    const std::string text = loops::printLoopProgram(l.loops);
    INFO(text);
    if (threads == 2) {
      CHECK(text.find("14 pixel blocks rather than 7, a multiple of the 2 threads") != std::string::npos);
      CHECK(text.find("for yx_c < 14 parallel") != std::string::npos);
    } else if (threads == 3) {
      // 9 blocks of 11 panels would pad one panel (99), 12 of 9 ten: the 7 stay.
      CHECK(text.find("a multiple of the") == std::string::npos);
      CHECK(text.find("for yx_c < 7 parallel") != std::string::npos);
    } else {
      CHECK(text.find("a multiple of the") == std::string::npos);
      CHECK(text.find("for yx_c < 7 parallel") != std::string::npos);
    }
  }
  avx512.threads = 2;
  Lowered batch = lower("8 images", "input I : f32[8, 64, 56, 56]\ninput Wt : f32[64, 64, 3, 3]\n"
                                    "output O[n, k, y < 56, x < 56] = sum(c, r, s: I[n, c, y + r - 1, x + s - 1] * Wt[k, c, r, s])\n");
  REQUIRE(loops::tileContractions(batch.loops, avx512, blockPack) == 1);
  const std::string text = loops::printLoopProgram(batch.loops);
  INFO(text);
  CHECK(text.find("a multiple of the") == std::string::npos);
  CHECK(text.find("for n < 8 parallel") != std::string::npos);
}

TEST_CASE("tile: an input packed panel by panel leaves pixel blocks whose partial sums fit a quarter of L2", "[passes][tile][conv]") {
  // No block of the input is packed, so the pixel block holds as many panels as its partial sums
  // (all output channels) allow in L2 / 4 of 2 MiB: 128 x 800 floats, one block of 25 panels per
  // image of 784 pixels (not 2 of 13); 64 channels at 56 x 56: up to 64 panels, evened out to 2
  // blocks of 49 (1568 pixels, 28 image rows). Not beside a bf16 output (its partial sums would
  // be stack scratch), nor with pack_panels = off or a schedule's nc.
  loops::MachineInfo avx512 = bf16DotMachine();
  avx512.bf16Dot = false;
  avx512.l1Bytes = 48 * 1024;
  avx512.l2Bytes = 2 << 20;
  avx512.threads = 2;
  struct Case {
    const char* name;
    std::string text;
    loops::ScheduleOverrides overrides;
    std::vector<std::string> expected, absent;
  };
  const std::string conv28 = "input I : f32[8, 64, 28, 28]\ninput Wt : f32[128, 64, 3, 3]\n"
                             "output O[n, k, y < 28, x < 28] = sum(c, r, s: I[n, c, y + r - 1, x + s - 1] * Wt[k, c, r, s])\n";
  const std::string conv56 = "input I : f32[1, 64, 56, 56]\ninput Wt : f32[64, 64, 3, 3]\n"
                             "output O[n, k, y < 56, x < 56] = sum(c, r, s: I[n, c, y + r - 1, x + s - 1] * Wt[k, c, r, s])\n";
  const std::string bf16Out = "input I : bf16[8, 64, 28, 28]\ninput Wt : bf16[128, 64, 3, 3]\n"
                              "output O[n, k, y < 28, x < 28] = sum(c, r, s: I[n, c, y + r - 1, x + s - 1] * Wt[k, c, r, s])\n";
  loops::ScheduleOverrides off, nc;
  off.packPanels = false;
  nc.nc = 416;
  const std::vector<Case> cases = {
      {"28x28", conv28, {}, {"pixel blocks of up to 800 (their partial sums, 128 x 800 floats, <= L2/4", "yx = (800 * yx_c + 32 * yx_t)"}, {}},
      {"56x56", conv56, {}, {"pixel blocks of up to 2048", "pixel blocks evened out to 2 x 1568", "for yx_c < 2 parallel"}, {}},
      {"pack_panels = off", conv28, off, {}, {"pixel blocks of up to"}},
      {"nc = 416", conv28, nc, {"yx = (416 * yx_c + 32 * yx_t)"}, {"pixel blocks of up to"}},
      {"bf16 output", bf16Out, {}, {"input packed panel by panel"}, {"pixel blocks of up to"}},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    Lowered l = lower(c.name, c.text);
    REQUIRE(loops::tileContractions(l.loops, avx512, c.overrides) == 1);
    const std::string text = loops::printLoopProgram(l.loops);
    INFO(text);
    for (const std::string& e : c.expected) CHECK(text.find(e) != std::string::npos);
    for (const std::string& a : c.absent) CHECK(text.find(a) == std::string::npos);
  }
}

TEST_CASE("tile: the implicit GEMM pads as few rows and pixel panels as it can", "[passes][tile][conv]") {
  // The bench's first shape: 64 output channels are 16 tiles of 4 rows (not 11 of 6 = 66 or 13
  // of 5 = 65), 3136 pixels 28 blocks of 112 (not 25 of 128 = 3200: 4 panels of padding).
  Lowered l = lower("56x56", "input I : f32[1, 64, 56, 56]\ninput Wt : f32[64, 64, 3, 3]\n"
                             "output O[n, k, y < 56, x < 56] = sum(c, r, s: I[n, c, y + r - 1, x + s - 1] * Wt[k, c, r, s])\n");
  loops::LoopProgram tiled = l.loops;
  REQUIRE(loops::tileContractions(tiled, avx2Machine(), {}) == 1);
  const std::string text = loops::printLoopProgram(tiled);
  CHECK(text.find("tiles of 4 rows pad fewer rows (64 for 64)") != std::string::npos);
  CHECK(text.find("pixel blocks evened out to 28 x 112") != std::string::npos);
  CHECK(text.find("tile 4x16: k = 4 * k_t + 0..3 (< 64)") != std::string::npos);
  // 13 channels keep tiles of 5 (15 rows; 4 would pad to 16), and a schedule's mr is kept.
  Lowered small = lower("13", "input I : f32[1, 3, 9, 9]\ninput Wt : f32[13, 3, 3, 3]\n"
                              "output O[n, k, y < 9, x < 9] = sum(c, r, s: I[n, c, y + r - 1, x + s - 1] * Wt[k, c, r, s])\n");
  loops::LoopProgram five = small.loops;
  REQUIRE(loops::tileContractions(five, avx2Machine(), {}) == 1);
  CHECK(loops::printLoopProgram(five).find("tiles of 5 rows pad fewer rows (15 for 13)") != std::string::npos);
  loops::ScheduleOverrides six;
  six.mr = 6;
  loops::LoopProgram fixed = small.loops;
  REQUIRE(loops::tileContractions(fixed, avx2Machine(), six) == 1);
  CHECK(loops::printLoopProgram(fixed).find("pad fewer rows") == std::string::npos);
  CHECK(loops::printLoopProgram(fixed).find("tile 6x16") != std::string::npos);
}

// Every buffer of `lp` (all f32) after running its LLVM code (-O3, one thread) on the inputs of
// `seed`, as doubles.
std::vector<std::vector<double>> runLlvm(const Lowered& l, const loops::LoopProgram& lp, uint64_t seed) {
  std::vector<RefTensor> inputs = randomInputs(l.graph, seed, 0);
  std::vector<Tensor> tensors;
  std::vector<void*> ptrs;
  for (const loops::Buffer& b : lp.buffers) {
    REQUIRE(b.dtype == DType::F32);
    tensors.push_back(makeTensor(ElemType::F32, b.shape));
  }
  for (size_t i = 0; i < l.graph.inputs.size(); ++i) {
    auto* data = reinterpret_cast<float*>(tensors[l.graph.inputs[i]].data.data());
    for (size_t e = 0; e < inputs[i].data.size(); ++e) data[e] = static_cast<float>(inputs[i].data[e]);
  }
  for (Tensor& t : tensors) ptrs.push_back(t.data.data());
  auto context = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> module = generateLLVM(lp, *context, CodeGenOptions{});
  REQUIRE(module);
  std::unique_ptr<CpuExecutable> exe = CpuExecutable::load(std::move(context), std::move(module), lp, 3);
  ThreadPool pool(1);
  exe->run(ptrs.data(), pool);
  std::vector<std::vector<double>> out;
  for (size_t b = 0; b < tensors.size(); ++b) {
    const auto* data = reinterpret_cast<const float*>(tensors[b].data.data());
    out.emplace_back(data, data + lp.buffers[b].numElements());
  }
  return out;
}

// The LLVM code generator reads a column operand that is not contiguous in j (B[j, k], B[k, 2 j])
// with gathers, in the pack and in a tile that reads it in place. The pass always packs such an
// operand, so the in-place tile is made here by taking the column pack out of the pass's nest;
// both must give the bits of the packed tile (each element sums in k order with the same fused
// multiply-adds), and agree with the interpreter up to f32 rounding.
TEST_CASE("tile: LLVM gathers a column operand that is not contiguous in j, packed or in place", "[passes][tile][llvm]") {
  const SemanticsCase programs[] = {
      {"A B^T 19x37x23", "input A : f32[19, 23]\ninput B : f32[37, 23]\noutput C[i, j] = sum(k: A[i, k] * B[j, k])\n"},
      {"A B^T with k blocks 7x21x45",
       "input A : f32[7, 45]\ninput B : f32[21, 45]\noutput C[i, j] = sum(k: A[i, k] * B[j, k])\n"},
      {"B at a stride of 2 in j", "input A : f32[11, 23]\ninput B : f32[23, 75]\noutput C[i, j < 37] = sum(k: A[i, k] * B[k, 2 * j])\n"},
  };
  for (const SemanticsCase& c : programs) {
    DYNAMIC_SECTION(c.name) {
      Lowered l = lower(c.name, c.text);
      std::vector<std::vector<double>> reference = run(l, l.loops, 5);
      loops::ScheduleOverrides o;
      o.kc = 16;  // k blocks where K > 16: partial sums kept in C between blocks
      loops::LoopProgram packed = l.loops;
      REQUIRE(loops::tileContractions(packed, avx2Machine(), o) == 1);
      loops::LoopProgram inPlace = packed;
      int removed = 0;
      loops::rewrite(inPlace.kernels[0].body, [&](loops::Stmt& st) -> std::optional<loops::Block> {
        if (auto* pack = st.getIf<loops::Pack>(); pack && pack->side == loops::PackSide::Columns) {
          ++removed;
          return loops::Block{};
        }
        if (auto* tile = st.getIf<loops::Tile>()) tile->colScratch = -1;
        return std::nullopt;
      });
      REQUIRE(removed == 1);
      INFO(loops::printLoopProgram(inPlace));
      REQUIRE(loops::verifyLoopProgram(inPlace).empty());
      std::vector<std::vector<double>> fromPack = runLlvm(l, packed, 5);
      std::vector<std::vector<double>> fromPlace = runLlvm(l, inPlace, 5);
      for (int id : l.graph.outputs) {
        CHECK(fromPlace[id] == fromPack[id]);
        double worst = 0;
        for (size_t e = 0; e < reference[id].size(); ++e) worst = std::max(worst, std::abs(fromPack[id][e] - reference[id][e]));
        CHECK(worst < 1e-3);  // sums of at most 45 products of values in [-2, 2)
      }
    }
  }
}

TEST_CASE("tile: the schedule rule reads the machine", "[passes][tile]") {
  loops::TileSchedule s = loops::chooseTileSchedule(avx2Machine(), 1024, 1024, 1024, {});
  CHECK(s.mr == 6);
  CHECK(s.nr == 16);
  CHECK(s.kc == 512);     // 512 x 16 floats = 32 KiB = L1
  // 256 KiB / 2 KiB = 128 rows, 126 in whole tiles: 9 blocks, 12 for the 4 threads, evened out.
  CHECK(s.mc == 90);
  // Rows outer would pack B 12 times (4 + 12 x 4 MiB); columns outer packs A once per column
  // block of 256 (one per thread of 4: 4 + 4 x 4 MiB).
  CHECK(s.columnsOuter);
  CHECK(s.nc == 256);
  CHECK(s.explanation.find("columns outer: B packed once, A 4x (20.0 MiB copied; rows outer 52.0)") != std::string::npos);
  // One thread: 9 blocks of 114.
  loops::MachineInfo oneThread = avx2Machine();
  oneThread.threads = 1;
  CHECK(loops::chooseTileSchedule(oneThread, 1024, 1024, 1024, {}).mc == 114);
  CHECK(s.explanation.find("B panel 512x16 = 32 KiB <= L1 (32 KiB)") != std::string::npos);
  // The implicit GEMM's B panel gets half of L1, and no k blocks when K fits.
  loops::TileSchedule conv = loops::chooseTileSchedule(avx2Machine(), 64, 3136, 576, {}, true, false);
  CHECK(conv.kc == 256);
  CHECK(conv.explanation.find("B panel 256x16 = 16 KiB <= L1/2 (16 KiB)") != std::string::npos);
  CHECK(loops::chooseTileSchedule(avx2Machine(), 64, 3136, 36, {}, true, false).kc == 0);
  CHECK(s.pack);
  CHECK(s.packA);
  CHECK(s.explanation.find("C tile 6x16 = 12 accumulators of 8 floats") != std::string::npos);

  loops::MachineInfo avx512 = avx2Machine();
  avx512.vectorFloats = 16;
  avx512.vectorRegisters = 32;
  loops::TileSchedule w = loops::chooseTileSchedule(avx512, 1024, 1024, 1024, {});
  // 4 column vectors x 6 rows: 24 accumulators + 4 + 1 of 32 registers, 10 loads per 24 FMAs.
  CHECK(w.nr == 64);
  CHECK(w.mr == 6);
  CHECK(w.ku == 1);
  // 128 x 64 floats would fill L1: the wide panel streams from L2 in k blocks of 512 (128 KiB).
  CHECK(w.kc == 512);
  CHECK(w.explanation.find("B panel 512x64 = 128 KiB <= a quarter of L2") != std::string::npos);
  CHECK(w.explanation.find("read from L2: a panel of 4 vectors would keep k blocks short in L1") != std::string::npos);
  CHECK(w.explanation.find("C tile 6x64 = 24 accumulators of 16 floats (+4 column vectors +1 broadcast = 29 of 32 registers, "
                           "10 loads per 24 FMAs, >= 8 in flight (FMA latency 4 x 2 pipes)); k unrolled 1x") != std::string::npos);
  // Two vectors where 6x64 would pad too much (256 columns: none; 97 x 131: 18 % more than 8x32),
  // and always in the implicit GEMM (its pixel blocks hold whole pooled rows).
  CHECK(loops::chooseTileSchedule(avx512, 256, 256, 256, {}).nr == 64);
  loops::TileSchedule odd = loops::chooseTileSchedule(avx512, 97, 131, 61, {});
  CHECK(odd.nr == 32);
  CHECK(odd.mr == 8);
  CHECK(odd.ku == 2);
  CHECK(odd.explanation.find("6x64 would pad 97x131 to 102x192") != std::string::npos);
  CHECK(loops::chooseTileSchedule(avx512, 64, 3136, 576, {}, true, false).nr == 32);
  // AVX2 keeps 6x16 with k unrolled 2x (12 FMAs per k step); an explicit ku wins.
  CHECK(loops::chooseTileSchedule(avx2Machine(), 1024, 1024, 1024, {}).ku == 2);
  loops::ScheduleOverrides ku4;
  ku4.ku = 4;
  CHECK(loops::chooseTileSchedule(avx2Machine(), 1024, 1024, 1024, ku4).ku == 4);
  // The register tile alone; with v fixed at 2 on AVX-512, 8 rows (the cap) of 14 that fit.
  CHECK(loops::chooseRegisterTile(avx512, 2).mr == 8);
  loops::RegisterTile rt = loops::chooseRegisterTile(avx2Machine());
  CHECK(rt.mr == 6);
  CHECK(rt.nr == 16);

  // No k blocks when the output cannot keep partial sums: A block and B panel share L2.
  loops::TileSchedule noK = loops::chooseTileSchedule(avx2Machine(), 1024, 1024, 1024, {}, false);
  CHECK(noK.kc == 0);
  CHECK(noK.mc == 66);  // (384 KiB - 64 KiB) / 4 KiB = 80 rows, 78 in whole tiles: 14 blocks, 16 for 4 threads
  CHECK(noK.explanation.find("the output cannot hold partial sums") != std::string::npos);

  // Small problems: no k blocks when K fits, no more rows per block than C has.
  loops::TileSchedule small = loops::chooseTileSchedule(avx2Machine(), 10, 20, 30, {});
  CHECK(small.kc == 0);
  // K fits, but all of A does not fit L2 with a B panel: one k block, so that B is packed once.
  loops::TileSchedule fits = loops::chooseTileSchedule(avx2Machine(), 512, 512, 512, {});
  CHECK(fits.kc == 512);
  CHECK(loops::chooseTileSchedule(avx2Machine(), 256, 256, 256, {}).kc == 0);  // 256 rows + a panel fit
  CHECK(small.mc == 12);  // M < 4 mr: one block of 2 tiles
  CHECK(loops::chooseTileSchedule(avx2Machine(), 97, 20, 30, {}).mc == 54);    // 2 blocks (of 66), evened out
  CHECK(loops::chooseTileSchedule(avx2Machine(), 1000, 20, 30, {}).mc == 252);  // 4 blocks

  // Row blocks are shared out among the threads the code runs on, but blocks of at least 64 rows;
  // one thread gets one block as far as L2 allows.
  loops::MachineInfo one = avx2Machine(), two = avx2Machine();
  one.threads = 1;
  two.threads = 2;
  CHECK(loops::chooseTileSchedule(one, 96, 4096, 4096, {}).mc == 96);    // one block (A block 96x512)
  CHECK(loops::chooseTileSchedule(one, 128, 4096, 4096, {}).mc == 66);   // 126 rows fit L2/2: two blocks, evened out
  CHECK(loops::chooseTileSchedule(two, 192, 4096, 4096, {}).mc == 96);   // two blocks, one per thread
  CHECK(loops::chooseTileSchedule(avx2Machine(), 128, 4096, 4096, {}).mc == 66);  // 4 threads: blocks of at least 64 rows
  CHECK(loops::chooseTileSchedule(one, 1024, 1024, 1024, {}).mc == 114);  // L2 decides
  // The loop order: one thread at 2048^3 packs B once and A twice (B blocks of 2 MiB, 1024
  // columns) instead of B 17 times; M = 96, N = K = 4096 (one row block) packs B once either way.
  loops::TileSchedule big = loops::chooseTileSchedule(one, 2048, 2048, 2048, {});
  CHECK(big.columnsOuter);
  CHECK(big.nc == 1024);
  CHECK(big.explanation.find("columns outer: B packed once, A 2x (48.0 MiB copied; rows outer 288.0)") != std::string::npos);
  CHECK_FALSE(loops::chooseTileSchedule(one, 96, 4096, 4096, {}).columnsOuter);
  loops::ScheduleOverrides forced;
  forced.columnsOuter = true;
  CHECK(loops::chooseTileSchedule(one, 128, 4096, 4096, forced).columnsOuter);
  CHECK(loops::chooseTileSchedule(one, 128, 4096, 4096, {}).explanation.find("; 1 thread") != std::string::npos);

  // Overrides win; nr rounds up to whole vectors, mc down to whole tiles.
  loops::ScheduleOverrides o;
  o.mr = 4;
  o.nr = 20;
  o.mc = 30;
  o.kc = 64;
  o.pack = false;
  loops::TileSchedule f = loops::chooseTileSchedule(avx2Machine(), 1024, 1024, 1024, o);
  CHECK(f.mr == 4);
  CHECK(f.nr == 24);
  CHECK(f.mc == 28);
  CHECK(f.kc == 64);
  CHECK_FALSE(f.pack);
}

TEST_CASE("tile: schedule files", "[passes][tile]") {
  loops::ScheduleOverrides o;
  CHECK(loops::parseScheduleText("# teaching step 4\nmr = 6\n  nr=16  # two vectors\n\nmc = 48\nkc = 128\nnc = 64\npack = off\npack_a = on\n"
                                 "tile = on\n",
                                 o) == "");
  CHECK(o.mr == 6);
  CHECK(o.nr == 16);
  CHECK(o.mc == 48);
  CHECK(o.kc == 128);
  CHECK(o.nc == 64);
  CHECK(o.pack == false);
  CHECK(o.packA == true);
  CHECK(o.tile == true);

  auto error = [](const std::string& text) {
    loops::ScheduleOverrides x;
    return loops::parseScheduleText(text, x);
  };
  CHECK(error("mr 6\n") == "line 1: expected 'key = value', got 'mr 6'");
  CHECK(error("\nmx = 6\n") == "line 2: unknown key 'mx' (expected tile, mr, nr, ku, mc, kc, nc, pack, pack_a, pack_panels, input_in_place, order or conv)");
  loops::ScheduleOverrides unroll;
  CHECK(loops::parseScheduleText("ku = 4\n", unroll) == "");
  CHECK(unroll.ku == 4);
  CHECK(error("ku = 9\n") == "line 1: ku must be an integer in 1..8, got '9'");
  CHECK(error("order = diagonal\n") == "line 1: order must be rows or columns, got 'diagonal'");
  CHECK(error("conv = winograd\n") == "line 1: conv must be implicit, im2col or direct, got 'winograd'");
  loops::ScheduleOverrides cv;
  CHECK(loops::parseScheduleText("conv = im2col\n", cv) == "");
  CHECK(cv.conv == loops::ConvMode::Im2col);
  loops::ScheduleOverrides ord;
  CHECK(loops::parseScheduleText("order = columns\n", ord) == "");
  CHECK(ord.columnsOuter == true);
  CHECK(loops::parseScheduleText("order = rows\n", ord) == "");
  CHECK(ord.columnsOuter == false);
  CHECK(error("mr = 0\n") == "line 1: mr must be an integer in 1..16, got '0'");
  CHECK(error("nr = 65\n") == "line 1: nr must be an integer in 1..64, got '65'");
  CHECK(error("mc = x\n") == "line 1: mc must be an integer in 1..1048576, got 'x'");
  CHECK(error("pack = yes\n") == "line 1: pack must be on or off, got 'yes'");
  loops::ScheduleOverrides inPlace;
  CHECK(loops::parseScheduleText("input_in_place = on\npack_panels = off\n", inPlace) == "");
  CHECK(inPlace.inputInPlace == true);
  CHECK(inPlace.packPanels == false);
  CHECK(error("input_in_place = yes\n") == "line 1: input_in_place must be on or off, got 'yes'");
}

TEST_CASE("tile: the verifier checks packs and tiles", "[passes][tile]") {
  Lowered l = lower("verify", kMatmulOdd);
  loops::LoopProgram tiled = l.loops;
  REQUIRE(loops::tileContractions(tiled, avx2Machine(), {}) == 1);
  REQUIRE(loops::verifyLoopProgram(tiled).empty());

  auto problems = [](loops::LoopProgram p) {
    std::string all;
    for (const std::string& s : loops::verifyLoopProgram(p)) all += s + "\n";
    return all;
  };
  loops::LoopProgram small = tiled;
  small.kernels[0].scratchSizes[1] = 10;  // the B panel
  CHECK_THAT(problems(small), Catch::Contains("scratch s1 is too small"));
  loops::LoopProgram noScratch = tiled;
  noScratch.kernels[0].scratchSizes.clear();
  CHECK_THAT(problems(noScratch), Catch::Contains("unknown scratch"));
  // The tile binds i itself: an enclosing loop over i is a second binding.
  loops::LoopProgram twice = tiled;
  twice.kernels[0].body[0].as<loops::Loop>().var = 0;
  CHECK_THAT(problems(twice), Catch::Contains("bound twice"));

  Lowered conv = lower("verify conv", kConvPadded);
  loops::LoopProgram convTiled = conv.loops;
  REQUIRE(loops::tileContractions(convTiled, avx2Machine(), {}) == 1);
  REQUIRE(loops::verifyLoopProgram(convTiled).empty());
  loops::LoopProgram paddedRows = convTiled;
  paddedRows.kernels[0].body[0].as<loops::Pack>().padding.push_back({IndexExpr::makeConst(0), 1});  // the weights' pack
  CHECK_THAT(problems(paddedRows), Catch::Contains("row pack with padding conditions"));
  loops::LoopProgram shortWeights = convTiled;
  shortWeights.kernels[0].scratchSizes[0] = 45 * 6;  // one tile's rows of all k, not 18
  CHECK_THAT(problems(shortWeights), Catch::Contains("scratch s0 is too small"));
  // Padding conditions on a tile that reads a column pack (which holds the padding already).
  loops::LoopProgram paddedTile = convTiled;
  loops::forEachStmt(paddedTile.kernels[0].body, [](loops::Stmt& st) {
    if (auto* t = st.getIf<loops::Tile>()) t->colPadding.push_back({IndexExpr::makeConst(0), 1});
  });
  CHECK_THAT(problems(paddedTile), Catch::Contains("tile with a column pack and padding conditions of its own"));
}

}  // namespace
}  // namespace texc::passtest
