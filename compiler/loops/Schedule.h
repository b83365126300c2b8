// Tile schedules for contractions: the machine facts the rule reads, the rule itself, and the
// user's overrides (a schedule file, docs/scheduling.md).
//
// The rule, for a contraction C[i,j] = sum(k) A[i,k] * B[k,j] on a machine with W floats per
// vector register, R vector registers and FMA pipes P of latency L (chooseRegisterTile):
//   nr = v*W columns (v column vectors per row of the C tile) and mr rows, mr*v accumulators:
//        mr*v + v column vectors + 1 broadcast <= R - 1 (one spare for the compiler), mr <= 8,
//        v <= 4, mr*v >= L*P (every pipe has an independent sum in flight); of those, the tile
//        with the fewest loads per FMA ((mr + v) / (mr*v)), then the most accumulators:
//        AVX2 6x16 (12 accumulators, 8 loads per 12 FMAs), AVX-512 6x64 (24, 10 per 24). Two
//        vectors instead where the wider tile pads more than 5 % more work (N = 256 in 48s),
//        and in the implicit GEMM, whose pixel blocks hold whole pooled rows (fuse-into-tiles);
//   ku = k steps per iteration of the micro-kernel's loop: 2 below 24 FMAs per step, else 1, so
//        that the loop's counter, compare and branch take under 1/8 of the FMA pipes' slots,
//   kc = k block: the kc x nr block of B one column panel gives its tiles fills at most L1
//        (matmul; the A micro-panels streaming past evict some of it, which costs less than
//        the partial sums of C that twice the k blocks would store and reload: 2-3 % at
//        1024-2048) or half of L1 (implicit GEMM: 5 % faster there), where the mc/mr tiles of
//        the row block reuse it; no blocking when kc >= K (but one k block for a matmul whose
//        A rows and a B panel overflow 3/4 of L2: the blocked nest packs B once, the unblocked
//        one once per row block), or when the output cannot hold partial sums (not f32, or
//        read by the epilogue),
//   mc = rows per block: with k blocks, the A block (mc x kc) fills at most half of L2, so it
//        stays there while every column panel reuses it; without, the A block (mc x K) and the
//        B panel (K x nr) fill at most 3/4 of L2. A multiple of mr, and small enough for 4 row
//        blocks (work for 4 threads) when M >= 4 mr, unless that leaves fewer than 64 rows (a
//        block packs all of B again, and amortises that over its rows),
//   nc = columns per packed B block (with k blocks): the kc x nc block fills at most a quarter
//        of L2, so one pack serves nc/nr panels with long contiguous row reads (few TLB misses),
//   pack = on when the B panel (window x nr floats) fits in 1 MiB of stack,
//   pack_a = on when the A block (mc x window floats) does: one contiguous stream per tile
//        instead of mr rows whose stride may alias in L1.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace texc::loops {

// What the schedule rule needs to know about the machine the code is for: plain data, filled by
// the loop passes from the target CPU (compiler/passes/loops/MachineInfo.h), so that this layer
// knows nothing of LLVM's CPU tables.
struct MachineInfo {
  int vectorFloats = 8;       // f32 lanes of one vector register
  int vectorRegisters = 16;   // architectural vector registers
  int64_t l1Bytes = 32 * 1024;
  int64_t l2Bytes = 512 * 1024;
  int64_t l3Bytes = 32 * 1024 * 1024;  // last-level cache (stream-stores' threshold)
  // Fused multiply-add: latency in cycles and pipes per core. 4 and 2 on every x86 core texc
  // targets (Haswell to Sapphire Rapids, Zen 2 to 4; Intel's and AMD's optimization manuals).
  int fmaLatency = 4;
  int fmaPipes = 2;
  // AVX512-BF16's vdpbf16ps on 16-float vectors (Cooper Lake, Sapphire Rapids, Zen 4): bf16 x bf16
  // contractions use it, two k steps per instruction (TileContractions.cpp).
  bool bf16Dot = false;
  // AMX tiles with tdpbf16ps (Sapphire Rapids and later): 8 tile registers of 16 rows x 64 bytes;
  // bf16 x bf16 matmuls run on them, 32 k steps per instruction (TileContractions.cpp).
  bool amxBf16 = false;
  // A software prefetch fills L1 whatever its hint, as on AMD cores before Zen 4 (AMD's
  // optimization guides; Zen 4 is the first whose prefetcht1/t2 stop at L2). stream-stores then
  // asks for a row's successor only in the row's last pass, so that the next row does not push
  // out of L1 the row that later passes still read (StreamStores.h).
  bool prefetchFillsL1 = false;
  // A product whose result underflows takes a microcode assist (Intel cores; AMD's handle it at
  // full speed: on Zen 4 a softmax whose exponentials nearly all underflow ran no slower with
  // them). With AVX-512 the code generator then zeroes exp's lanes below its limit by masking
  // the last product off rather than letting it underflow (VectorMath.h, UnderflowZero).
  bool underflowAssist = true;
  int threads = 1;            // threads the compiled code will run on: row blocks to share out
  std::string source;         // where the figures came from, for the explanation
};

