#include "compiler/loops/LoopIR.h"

#include <fmt/format.h>

#include <algorithm>

#include "compiler/loops/Walk.h"
#include "core/IndexAlgebra.h"

namespace texc::loops {

namespace {

int appendBuffer(LoopProgram& p, const std::string& name, std::vector<int64_t> shape, DType dtype, BufferKind kind) {
  Buffer b;
  b.name = name;
  for (int n = 2; std::any_of(p.buffers.begin(), p.buffers.end(), [&](const Buffer& x) { return x.name == b.name; }); ++n)
    b.name = fmt::format("{}{}", name, n);
  b.dtype = dtype;
  b.shape = std::move(shape);
  b.kind = kind;
  p.buffers.push_back(std::move(b));
  return static_cast<int>(p.buffers.size()) - 1;
}

}  // namespace

int addLocalBuffer(LoopProgram& p, const std::string& name, std::vector<int64_t> shape, DType dtype) {
  return appendBuffer(p, name, std::move(shape), dtype, BufferKind::Local);
}

int addProgramTemp(LoopProgram& p, const std::string& name, std::vector<int64_t> shape, DType dtype) {
  return appendBuffer(p, name, std::move(shape), dtype, BufferKind::Temp);
}

std::vector<bool> buffersStored(const LoopProgram& p, const Kernel& k) {
  std::vector<bool> out(p.buffers.size(), false);
  forEachAccess(k.body, [](const Expr&) {}, [&](const Store& s) { out[s.buffer] = true; });
  return out;
}

}  // namespace texc::loops

// ---- GPU mapping (map-gpu, sync-gpu-threads) -------------------------------------------------------

