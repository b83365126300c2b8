#include "compiler/loops/TileContractions.h"

#include <fmt/format.h>

#include <algorithm>

#include "compiler/loops/Build.h"
#include "compiler/loops/Contraction.h"
#include "compiler/loops/Equal.h"
#include "compiler/loops/ImplicitGemm.h"
#include "compiler/loops/PerfectNest.h"
#include "compiler/loops/Substitute.h"
#include "compiler/loops/Walk.h"
#include "compiler/loops/transforms/LoopTransforms.h"

namespace texc::loops {

namespace {

IndexExpr sum(IndexExpr a, IndexExpr b) {
  IndexExpr s;
  s.kind = IndexExpr::Kind::Add;
  s.ops.push_back(std::move(a));
  s.ops.push_back(std::move(b));
  return s;
}

// Whether the output is stored in f16/bf16: k blocks then keep their partial sums in an f32
// scratch of the tile pass's instead of in the output elements.
bool lowPrecisionOutput(const LoopProgram& p, const Contraction& c) {
  const DType t = p.buffers[c.store.as<Store>().buffer].dtype;
  return t == DType::F16 || t == DType::BF16;
}

// Finds the contraction in the chain of single-statement loops that starts at `body`.
Stmt* findContraction(const LoopProgram& p, Block& body, Contraction& c, bool& outermost) {
  if (body.size() != 1) return nullptr;
  std::vector<Loop*> chain = perfectNest(body[0]);
  for (size_t d = 0; d < chain.size(); ++d) {
    // The statement holding loop d: the only one of the body around it.
    Stmt& l = d == 0 ? body[0] : chain[d - 1]->body[0];
    outermost = d == 0;
    if (matchContraction(p, l, c)) return &l;
  }
  return nullptr;
}

// The register tile of `c` under schedule `s` (transforms/RegisterBlock.cpp), reading the packed
// scratch (-1: in place), over k block `kb` when k is blocked. The caller places it (row and
// column bases, the blocks it reads).
Stmt tileOf(const Contraction& c, const TileSchedule& s, int rowScratch, int colScratch, int kb) {
  Stmt tile = registerTile(c, s.mr, s.nr);
  Tile& t = tile.as<Tile>();
  t.colScratch = colScratch;
  t.rowScratch = rowScratch;
  t.kUnroll = s.ku;
  if (kb >= 0) {
    t.k.block = s.kc;
    t.k.base = affineIndex(s.kc, kb, 0);
  }
  return tile;
}

void tileOne(const LoopProgram& p, Kernel& k, const Contraction& c, const TileSchedule& s, bool outermost, bool bf16Pairs, bool amx) {
  auto newVar = [&](const std::string& name) {
    k.varNames.push_back(name);
    return static_cast<int>(k.varNames.size()) - 1;
  };
  int ic = newVar(k.varNames[c.i] + "_c");
  int kb = s.kc > 0 ? newVar(k.varNames[c.k] + "_c") : -1;
  // With k blocks, B is packed nc columns at a time (block jc), nc/nr panels of nr.
  int jc = s.kc > 0 && s.nc > s.nr ? newVar(k.varNames[c.j] + "_c") : -1;
  int jt = newVar(k.varNames[c.j] + "_t");
  const int64_t packCols = jc >= 0 ? s.nc : s.nr;
  int it = newVar(k.varNames[c.i] + "_t");
  const int64_t window = s.kc > 0 ? s.kc : c.K;
  auto newScratch = [&](int64_t n) {
    k.scratchSizes.push_back(n);
    return static_cast<int>(k.scratchSizes.size()) - 1;
  };
  // bf16 pairs take one 32-bit scratch element per two k steps (AMX: in whole tiles of 16 pairs).
  const int64_t units = bf16Pairs ? packedPairs(window, amx) : window;
  int rowScratch = s.packA ? newScratch(s.mc * units) : -1;
  int colScratch = s.pack ? newScratch(units * packCols) : -1;

  Stmt tile = tileOf(c, s, rowScratch, colScratch, kb);
  Tile& t = tile.as<Tile>();
  t.rowBase = sum(affineIndex(s.mc, ic, 0), affineIndex(s.mr, it, 0));
  t.colBase = jc >= 0 ? sum(affineIndex(s.nc, jc, 0), affineIndex(s.nr, jt, 0)) : affineIndex(s.nr, jt, 0);
  if (jc >= 0) t.blockCol = affineIndex(s.nr, jt, 0);
  t.blockRow = affineIndex(s.mr, it, 0);
  t.bf16Pairs = bf16Pairs;
  t.amx = amx;
  if (amx) t.edgeRows = 0;  // AMX tiles have no edge path
  if (kb >= 0 && lowPrecisionOutput(p, c)) {
    // The row block's partial sums, all its columns (the k blocks are inside the row blocks).
    t.sumStride = (c.N + s.nr - 1) / s.nr * s.nr;
    t.sumScratch = newScratch(s.mc * t.sumStride);
    t.sumRow = t.blockRow;
    t.sumCol = t.colBase;
  }
  // With column blocks, B is packed in micro-panels of nr columns; without, one panel at a time.
  Stmt colPackStmt = s.pack ? columnPack(tile, colScratch, jc >= 0 ? affineIndex(s.nc, jc, 0) : affineIndex(s.nr, jt, 0), packCols,
                                          jc >= 0 ? s.nr : 0)
                            : Stmt{};
  // The A block: packed once per row block (and k block), reused by every column panel.
  Stmt rowPackStmt = s.packA ? rowPack(tile, rowScratch, affineIndex(s.mc, ic, 0), s.mc, /*allOfK=*/false) : Stmt{};
  if (bf16Pairs) colPackStmt.as<Pack>().bf16Pairs = rowPackStmt.as<Pack>().bf16Pairs = true;
  if (amx) colPackStmt.as<Pack>().amx = rowPackStmt.as<Pack>().amx = true;

  Loop rowTiles = build::loop(it, s.mc / s.mr);
  rowTiles.body.push_back(std::move(tile));
  Loop panels = build::loop(jt, jc >= 0 ? s.nc / s.nr : (c.N + s.nr - 1) / s.nr);
  if (s.pack && jc < 0) panels.body.push_back(std::move(colPackStmt));
  panels.body.push_back(std::move(rowTiles));

  if (s.columnsOuter && jc >= 0 && kb >= 0 && s.pack && s.packA && t.sumScratch < 0) {
    // Column blocks outermost (BLIS's order): each B block is packed once, and the A blocks are
    // packed again for every column block instead.
    Loop rowBlocks = build::loop(ic, (c.M + s.mc - 1) / s.mc);
    rowBlocks.body.push_back(std::move(rowPackStmt));
    rowBlocks.body.push_back(std::move(panels));
    Loop kBlocks = build::loop(kb, (c.K + s.kc - 1) / s.kc);
    kBlocks.body.push_back(std::move(colPackStmt));
    kBlocks.body.push_back(std::move(rowBlocks));
    Loop colBlocks = build::loop(jc, (c.N + s.nc - 1) / s.nc);
    colBlocks.parallel = c.iLoop->as<Loop>().parallel;
    colBlocks.body.push_back(std::move(kBlocks));
    if (outermost && colBlocks.parallel) k.parallelExtent = colBlocks.extent;
    *c.iLoop = std::move(colBlocks);
    return;
  }

  if (jc >= 0) {
    Loop colBlocks = build::loop(jc, (c.N + s.nc - 1) / s.nc);
    if (s.pack) colBlocks.body.push_back(std::move(colPackStmt));
    colBlocks.body.push_back(std::move(panels));
    panels = std::move(colBlocks);
  }
  Block perBlock;
  if (s.packA) perBlock.push_back(std::move(rowPackStmt));
  perBlock.push_back(std::move(panels));
  Loop blocks = build::loop(ic, (c.M + s.mc - 1) / s.mc);
  blocks.parallel = c.iLoop->as<Loop>().parallel;
  if (kb >= 0) {
    Loop kBlocks = build::loop(kb, (c.K + s.kc - 1) / s.kc);
    kBlocks.body = std::move(perBlock);
    blocks.body.push_back(std::move(kBlocks));
  } else {
    blocks.body = std::move(perBlock);
  }
  if (outermost && blocks.parallel) k.parallelExtent = blocks.extent;
  *c.iLoop = std::move(blocks);
}

// k blocks keep partial sums in the output element itself (or in f32 scratch beside a
// low-precision output): it must hold f32 exactly, be contiguous in j, and not be read by the
// epilogue.
bool canBlockK(const LoopProgram& p, const Contraction& c) {
  const Store& st = c.store.as<Store>();
  if ((p.buffers[st.buffer].dtype != DType::F32 && !lowPrecisionOutput(p, c)) || st.index.empty() || loadsFrom(st.value, st.buffer))
    return false;
  const IndexExpr& last = st.index.back();
  if (last.kind != IndexExpr::Kind::Var || last.var != c.j) return false;
  bool rowSeen = false;
  for (size_t d = 0; d + 1 < st.index.size(); ++d) {
    if (usesVar(st.index[d], c.j)) return false;
    rowSeen = rowSeen || (st.index[d].kind == IndexExpr::Kind::Var && st.index[d].var == c.i);
  }
  return rowSeen;
}

// What the schedule line says of a contraction whose packs keep bf16 pairs.
constexpr const char* kBf16PairsNote = "packed as bf16 pairs along k (not widened), two k steps per vdpbf16ps, sums in f32";

// The schedule of a bf16 x bf16 matmul on AMX tiles, from the rule's blocks for bf16 pairs: the
// register tile becomes 32x32, 2x2 accumulator tiles of 16x16 f32 beside 2 A tiles (16 rows x 32
// k steps) and 2 B tiles (32 k steps x 16 columns), all 8 tile registers: 4 tdpbf16ps of 16x16x32
// per 4 tile loads. Blocks are rounded to whole tiles: k blocks to 32 steps, rows and columns to
// 32.
void useAmxTiles(TileSchedule& s, const MachineInfo& machine, const Contraction& c, const ScheduleOverrides& o) {
  s.mr = s.nr = 32;
  s.ku = 1;
  // k blocks of at least 1024 steps (one block when K is no longer): every k block loads and
  // stores a 32x32 tile's partial sums (4 KiB each way), which at the tiles' rate cost as much as
  // their arithmetic over 512 steps. Measured (Sapphire Rapids class, 1 thread): bf16 matmul 2048
  // 27.8 -> 21.2 ms, 1024 3.05 -> 2.24 ms.
  if (!o.kc && s.kc > 0 && s.kc < 1024) s.kc = c.K <= 1024 ? 0 : 1024;
  if (s.kc > 0) s.kc = (s.kc + 31) / 32 * 32;
  // The A block (mc x window bf16) stays within half of L2.
  const int64_t aRows = machine.l2Bytes / 2 / (2 * (s.kc > 0 ? s.kc : c.K));
  if (!o.mc) s.mc = std::min(s.mc, aRows);
  s.mc = std::max<int64_t>(32, s.mc / 32 * 32);
  if (s.nc > 0) s.nc = std::max<int64_t>(32, (s.nc + 31) / 32 * 32);
  const int64_t window = s.kc > 0 ? s.kc : c.K;
  s.explanation = fmt::format(
      "{}x{}x{}: C tile 32x32 = 2x2 AMX tiles of 16x16 f32 (+2 A tiles of 16x32 bf16, +2 B tiles of 32x16 bf16 = the 8 tile "
      "registers; 4 tdpbf16ps of 16x16x32 per 4 tile loads); {}A block {}x{} bf16 ({} KiB){}; {}; {} threads; A and B are bf16 on a "
      "CPU with AMX-BF16: packed as bf16 pairs along k in tile order, zeros past the k window to whole tiles of 32 steps, sums in f32",
      c.M, c.N, c.K,
      s.kc > 0    ? fmt::format("k blocks of {}{}; ", s.kc, o.kc ? "" : " (>= 1024 steps: each block loads and stores the tiles' partial sums)")
      : c.K <= 1024 ? "one k block (K <= 1024); "
                     : "one k block (the output cannot hold partial sums); ", s.mc, window, s.mc * window * 2 / 1024,
      s.kc > 0 && s.nc > 0 ? fmt::format("; B packed {} columns at a time ({} KiB)", s.nc, s.nc * window * 2 / 1024) : "",
      machine.source, machine.threads);
}

// "bf16" or "f16" when `operand` reads a low-precision buffer, else empty.
std::string lowPrecisionName(const LoopProgram& p, const Expr& operand) {
  const DType t = p.buffers[operand.buffer].dtype;
  return t == DType::BF16 ? "bf16" : t == DType::F16 ? "f16" : "";
}

// What the schedule line says about operands the packs widen.
std::string lowPrecisionNote(const std::string& rowLow, const std::string& colLow, const ScheduleOverrides& o) {
  if (rowLow.empty() && colLow.empty()) return "";
  std::string which = !rowLow.empty() && !colLow.empty()
                          ? (rowLow == colLow ? fmt::format("A and B are {}", rowLow) : fmt::format("A is {}, B {}", rowLow, colLow))
                          : !rowLow.empty() ? fmt::format("A is {}", rowLow) : fmt::format("B is {}", colLow);
  const bool overridden = (!rowLow.empty() && o.packA == false) || (!colLow.empty() && o.pack == false);
  return fmt::format("; {}: packed{} and widened to f32 once per panel, the micro-kernel runs in f32", which,
                     overridden ? " (pack = off ignored)" : "");
}

// ---- implicit GEMM: reductions over several variables, with padding guards (convolution) ----

// The CPU's implicit GEMM (ImplicitGemm.h): whether the output can hold the k blocks' partial
// sums is decided before the pixels merge (the store is then indexed by yx / W, yx % W).
bool matchCpuImplicitGemm(const LoopProgram& p, Kernel& k, ImplicitGemm& g, bool& blockK) {
  if (!matchImplicitGemm(p, k, g)) return false;
  blockK = canBlockK(p, g.c);
  mergeRowIntoColumns(p, k, g, PixelMerge::KeepContiguousInput);
  return true;
}

// Scratch both packs of an implicit GEMM may take (stack of the kernel's call).
constexpr int64_t kImplicitGemmStackBytes = 2 << 20;

// The implicit-GEMM nest. The row operand (the weights) is packed whole, once per call of the
// kernel, before its parallel loop: every pixel block and image reuses it. The column operand
// is packed from the input itself per pixel block, image and k block, with the padding written
// as zeros, so the micro-kernel runs without a guard:
//
//   pack s0[i < M in panels of mr][k < K] = W[..]
//   for jc (pixel blocks of nc) and the batch loops, the longest outermost (parallel when the
//       kernel was: one image still gives every thread work)
//     for kc blocks
//       pack s1[k in window][j < nc in panels of nr] = I[..] (0 where padded)
//       for jt: for it: tile mr x nr
//
// or, with s.packPerPanel, the pack of one panel inside the panel loop:
//       for jt { pack s1[k in window][j < nr] = I[..]; for it: tile mr x nr }
void tileImplicitGemm(const LoopProgram& p, Kernel& k, ImplicitGemm& g, const TileSchedule& s, bool bf16Pairs, bool amx) {
  const Contraction& c = g.c;
  auto newVar = [&](const std::string& name) {
    k.varNames.push_back(name);
    return static_cast<int>(k.varNames.size()) - 1;
  };
  auto newScratch = [&](int64_t n) {
    k.scratchSizes.push_back(n);
    return static_cast<int>(k.scratchSizes.size()) - 1;
  };
  const int64_t rowsPacked = (c.M + s.mr - 1) / s.mr * s.mr;
  const int kb = s.kc > 0 ? newVar(k.varNames[c.k] + "_c") : -1;
  const int jc = newVar(k.varNames[c.j] + "_c");
  const int jt = newVar(k.varNames[c.j] + "_t");
  const int it = newVar(k.varNames[c.i] + "_t");
  const int64_t window = s.kc > 0 ? s.kc : c.K;
  // bf16 pairs take one 32-bit scratch element per two k steps (AMX: in whole tiles of 16 pairs).
  auto units = [&](int64_t steps) { return bf16Pairs ? packedPairs(steps, amx) : steps; };
  const bool perPanel = s.packPerPanel;
  const int rowScratch = newScratch(rowsPacked * units(c.K));
  const int colScratch = s.inputInPlace ? -1 : newScratch(units(window) * (perPanel ? s.nr : s.nc));

  Stmt tile = tileOf(c, s, rowScratch, colScratch, kb);
  Tile& t = tile.as<Tile>();
  t.rowBase = affineIndex(s.mr, it, 0);
  t.colBase = sum(affineIndex(s.nc, jc, 0), affineIndex(s.nr, jt, 0));
  t.blockCol = perPanel ? IndexExpr::makeConst(0) : affineIndex(s.nr, jt, 0);
  if (s.inputInPlace) {
    t.blockCol = IndexExpr::makeConst(0);
    t.colPadding = g.padding;
  }
  t.blockRow = affineIndex(s.mr, it, 0);
  t.rowPackWhole = true;
  t.bf16Pairs = bf16Pairs;
  t.amx = amx;
  if (amx) t.edgeRows = 0;  // AMX tiles have no edge path
  if (kb >= 0 && lowPrecisionOutput(p, c)) {
    // The pixel block's partial sums, all rows (the k blocks are inside the pixel blocks).
    t.sumStride = s.nc;
    t.sumScratch = newScratch(rowsPacked * s.nc);
    t.sumRow = t.rowBase;
    t.sumCol = affineIndex(s.nr, jt, 0);
  }
  Stmt colPackStmt = perPanel ? columnPack(tile, colScratch, sum(affineIndex(s.nc, jc, 0), affineIndex(s.nr, jt, 0)), s.nr, s.nr)
                              : columnPack(tile, colScratch, affineIndex(s.nc, jc, 0), s.nc, s.nr);
  colPackStmt.as<Pack>().padding = g.padding;
  colPackStmt.as<Pack>().lanes = s.packLanes;
  Stmt rowPackStmt = rowPack(tile, rowScratch, IndexExpr::makeConst(0), rowsPacked, /*allOfK=*/true);
  colPackStmt.as<Pack>().bf16Pairs = rowPackStmt.as<Pack>().bf16Pairs = bf16Pairs;
  colPackStmt.as<Pack>().amx = rowPackStmt.as<Pack>().amx = amx;
  Loop rowTiles = build::loop(it, rowsPacked / s.mr);
  rowTiles.body.push_back(std::move(tile));
  Loop panels = build::loop(jt, s.nc / s.nr);
  const bool blockPack = !perPanel && !s.inputInPlace;
  if (perPanel && !s.inputInPlace) panels.body.push_back(std::move(colPackStmt));
  panels.body.push_back(std::move(rowTiles));

  // One column block: per k block, pack the input's block, then run its panels.
  Block body;
  if (kb >= 0) {
    Loop kBlocks = build::loop(kb, (c.K + s.kc - 1) / s.kc);
    if (blockPack) kBlocks.body.push_back(std::move(colPackStmt));
    kBlocks.body.push_back(std::move(panels));
    body.push_back(std::move(kBlocks));
  } else {
    if (blockPack) body.push_back(std::move(colPackStmt));
    body.push_back(std::move(panels));
  }

  // The column blocks and the batch loops (every output loop but the rows and the columns) are
  // independent: the longest goes outermost and is the parallel loop when the kernel had one,
  // so that one image still gives every thread work.
  std::vector<std::pair<int, int64_t>> outer;  // variable, extent
  for (const Loop* l : g.chain)
    if (l->var != c.i && l->var != c.j) outer.push_back({l->var, l->extent});
  outer.push_back({jc, (c.N + s.nc - 1) / s.nc});
  std::stable_sort(outer.begin(), outer.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  Stmt nest = std::move(build::loopNest(outer, std::move(body), g.chain.front()->parallel)[0]);
  const Loop& outermost = nest.as<Loop>();
  k.parallelExtent = outermost.parallel ? outermost.extent : 0;

  k.body.clear();
  k.body.push_back(std::move(rowPackStmt));
  k.body.push_back(std::move(nest));
}

}  // namespace

int tileContractions(LoopProgram& p, const MachineInfo& machine, const ScheduleOverrides& overrides) {
  if (overrides.tile == false) return 0;
  int tiled = 0;
  for (Kernel& k : p.kernels) {
    if (k.computeType != DType::F32) continue;  // the micro-kernel is written for f32
    Contraction c;
    bool outermost = false;
    if (findContraction(p, k.body, c, outermost)) {
      // A column operand that is not contiguous in j (A B^T) is only tiled packed: the pack
      // gathers it into contiguous panels, which the micro-kernel reads as vectors.
      ScheduleOverrides o = overrides;
      if (!c.colContiguous) o.pack = true;
      // f16/bf16 operands are widened to f32 by their packs, once per panel, rather than at
      // every k step of the micro-kernel.
      const std::string rowLow = lowPrecisionName(p, c.rowOperand), colLow = lowPrecisionName(p, c.colOperand);
      if (!rowLow.empty()) o.packA = true;
      if (!colLow.empty()) o.pack = true;
      // Partial sums beside a low-precision output are kept per row block (tileOne).
      if (lowPrecisionOutput(p, c)) o.columnsOuter = false;
      // bf16 pairs (below) pack A at 2 bytes an element: twice the rows per block in the same L2.
      const bool pairable = machine.bf16Dot && rowLow == "bf16" && colLow == "bf16";
      TileSchedule s = chooseTileSchedule(machine, c.M, c.N, c.K, o, canBlockK(p, c), true, pairable ? 2 : 4);
      // An operand that must be packed (gathered, or widened from f16/bf16) whose pack would not
      // fit the stack scratch under the schedule file's mc or nc: halve them until it does, and
      // say so, rather than leave the contraction untiled (bf16 matmul 2048 with mc = 1024 ran
      // 500x slower, silently).
      const bool needB = !c.colContiguous || !colLow.empty(), needA = !rowLow.empty();
      std::string lowered;
      const std::optional<int64_t> askedMc = o.mc, askedNc = o.nc;
      while (((needA && !s.packA && o.mc && *o.mc > 1) || (needB && !s.pack && o.nc && *o.nc > 1))) {
        if (needA && !s.packA && o.mc) o.mc = *o.mc / 2;
        if (needB && !s.pack && o.nc) o.nc = *o.nc / 2;
        s = chooseTileSchedule(machine, c.M, c.N, c.K, o, canBlockK(p, c), true, pairable ? 2 : 4);
      }
      if (askedMc && o.mc != askedMc) lowered += fmt::format("; mc = {} lowered to {}: the packed A block must fit 1 MiB of stack scratch", *askedMc, s.mc);
      if (askedNc && o.nc != askedNc) lowered += fmt::format("; nc = {} lowered to {}: the packed B block must fit 1 MiB of stack scratch", *askedNc, s.nc);
      if ((needB && !s.pack) || (needA && !s.packA)) {
        k.schedule = fmt::format("not tiled: the {} operand must be packed ({}), and its pack would not fit 1 MiB of stack scratch with "
                                 "these block sizes (kc, mc, nc)",
                                 needA && !s.packA ? "row (A)" : "column (B)",
                                 needA && !s.packA ? "it is " + rowLow : !colLow.empty() ? "it is " + colLow : "it is gathered");
        continue;
      }
      // Both bf16 with AMX tiles as well: the micro-kernel is tdpbf16ps on 16x16 tiles, unless the
      // schedule file fixes the register tile (mr, nr), which asks for the vector micro-kernel.
      // Its packs hold at least 32 rows or columns of a window: an unblocked k (the output cannot
      // hold partial sums) longer than 16384 steps would overflow the 1 MiB of stack scratch. An
      // A not contiguous in k (A^T B) is packed pair by pair (CodeGenLLVM's packRowTilesAmx).
      const bool amx = pairable && s.pack && s.packA && machine.amxBf16 && !o.mr && !o.nr && (s.kc > 0 || c.K <= 16384);
      if (amx) useAmxTiles(s, machine, c, o);
      s.explanation += lowered;
      if (!c.colContiguous)
        s.explanation += overrides.pack == false
                             ? "; pack = off ignored: B is not contiguous in j (A B^T), so it is packed (gathered) into panels"
                             : "; B is not contiguous in j (A B^T): the pack gathers it into panels";
      // Both operands bf16 on a CPU with vdpbf16ps: the packs keep the bf16 bits in pairs along
      // k and the micro-kernel multiplies pairs, at twice the products per instruction of f32
      // FMAs. Exact products, sums in f32, as the f32 path. A gathered B (A B^T) has its pairs
      // side by side in memory: one 32-bit gather per vector of columns.
      const bool pairs = pairable && s.pack && s.packA;
      if (pairs) {
        if (!amx) s.explanation += fmt::format("; A and B are bf16 on a CPU with AVX512-BF16: {}", kBf16PairsNote);
      } else {
        s.explanation += lowPrecisionNote(rowLow, colLow, overrides);
      }
      tileOne(p, k, c, s, outermost, pairs, amx);
      k.schedule = s.explanation;
      ++tiled;
      continue;
    }
    // Convolution and other multi-variable or padded reductions: implicit GEMM, which needs
    // both operands packed (the padding lives in the packing, the flattened index in both).
    const ConvMode conv = overrides.conv.value_or(ConvMode::Implicit);
    if (conv == ConvMode::Direct) continue;
    Kernel candidate = k;
    ImplicitGemm g;
    bool blockK = false;
    if (overrides.pack == false || overrides.packA == false || !matchCpuImplicitGemm(p, candidate, g, blockK)) continue;
    TileSchedule s = chooseTileSchedule(machine, g.c.M, g.c.N, g.c.K, overrides, blockK, /*chooseOrder=*/false);
    if (conv == ConvMode::Im2col) {
      // The lecture's im2col: the whole patch matrix of an image (K x pixels, padding as zeros)
      // is packed first, then one GEMM reads it. The same nest with one k block and one column
      // block; the matrix is too big for the stack, so code generation puts it on the heap.
      s.kc = 0;
      s.nc = (g.c.N + s.nr - 1) / s.nr * s.nr;
      const double matrixMiB = static_cast<double>(g.c.K * s.nc) * 4 / (1 << 20);
      tileImplicitGemm(p, candidate, g, s, false, false);
      candidate.schedule = fmt::format(
          "{}x{}x{}: C tile {}x{}; im2col (--conv=im2col): the patch matrix {}x{} ({:.1f} MiB) is written whole, then read "
          "back by the GEMM: {:.1f} MiB moved beyond the input, where implicit GEMM packs blocks that stay in cache",
          g.c.M, g.c.N, g.c.K, s.mr, s.nr, g.c.K, s.nc, matrixMiB, 2 * matrixMiB);
      k = std::move(candidate);
      ++tiled;
      continue;
    }
    std::string evened;
    // Both operands bf16 on a CPU with vdpbf16ps: packed as bf16 pairs (see tileContractions),
    // with k blocks of an even length, so that every window starts at a pair of the weights.
    const bool pairs = machine.bf16Dot && lowPrecisionName(p, g.c.rowOperand) == "bf16" && lowPrecisionName(p, g.c.colOperand) == "bf16";
    // With AMX tiles as well (and no register tile from a schedule file): 32x32 tiles of 16x16, k
    // blocks of whole tiles (the weights are packed whole, so every window must start at a tile
    // of them) and of at least 1024 steps (one block when K is no longer), as for matmuls.
    const bool amx = pairs && machine.amxBf16 && !overrides.mr && !overrides.nr;
    if (amx) {
      s.mr = s.nr = 32;
      s.ku = 1;
      if (!overrides.kc && s.kc > 0 && s.kc < 1024) s.kc = g.c.K <= 1024 ? 0 : 1024;
    }
    if (!overrides.mr && !amx) {
      // Up to two rows fewer per tile when that pads fewer rows, but at least 4 rows (8
      // accumulators: two FMA pipes of latency 4 kept busy). 64 channels are 16 tiles of 4
      // rather than 11 of 6 (66 rows) or 13 of 5 (65); measured at both bench shapes, tiles of
      // 4 rows are 1 % faster than of 5 and 3 % faster than of 6. The weights are packed whole,
      // so no block size depends on it.
      const auto padded = [&](int64_t m) { return (g.c.M + m - 1) / m * m; };
      int64_t best = s.mr;
      for (int64_t m = s.mr - 1; m >= std::max<int64_t>(4, s.mr - 2); --m)
        if (padded(m) < padded(best)) best = m;
      if (best != s.mr) evened = fmt::format("; tiles of {} rows pad fewer rows ({} for {})", best, padded(best), g.c.M);
      s.mr = best;
    }
    if (s.kc > 0 && !overrides.kc) {
      // Even k blocks: 576 = 3 x 192 rather than 256 + 256 + 64, whose last block pays a tile's
      // fixed costs (partial sums, epilogue) for a quarter of the work.
      const int64_t blocks = (g.c.K + s.kc - 1) / s.kc;
      int64_t even = (g.c.K + blocks - 1) / blocks;
      if (pairs) even += even % 2;
      if (amx) even = (even + 31) / 32 * 32;
      if (even != s.kc) evened += fmt::format("; k blocks evened out to {} x {}", blocks, even);
      s.kc = even;
    }
    if (pairs && s.kc % 2 != 0) {
      ++s.kc;
      evened += fmt::format("; k blocks of {}: an even number of bf16 pairs' halves", s.kc);
    }
    if (amx && s.kc % 32 != 0) {
      s.kc = (s.kc + 31) / 32 * 32;
      evened += fmt::format("; k blocks of {}: whole AMX tiles of the weights", s.kc);
    }
    // With 16-float vectors and f32 packs, the input is packed one panel (nr pixels, the k
    // window) at a time, just before the tiles that read it: the panel (<= L1/2) stays in L1,
    // where the block's pack wrote the whole block out through L2 and the tiles read each panel
    // back. Measured on a Sapphire Rapids class Xeon, 1 thread: conv (1, 64, 64, 56, 56)
    // 1.53-1.61 -> 1.37-1.53 ms, (8, 64, 128, 28, 28) 6.18-6.34 -> 5.76-5.88 ms, the same bits.
    // Not with AVX2 code (on that host --cpu haswell was 0-8 % slower: twice the pack calls for
    // half the panel), nor for bf16 pairs (AMX: 0.38 -> 0.57 ms, each call pads to whole tiles).
    s.packPerPanel = overrides.packPanels.value_or(machine.vectorFloats == 16 && !pairs);
    // Reading the input in place instead (a schedule's input_in_place = on) saves the pack but
    // makes every micro-kernel load a masked load across cache lines, with its mask loaded from
    // a table at every k step: on a Sapphire Rapids class Xeon, conv (1, 64, 64, 56, 56) took
    // 1.62 against 1.39 ms (1 thread), so it is not the default (docs/performance.md). f32
    // inputs only: the packs widen f16/bf16 once per panel rather than at every tile.
    s.inputInPlace = overrides.inputInPlace.value_or(false) && !pairs && lowPrecisionName(p, g.c.colOperand).empty();
    const int64_t rowsPacked = (g.c.M + s.mr - 1) / s.mr * s.mr;
    if ((s.packPerPanel || s.inputInPlace) && !overrides.nc && s.kc > 0 && !lowPrecisionOutput(p, g.c)) {
      // No block of the input is packed then, so the pixel block is bounded by what stays in L2
      // between its k blocks instead: its partial sums, all rows, at most a quarter of L2 (kept
      // in the output; beside an f16/bf16 output they would be stack scratch, so not there). An
      // image of 784 pixels is then one block of 25 panels rather than 2 of 13 (26 panels' work,
      // and blocks of 14.9 rows, which a fused pool cannot bind): conv (8, 64, 128, 28, 28),
      // 1 thread, 5.09-5.43 -> 4.61-5.10 ms, 2 threads 2.89-2.96 -> 2.76-2.83 ms, the pool fused.
      const int64_t blockPanels = std::max<int64_t>(1, machine.l2Bytes / 4 / (4 * rowsPacked * s.nr));
      const int64_t panels = (g.c.N + s.nr - 1) / s.nr;
      const int64_t nc = std::min(blockPanels, panels) * s.nr;
      if (nc != s.nc)
        evened += fmt::format("; pixel blocks of up to {} (their partial sums, {} x {} floats, <= L2/4: the input is packed panel by panel)",
                              nc, rowsPacked, nc);
      s.nc = nc;
    }
    if (!overrides.nc) {
      // Even pixel blocks, in whole panels, as few padded panels as possible: 784 = 7 x 112
      // rather than 6 x 128 + 16, whose last block packs 128 columns for 16; 3136 = 28 x 112
      // rather than 25 x 128 = 3200, whose last block computes 64 columns of padding (measured
      // 2.4 % of conv (1, 64, 64, 56, 56)). Among the panel counts up to the rule's, the one
      // padding least, the widest of those.
      const int64_t panels = (g.c.N + s.nr - 1) / s.nr, most = std::max<int64_t>(1, s.nc / s.nr);
      const auto paddedPanels = [&](int64_t p) { return (panels + p - 1) / p * p; };
      int64_t best = most;
      for (int64_t p = most; p >= std::max<int64_t>(1, most / 2); --p)
        if (paddedPanels(p) < paddedPanels(best)) best = p;
      int64_t blocks = (panels + best - 1) / best;
      // When the pixel blocks are the parallel loop (no batch loop as long) and the threads
      // would idle more than 5 % of the blocks' time in its last round, a number of blocks that
      // they share evenly, if one up to twice as many pads no more panels: at
      // (1, 64, 64, 56, 56) with 32-pixel panels, 7 blocks of 14 panels left one of 2 threads a
      // block alone (texc 0.88 ms against oneDNN's 0.77 on 2 threads, 1.41 against 1.44 on 1);
      // 14 blocks of 7 do not.
      int64_t longestBatch = 0;
      for (const Loop* l : g.chain)
        if (l->var != g.c.i && l->var != g.c.j) longestBatch = std::max(longestBatch, l->extent);
      const int64_t T = machine.threads, rounds = (blocks + T - 1) / T;
      if (T > 1 && blocks > longestBatch && (rounds * T - blocks) * 20 > rounds * T) {
        const int64_t padded = (panels + blocks - 1) / blocks * blocks;
        for (int64_t b = (blocks + T - 1) / T * T; b <= 2 * blocks && b <= panels; b += T)
          if ((panels + b - 1) / b * b <= padded) {
            evened += fmt::format("; {} pixel blocks rather than {}, a multiple of the {} threads", b, blocks, T);
            blocks = b;
            break;
          }
      }
      const int64_t even = (panels + blocks - 1) / blocks * s.nr;
      if (even != s.nc) evened += fmt::format("; pixel blocks evened out to {} x {}", blocks, even);
      s.nc = even;
    }
    // Both packs live on the stack of each call (the rule keeps the column block small).
    const int64_t inputPackFloats = s.inputInPlace ? 0 : (s.kc > 0 ? s.kc : g.c.K) * (s.packPerPanel ? s.nr : s.nc);
    if ((rowsPacked * g.c.K + inputPackFloats) * 4 > kImplicitGemmStackBytes) continue;
    // The padded pack loads the input 16 floats at a time with AVX-512 (its lane masks are mask
    // registers), 8 with AVX2 (one register of 32-bit masks, which LLVM would otherwise narrow
    // to bytes and back between the compares and the masked loads). Measured with AVX-512 on a
    // Sapphire Rapids class Xeon, 1 thread: conv (1, 64, 64, 56, 56) 1.15-1.31 -> 1.11-1.23 ms,
    // (8, 64, 128, 28, 28) 5.20-5.32 -> 5.10-5.15 ms (pack 9.6 -> 7.9 % of the samples).
    s.packLanes = machine.vectorFloats == 16 ? 16 : 8;
    if (s.inputInPlace)
      evened += "; input read in place (input_in_place = on): no input pack, the micro-kernel loads the input where it lies, "
                "with lane masks for the padding";
    else if (s.packPerPanel) evened += "; input packed panel by panel, just before its tiles (the panel stays in L1)";
    tileImplicitGemm(p, candidate, g, s, pairs, amx);
    if (amx)
      s.explanation = fmt::format(
          "{}x{}x{}: C tile 32x32 = 2x2 AMX tiles of 16x16 f32 (+2 A tiles of 16x32 bf16, +2 B tiles of 32x16 bf16 = the 8 tile "
          "registers; 4 tdpbf16ps of 16x16x32 per 4 tile loads); {}pixel blocks of {}; {}; {} threads",
          g.c.M, g.c.N, g.c.K, s.kc > 0 ? fmt::format("k blocks of {}; ", s.kc) : "one k block (K <= 1024); ", s.nc, machine.source,
          machine.threads);
    candidate.schedule =
        s.explanation + evened +
        (s.inputInPlace ? "; implicit GEMM: weights packed whole once per call"
                        : "; implicit GEMM: weights packed whole once per call, input packed with its padding as zeros") +
        (amx    ? "; weights and input are bf16 on a CPU with AMX-BF16: packed as bf16 pairs along k in tile order, zeros past the k "
                  "window to whole tiles of 32 steps, sums in f32"
         : pairs ? fmt::format("; weights and input are bf16 on a CPU with AVX512-BF16: {}", kBf16PairsNote)
               : lowPrecisionNote(lowPrecisionName(p, g.c.rowOperand), lowPrecisionName(p, g.c.colOperand), ScheduleOverrides{}));
    k = std::move(candidate);
    ++tiled;
  }
  return tiled;
}

}  // namespace texc::loops
