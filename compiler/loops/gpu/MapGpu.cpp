#include "compiler/loops/gpu/MapGpu.h"

#include <fmt/format.h>

#include <algorithm>

#include "compiler/loops/PerfectNest.h"
#include "compiler/loops/Walk.h"

namespace texc::loops::gpu {

namespace {

// Registers of one SM (every sm_80+ GPU), and what a tiled-contract thread needs without
// spilling: 64 accumulators of the 8x8 block, the operands of one k step and the addresses.
constexpr int kRegistersPerSM = 65536;
constexpr int kMinRegistersPerThread = 128;

const char* reduceName(ReduceKind r) {
  switch (r) {
    case ReduceKind::Sum: return "sum";
    case ReduceKind::Prod: return "product";
    case ReduceKind::Max: return "max";
    case ReduceKind::Min: return "min";
  }
  return "?";
}

std::vector<int64_t> extentsOf(const std::vector<const Loop*>& loops) {
  std::vector<int64_t> e;
  for (const Loop* l : loops) e.push_back(l->extent);
  return e;
}

// "name → expression" for each loop of a flattened nest, outermost first; an expression that is
// the flat index itself reads `whole` instead.
std::vector<std::string> flatNotes(const Kernel& k, const std::vector<const Loop*>& loops, const std::string& flat,
                                   const std::string& whole, const std::string& suffix = "") {
  std::vector<std::string> exprs = unflattenExprs(extentsOf(loops), flat);
  std::vector<std::string> out;
  for (size_t d = 0; d < loops.size(); ++d)
    out.push_back(fmt::format("{} → {}{}", k.varNames[loops[d]->var], exprs[d] == flat ? whole : exprs[d], suffix));
  return out;
}

void mark(const std::vector<const Loop*>& loops, GpuLoop g) {
  for (const Loop* l : loops) const_cast<Loop*>(l)->gpu = g;  // the kernel's own loops, found through its shape
}

void append(std::vector<std::string>& to, const std::vector<std::string>& lines) { to.insert(to.end(), lines.begin(), lines.end()); }

}  // namespace

void mapGpuKernel(const LoopProgram& p, Kernel& k, const GpuMapOptions& o) {
  forEachStmt(k.body, [](Stmt& s) {
    if (Loop* l = s.getIf<Loop>()) l->gpu = GpuLoop::None;
  });
  KernelShape shape = kernelShape(k);
  const Block& inner = *shape.inner;
  GpuMapping m;
  const int b = o.threadsPerBlock;
  m.work = shape.outputs;

  if (std::optional<TiledMatch> t = o.tiledContractions ? matchTiledContraction(p, k, shape, o) : std::nullopt) {
    m.strategy = GpuStrategy::TiledContraction;
    m.threads = t->kStep * t->kStep;
    m.work = t->tiles;
    m.blocks = std::max<int64_t>(1, std::min<int64_t>(t->tiles, o.maxBlocks));
    m.tile = t->tile;
    m.regBlock = t->regBlock;
    m.tileCols = t->tileCols;
    m.regCols = t->regCols;
    m.kStep = t->kStep;
    m.rowOperands = t->rowOperands;
    m.colOperands = t->colOperands;
    m.copies = t->copies;
    m.mma = t->mma;
    m.asyncCopy = t->asyncCopy;
    m.stages = t->stages;
    m.rowPad = t->rowPad;
    m.colPad = t->colPad;
    m.vectorCopies = t->vectorCopies;
    m.window = t->window;
    const Loop& li = *shape.lhs[shape.lhs.size() - 2];
    const Loop& lj = *shape.lhs.back();
    const Loop* window = t->window > 1 ? poolWindow(inner) : nullptr;
    const Block& body = window ? window->body : inner;  // the contraction's
    const Loop& kLoop = body[1].as<Loop>();
    std::vector<const Loop*> outer(shape.lhs.begin(), shape.lhs.end() - 2);
    mark(outer, GpuLoop::Blocks);
    mark({&li}, GpuLoop::TileRows);
    mark({&lj}, GpuLoop::TileCols);
    if (window) mark({window}, GpuLoop::TileCols);
    for (size_t n = 1; n + 1 < body.size(); n += 2) mark({&body[n].as<Loop>()}, GpuLoop::Staged);
    int kT = t->kStep;
    // The column a thread's element is: j itself, or j * W + w with a pool's window in the epilogue.
    const std::string column = window ? fmt::format("{} * {} + {}", k.varNames[lj.var], t->window, k.varNames[window->var])
                                      : k.varNames[lj.var];
    if (m.mma.empty()) {
      m.notes.push_back(fmt::format("{} → row0 + threadIdx.x/{} + {}*r, r < {} (row0: the {}-row tile of blockIdx.x)", k.varNames[li.var], kT,
                                    kT, t->regBlock, t->tile));
      m.notes.push_back(fmt::format("{} → col0 + threadIdx.x%{} + {}*c, c < {} (col0: the {}-column tile of blockIdx.x)", column,
                                    kT, kT, t->regCols, t->tileCols));
    } else {
      m.notes.push_back(fmt::format("{} → row0 + {}*(warp/4) + 16*a + lane/4 (+8), a < {} (row0: the {}-row tile of blockIdx.x)",
                                    k.varNames[li.var], t->tile / 2, t->tile / 32, t->tile));
      m.notes.push_back(fmt::format("{} → col0 + {}*(warp%4) + 8*b + 2*(lane%4) (+1), b < {} (col0: the {}-column tile of blockIdx.x)",
                                    column, t->tile / 4, t->tile / 32, t->tile));
    }
    if (window)
      m.notes.push_back(fmt::format("pool in the epilogue: the {} elements of a window ({}) are neighbouring columns of one warp, "
                                    "combined by {} after the contraction; the window's first column stores",
                                    t->window, k.varNames[window->var],
                                    m.mma.empty() ? fmt::format("{} xor shuffle{}", t->window == 2 ? 1 : t->window == 4 ? 2 : 3,
                                                                t->window == 2 ? "" : "s")
                                                  : t->window == 2 ? std::string("a lane's pair of columns")
                                                                   : fmt::format("a lane's pair and {} xor shuffle{}", t->window == 4 ? 1 : 2,
                                                                                 t->window == 4 ? "" : "s")));
    m.notes.push_back(fmt::format("{} → k0 + kk, k0 in steps of {} staged through shared memory{}", k.varNames[kLoop.var], kT,
                                  !m.asyncCopy     ? ", two buffers: the next step's operands loaded into registers during this step's arithmetic"
                                  : m.stages == 3 ? " by cp.async (sm_80+), three buffers: the next two steps' copies in flight during this "
                                                    "step's arithmetic"
                                                  : " by cp.async (sm_80+), two buffers: the next step's copies in flight during this step's "
                                                    "arithmetic"));
    if (!t->vectorCopies.empty()) {
      std::string names;
      const std::vector<const Expr*> loads = loadsInOrder(kLoopUpdate(kLoop).value);
      for (int n : t->vectorCopies) names += (names.empty() ? "" : ", ") + p.buffers[loads[n]->buffer].name;
      const int perCopy = m.mma.empty() || m.mma == "tf32" ? 4 : 8;
      m.notes.push_back(fmt::format("16-byte copies ({} elements of a row each, cp.async.cg): {}", perCopy == 4 ? "four" : "eight", names));
    }
    if (t->padded)
      m.notes.push_back("padding: where the guard of the term fails, the column operand is staged as 0 (a skipped term adds 0 x "
                        "the row operand: the same sum unless that is infinite or NaN, as in every library that pads with zeros)");
    if (m.mma == "tf32")
      m.notes.push_back(fmt::format("tensor cores (--math=fast): f32 operands staged as f32 and rounded to TF32 (cvt.rna) as the "
                                    "fragments load, 8 warps of {}x{} outputs, each a grid of 16x8 mma.sync.m16n8k8 fragments, two "
                                    "per k-step, with f32 accumulators",
                                    t->tile / 2, t->tile / 4));
    else if (!m.mma.empty())
      m.notes.push_back(fmt::format("tensor cores: {} operands staged as 16-bit values, 8 warps of {}x{} outputs, each a grid of "
                                    "16x8 mma.sync.m16n8k16 fragments with f32 accumulators",
                                    m.mma, t->tile / 2, t->tile / 4));
    if (!outer.empty()) {
      std::string names;
      for (const Loop* l : outer) names += (names.empty() ? "" : ", ") + k.varNames[l->var];
      m.notes.push_back(fmt::format("{} → tile / {}, tile = blockIdx.x, grid-stride over {} tiles", names, t->tilesI * t->tilesJ, t->tiles));
    }
    // Two blocks per SM: while one block waits at its barrier or for its copies, the other
    // computes. The 64K registers of an SM (sm_80 and later) then allow 128 per thread, which the
    // 8x8 register block of FMAs fits (ptxas -v, docs/cuda.md: 127 registers, no spills); the
    // staged tiles take at most 48 KB per block, so two fit in any sm_80+ SM's shared memory.
    // The tensor-core tile fits it when it stages by cp.async (119-125 registers, no spills);
    // staged through registers it keeps one block's budget (held to 128 registers it spilled
    // 76-104 bytes; it uses 168-208 without the bound).
    m.minBlocksPerSM = (m.mma.empty() || m.asyncCopy) && kRegistersPerSM / m.threads >= 2 * kMinRegistersPerThread ? 2 : 1;
    if (m.minBlocksPerSM > 1)
      m.notes.push_back(fmt::format("registers: at most {} per thread (__launch_bounds__({}, {})), so that {} blocks share an SM",
                                    kRegistersPerSM / (m.threads * m.minBlocksPerSM), m.threads, m.minBlocksPerSM, m.minBlocksPerSM));
  } else if (std::optional<OnlineTileMatch> t = o.onlineTiles ? matchOnlineTile(p, k, shape) : std::nullopt) {
    m.strategy = GpuStrategy::OnlineTile;
    m.threads = t->rowsPerBlock * t->lanes;
    m.tile = t->rowsPerBlock;
    m.kStep = t->keysPerStage;
    m.work = t->work;
    m.blocks = std::max<int64_t>(1, std::min<int64_t>(t->work, o.maxBlocks));
    const Loop& rows = *shape.lhs.back();
    std::vector<const Loop*> outer(shape.lhs.begin(), shape.lhs.end() - 1);
    mark(outer, GpuLoop::Blocks);
    mark({&rows}, GpuLoop::TileRows);
    mark({t->keys}, GpuLoop::Staged);
    if (t->lanes > 1)
      m.notes.push_back(fmt::format("{} → tile * {} + threadIdx.x / {} (tile: the query tile of blockIdx.x, {} per batch row)",
                                    k.varNames[rows.var], t->rowsPerBlock, t->lanes, t->tiles));
    else
      m.notes.push_back(fmt::format("{} → tile * {} + threadIdx.x (tile: the query tile of blockIdx.x, {} per batch row)", k.varNames[rows.var],
                                    t->rowsPerBlock, t->tiles));
    if (!t->splitLoops.empty()) {
      std::string kept = p.buffers[k.outputBuffer].name;
      for (int b : t->preloaded) kept += ", " + p.buffers[b].name;
      const std::string element = t->group == 1 ? fmt::format("lane + {}*u", t->lanes)
                                  : t->rowWidth / t->lanes == 4 ? std::string("4*lane + u")
                                                                : fmt::format("4*lane + {}*(u/4) + u%4", 4 * t->lanes);
      m.notes.push_back(fmt::format("the row's {} elements → {}, u < {} (lane = threadIdx.x % {}{}); rows in registers: {}{}",
                                    t->rowWidth, element, t->rowWidth / t->lanes, t->lanes,
                                    t->group == 1 ? "" : "; groups of 4, read from the staged keys by 16-byte shared loads", kept,
                                    t->lanes > 1 ? "; the row's sums combined by xor shuffles among its lanes" : ""));
    }
    if (!outer.empty()) {
      std::string names;
      for (const Loop* l : outer) names += (names.empty() ? "" : ", ") + k.varNames[l->var];
      m.notes.push_back(fmt::format("{} → blockIdx.x / {}, grid-stride over {} blocks' work", names, t->tiles, t->work));
    }
    std::string staged;
    for (size_t slot = 0; slot < t->slotExtents.size(); ++slot)
      staged += fmt::format("{}{} ({} x {})", slot ? ", " : "", p.buffers[t->staged[t->slotFirst[slot]].load->buffer].name, t->keysPerStage,
                            t->slotExtents[slot]);
    m.notes.push_back(fmt::format("{} → j0 + jj, j0 in stages of {} keys; staged in shared memory: {}; the running max and sum in registers",
                                  k.varNames[t->keys->var], t->keysPerStage, staged));
  } else if (std::optional<int64_t> terms = o.blockReductions ? matchBlockReduce(shape) : std::nullopt) {
    m.strategy = GpuStrategy::BlockReduce;
    m.threads = b;
    m.terms = *terms;
    m.blocks = std::max<int64_t>(1, std::min<int64_t>(shape.outputs, o.maxBlocks));
    std::vector<const Loop*> red = perfectNest(inner[1]);
    mark(shape.lhs, GpuLoop::Blocks);
    mark(red, GpuLoop::Threads);
    m.notes = flatNotes(k, shape.lhs, "row", "blockIdx.x");
    m.notes.push_back(fmt::format("row = blockIdx.x, grid-stride by gridDim.x over {} rows", shape.outputs));
    append(m.notes, flatNotes(k, red, "r", "threadIdx.x", " (reduction)"));
    m.notes.push_back(fmt::format("r = threadIdx.x, block-stride by {} over {} terms; warp shuffles, then shared memory", b, *terms));
  } else if (std::optional<RowPlan> row = o.blockReductions && o.rowBlocks ? planRowBlock(p, k, shape, o) : std::nullopt) {
    m.strategy = GpuStrategy::RowBlock;
    m.threads = row->threads;
    m.maxCombined = row->maxReduced;
    m.rowWidth = row->rowWidth;
    m.rowRegisters = row->rowRegisters;
    m.rowFloat4 = row->rowFloat4;
    m.blocks = std::max<int64_t>(1, std::min<int64_t>(shape.outputs, o.maxBlocks));
    mark(shape.lhs, GpuLoop::Blocks);
    m.notes = flatNotes(k, shape.lhs, "row", "blockIdx.x");
    m.notes.push_back(fmt::format("row = blockIdx.x, grid-stride by gridDim.x over {} rows", shape.outputs));
    int phaseNo = 0;
    for (const RowPhase& ph : row->phases) {
      if (ph.nest.empty()) continue;
      ++phaseNo;
      mark(ph.nest, GpuLoop::Threads);
      std::string stride = row->rowFloat4 ? fmt::format("4*(threadIdx.x + {}*(s/4)) + s%4, s < {}", row->threads,
                                                        4 * ((ph.extent / 4 + row->threads - 1) / row->threads))
                                          : fmt::format("threadIdx.x + {}*s, s < {}", row->threads, (ph.extent + row->threads - 1) / row->threads);
      for (const std::string& line : flatNotes(k, ph.nest, "e", stride)) m.notes.push_back(fmt::format("phase {}: {}", phaseNo, line));
      if (ph.nest.size() > 1) m.notes.push_back(fmt::format("phase {}: e = {}", phaseNo, stride));
      std::string what;
      for (int buf : ph.stores) what += fmt::format("{}{}", what.empty() ? "stores " : ", ", p.buffers[buf].name);
      for (size_t n = 0; n < ph.reduced.size(); ++n)
        what += fmt::format("{}{} into acc{}", what.empty() ? "" : ", ", reduceName(ph.kinds[n]), ph.reduced[n]);
      m.notes.push_back(fmt::format("phase {}: {}{}", phaseNo, what.empty() ? "no stores" : what,
                                    ph.reduced.empty() ? "" : ", combined across the block and broadcast"));
    }
    if (row->rowWidth) {
      std::string held;
      for (int b : row->rowRegisters) held += (held.empty() ? "" : ", ") + p.buffers[b].name;
      int64_t per = row->rowFloat4 ? 4 * ((row->rowWidth / 4 + row->threads - 1) / row->threads)
                                   : (row->rowWidth + row->threads - 1) / row->threads;
      m.notes.push_back(fmt::format("rows in registers: {} ({} per thread, s unrolled{}){}", held, per,
                                    row->rowFloat4 ? "; read and written as float4, 4 consecutive elements a group" : "",
                                    row->rowRegisters[0] == k.outputBuffer ? "; the output row written once, after the last phase" : ""));
    }
  } else {
    m.strategy = GpuStrategy::GridStride;
    m.threads = b;
    mark(shape.lhs, GpuLoop::Grid);
    if (std::optional<Float4Match> vec = matchFloat4(p, k, shape)) {
      m.float4 = true;
      m.float4Buffers = vec->buffers;
      m.float4Loads = vec->loads;
      int64_t quads = shape.outputs / 4;
      m.blocks = std::max<int64_t>(1, std::min<int64_t>((quads + b - 1) / b, o.maxBlocks));
      m.notes = flatNotes(k, shape.lhs, "t", "t");
      m.notes.push_back(
          fmt::format("t = 4*q + lane, q = blockIdx.x*{}+threadIdx.x, grid-stride by gridDim.x*{} over {} float4 groups", b, b, quads));
    } else {
      m.blocks = std::max<int64_t>(1, std::min<int64_t>((shape.outputs + b - 1) / b, o.maxBlocks));
      m.notes = flatNotes(k, shape.lhs, "t", fmt::format("blockIdx.x*{}+threadIdx.x", b));
      m.notes.push_back(fmt::format("t = blockIdx.x*{}+threadIdx.x, grid-stride by gridDim.x*{} over {} elements", b, b, shape.outputs));
    }
  }
  k.gpu = std::move(m);
}

int mapGpu(LoopProgram& p, const GpuMapOptions& o) {
  for (Kernel& k : p.kernels) mapGpuKernel(p, k, o);
  return static_cast<int>(p.kernels.size());
}

}  // namespace texc::loops::gpu