namespace texc::loops {

const char* gpuLoopName(GpuLoop g) {
  switch (g) {
    case GpuLoop::None: return "";
    case GpuLoop::Grid: return "grid";
    case GpuLoop::Blocks: return "blocks";
    case GpuLoop::Threads: return "threads";
    case GpuLoop::TileRows: return "tile-rows";
    case GpuLoop::TileCols: return "tile-cols";
    case GpuLoop::Staged: return "staged";
  }
  return "?";
}

const char* gpuStrategyName(GpuStrategy s) {
  switch (s) {
    case GpuStrategy::GridStride: return "grid-stride";
    case GpuStrategy::BlockReduce: return "block-reduce";
    case GpuStrategy::TiledContraction: return "tiled-contract";
    case GpuStrategy::RowBlock: return "row-block";
    case GpuStrategy::OnlineTile: return "online-tile";
  }
  return "?";
}

namespace {

std::string numbers(const std::vector<int>& v, const char* prefix) {
  std::string s;
  for (int x : v) s += fmt::format("{}{}{}", s.empty() ? "" : ", ", prefix, x);
  return s;
}

const char* reduceWord(ReduceKind r) {
  switch (r) {
    case ReduceKind::Sum: return "sum";
    case ReduceKind::Prod: return "prod";
    case ReduceKind::Max: return "max";
    case ReduceKind::Min: return "min";
  }
  return "?";
}

}  // namespace

std::vector<std::string> gpuMappingLines(const LoopProgram& p, const Kernel& k) {
  std::vector<std::string> out;
  if (!k.gpu) return out;
  const GpuMapping& m = *k.gpu;
  out.push_back(fmt::format("{}, launch <<<{}, {}>>>", gpuStrategyName(m.strategy), m.blocks, m.threads));
  if (m.float4) {
    std::string names;
    for (int b : m.float4Buffers) names += fmt::format("{}{}", names.empty() ? "" : ", ", p.buffers[b].name);
    out.push_back(fmt::format("float4: four elements per thread, read as float4: {}", names.empty() ? "none" : names));
  }
  if (m.strategy == GpuStrategy::TiledContraction) {
    out.push_back(fmt::format("tile {}x{}, {}x{} registers per thread, k-step {}; staged loads of the term: rows {}, columns {}{}{}", m.tile,
                              m.tileCols, m.regBlock, m.regCols, m.kStep, numbers(m.rowOperands, "#"), numbers(m.colOperands, "#"),
                              m.copies.empty() ? "" : "; the same reduction gives " + numbers(m.copies, "acc"),
                              m.window > 1 ? fmt::format("; {} columns per output (a pool's window)", m.window) : ""));
  }
  if (m.strategy == GpuStrategy::OnlineTile) {
    const int lanes = m.tile > 0 ? m.threads / m.tile : 1;
    out.push_back(fmt::format("{} query rows per block, {}; keys in stages of {} through shared memory", m.tile,
                              lanes > 1 ? fmt::format("{} threads each", lanes) : std::string("one per thread"), m.kStep));
  }
  for (const std::string& n : m.notes) out.push_back(n);
  for (const GpuRowSync& s : m.sync) {
    if (!s.barrierBefore.empty()) out.push_back(fmt::format("row statement {}: barrier before ({})", s.stmt + 1, s.barrierBefore));
    if (s.accs.empty()) continue;
    std::string accs;
    for (size_t n = 0; n < s.accs.size(); ++n) accs += fmt::format("{}{} acc{}", n ? ", " : "", reduceWord(s.kinds[n]), s.accs[n]);
    out.push_back(fmt::format("row statement {}: combine across threads after it: {} (warp shuffles{}), broadcast", s.stmt + 1, accs,
                              m.threads > 32 ? ", then shared memory between two barriers" : ""));
  }
  if (!m.rowEndBarrier.empty()) out.push_back(fmt::format("row end: barrier ({})", m.rowEndBarrier));
  return out;
}

std::vector<std::string> verifyGpuMapping(const LoopProgram& p, const Kernel& k) {
  std::vector<std::string> problems;
  auto fail = [&](const std::string& what) { problems.push_back(fmt::format("kernel {}: {}", k.name, what)); };
  std::vector<GpuLoop> marks;
  forEachStmt(k.body, [&](const Stmt& s) {
    if (const Loop* l = s.getIf<Loop>(); l && l->gpu != GpuLoop::None) marks.push_back(l->gpu);
  });
  if (!k.gpu) {
    if (!marks.empty()) fail("loops marked for the GPU in a kernel without a GPU mapping");
    return problems;
  }
  const GpuMapping& m = *k.gpu;
  if (m.blocks < 1 || m.blocks >= (int64_t{1} << 31)) fail(fmt::format("GPU mapping with {} blocks", m.blocks));
  if (m.threads < 32 || m.threads > 1024 || m.threads % 32 != 0) fail(fmt::format("GPU mapping with {} threads per block", m.threads));
  for (GpuLoop g : marks) {
    bool ok = false;
    switch (m.strategy) {
      case GpuStrategy::GridStride: ok = g == GpuLoop::Grid; break;
      case GpuStrategy::BlockReduce:
      case GpuStrategy::RowBlock: ok = g == GpuLoop::Blocks || g == GpuLoop::Threads; break;
      case GpuStrategy::TiledContraction:
        ok = g == GpuLoop::Blocks || g == GpuLoop::TileRows || g == GpuLoop::TileCols || g == GpuLoop::Staged;
        break;
      case GpuStrategy::OnlineTile: ok = g == GpuLoop::Blocks || g == GpuLoop::TileRows || g == GpuLoop::Staged; break;
    }
    if (!ok) fail(fmt::format("a loop marked {} in a {} kernel", gpuLoopName(g), gpuStrategyName(m.strategy)));
  }
  if (m.float4 && m.strategy != GpuStrategy::GridStride) fail("float4 outside a grid-stride kernel");
  for (int b : m.float4Buffers)
    if (b < 0 || b >= static_cast<int>(p.buffers.size())) fail(fmt::format("float4 buffer {} out of range", b));
  if (m.strategy == GpuStrategy::TiledContraction && (m.tile != m.kStep * m.regBlock || m.tileCols != m.kStep * m.regCols || m.kStep <= 0 ||
                                                    (!m.mma.empty() && m.tile != m.tileCols) || m.rowOperands.empty() || m.colOperands.empty()))
    fail("a tiled contraction without a consistent tile, register block, k-step and staged operands");
  if (m.strategy == GpuStrategy::TiledContraction && (m.stages < 2 || m.stages > 3 || (m.stages > 2 && !m.asyncCopy) || m.rowPad < 0 || m.colPad < 0))
    fail("a tiled contraction with other than 2 or 3 stages (3 only with cp.async), or a negative padding");
  // 16-byte copies land in shared rows that stay 16-byte aligned: a side copied so has rows padded
  // by a multiple of 16 bytes (the tile's rows are 16 elements, or a multiple of 64 columns).
  if (m.strategy == GpuStrategy::TiledContraction && !m.vectorCopies.empty()) {
    const int64_t elem = m.mma == "bf16" || m.mma == "f16" ? 2 : dtypeBytes(k.computeType);
    auto copied = [&](const std::vector<int>& side) {
      for (int n : side)
        if (std::find(m.vectorCopies.begin(), m.vectorCopies.end(), n) != m.vectorCopies.end()) return true;
      return false;
    };
    if ((copied(m.rowOperands) && m.rowPad * elem % 16 != 0) || (copied(m.colOperands) && m.colPad * elem % 16 != 0))
      fail("16-byte copies into shared rows whose padding is not a multiple of 16 bytes");
  }
  if (m.window != 1 && (m.strategy != GpuStrategy::TiledContraction || (m.window != 2 && m.window != 4 && m.window != 8)))
    fail("a pool window of other than 2, 4 or 8 columns, or outside a tiled contraction");
  // online-tile: `tile` query rows per block, each taken by `threads / tile` lanes, a power of
  // two up to a warp (one per row in the older form).
  if (m.strategy == GpuStrategy::OnlineTile) {
    const int lanes = m.tile > 0 && m.threads % m.tile == 0 ? m.threads / m.tile : 0;
    if (lanes < 1 || lanes > 32 || (lanes & (lanes - 1)) != 0 || m.kStep <= 0)
      fail("an online-tile kernel whose threads are not its rows times a power of two up to 32, or without a key stage");
  }
  if ((!m.sync.empty() || !m.rowEndBarrier.empty()) && m.strategy != GpuStrategy::RowBlock) fail("combines or barriers outside a row-block kernel");
  for (const GpuRowSync& s : m.sync) {
    if (s.accs.size() != s.kinds.size()) fail("a combine whose accumulators and reduce kinds differ in number");
    for (int a : s.accs)
      if (a < 0 || a >= k.numAccs) fail(fmt::format("a combine of accumulator {} out of range", a));
  }
  return problems;
}

bool usesVar(const std::vector<IndexExpr>& index, int var) {
  for (const IndexExpr& ix : index)
    if (texc::usesVar(ix, var)) return true;
  return false;
}

bool walksLastDimension(const std::vector<IndexExpr>& index, int var) {
  if (index.empty()) return false;
  for (size_t d = 0; d + 1 < index.size(); ++d)
    if (texc::usesVar(index[d], var)) return false;
  const AffineForm f = affineForm(index.back());
  return !f.overflow && !f.varInAtom(var) && f.coeffOf(var) == 1;
}

}  // namespace texc::loops