// How a convolution (a contraction over several variables, with padding) is computed:
// implicit GEMM (packed block by block from the input, the default), im2col (the whole patch
// matrix of an image packed first, then one GEMM over it), or direct (not tiled: the nest as
// lowered, fused with its pooling).
enum class ConvMode : uint8_t { Implicit, Im2col, Direct };
const char* convModeName(ConvMode m);
// "implicit", "im2col" or "direct"; false for anything else.
bool parseConvMode(const std::string& text, ConvMode& out);

// One loop transformation of a schedule file's `loops` line (docs/scheduling.md, "Loop
// transformations"); the functions of transforms/LoopTransforms.h apply them.
enum class LoopStepKind : uint8_t { Split, Reorder, Unroll, Parallel, Vectorize, RegisterBlock, Pack };
struct LoopStep {
  LoopStepKind kind = LoopStepKind::Split;
  std::vector<std::string> vars;  // the loops it names (none: `parallel off`, `pack A`)
  int64_t factor = 0;             // split and unroll (0: full unroll); register_block's columns
  int64_t rows = 0;               // register_block's rows
  char operand = 'B';             // pack: 'A' or 'B'
  bool on = true;                 // vectorize VAR [off]
  std::string text;               // as written, for messages
};

// `loops BUFFER: step; step; ...`: the steps for the kernel that writes BUFFER, in order.
struct LoopScheduleLine {
  int line = 0;          // in the schedule file
  std::string buffer;
  std::vector<LoopStep> steps;
};

// Settings a user may fix; unset ones come from the rule.
struct ScheduleOverrides {
  std::vector<LoopScheduleLine> loops;  // applied by the schedule-loops pass
  std::optional<bool> tile;  // off: contractions keep the untiled nest
  std::optional<int64_t> mr, nr, mc, kc, nc;
  std::optional<int64_t> ku;   // k steps per micro-kernel loop iteration
  std::optional<bool> pack;    // pack B panels
  std::optional<bool> packA;   // pack A blocks (key pack_a)
  std::optional<bool> packPanels;  // implicit GEMM: pack the input panel by panel (key pack_panels)
  std::optional<bool> inputInPlace;  // implicit GEMM: the micro-kernel reads the input itself (key input_in_place)
  std::optional<bool> columnsOuter;  // key order: columns (true) or rows (false)
  std::optional<ConvMode> conv;      // key conv, or --conv
};

// The schedule of one contraction.
struct TileSchedule {
  int64_t mr = 1, nr = 8, mc = 8;
  int64_t kc = 0;  // 0: the whole reduction in one block
  int64_t nc = 0;  // columns per packed B block (with k blocks), a multiple of nr
  int64_t ku = 1;  // k steps per iteration of the micro-kernel's k loop
  bool pack = false;
  bool packA = false;
  bool columnsOuter = false;  // column blocks outermost: B packed once, A once per column block
  bool packPerPanel = false;  // implicit GEMM: the input packed one panel at a time, before its tiles
  int64_t packLanes = 8;      // implicit GEMM: f32 lanes per vector of the input's padded pack
  bool inputInPlace = false;  // implicit GEMM: no input pack, the micro-kernel reads the input with lane masks
  std::string explanation;  // the rule's arithmetic, in one line
};

// The register tile alone: rows and columns (a multiple of W), and the rule's arithmetic in
// words. `columnVectors` > 0 fixes v (the implicit GEMM's 2).
struct RegisterTile {
  int64_t mr = 1, nr = 8;
  std::string explanation;
};
RegisterTile chooseRegisterTile(const MachineInfo& m, int columnVectors = 0);

// Applies the rule (and then the overrides) to an M x N x K contraction. nr is always a multiple
// of the vector width; mc a multiple of mr.
// `canBlockK`: whether the contraction can keep partial sums in its output (otherwise kc = 0).
// `chooseOrder`: whether the nest can be built either way round (rows or columns outer); the
// implicit-GEMM nest has its own order, and gets the rows-outer block sizes.
// `aBytes`: bytes per element of the packed A block (4; 2 when A is packed as bf16 pairs), which
// the A block's L2 share and the stack's limit on it are counted in.
TileSchedule chooseTileSchedule(const MachineInfo& m, int64_t M, int64_t N, int64_t K, const ScheduleOverrides& o,
                                bool canBlockK = true, bool chooseOrder = true, int64_t aBytes = 4);

// Parses a schedule file's text: `key = value` lines (tile, mr, nr, ku, mc, kc, nc, pack, pack_a,
// order, conv), `loops BUFFER: step; ...` lines and '#' comments. Returns the error (with its line number) or empty.
std::string parseScheduleText(const std::string& text, ScheduleOverrides& out);

}  // namespace texc::loops
