#include "compiler/loops/gpu/GpuLegality.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>

#include "compiler/loops/Contraction.h"
#include "compiler/loops/Equal.h"
#include "compiler/loops/PerfectNest.h"
#include "compiler/loops/Substitute.h"
#include "compiler/loops/Walk.h"
#include "core/IndexAlgebra.h"

namespace texc::loops::gpu {

namespace {

bool isVar(const IndexExpr& ix, int var) { return ix.kind == IndexExpr::Kind::Var && ix.var == var; }

void addAccReads(const Expr& e, std::set<int>& out) {
  forEachExprNode(e, [&](const Expr& n) {
    if (n.kind == ExprKind::AccRead) out.insert(n.acc);
  });
}

// What a loop body touches, at any depth.
struct Touches {
  std::set<int> localAccs, readAccs;
  std::map<int, ReduceKind> updatedAccs;
  bool setsAccs = false;  // an AccSet: a running statistic, sequential in its loop
  std::vector<const Store*> stores;
  std::vector<const Expr*> loads;
};

Touches touches(const Block& body) {
  Touches t;
  forEachStmt(body, [&](const Stmt& s) {
    if (const auto* init = s.getIf<AccInit>()) t.localAccs.insert(init->acc);
    if (const auto* update = s.getIf<AccUpdate>()) t.updatedAccs.emplace(update->acc, update->reduce);
    if (s.is<AccSet>()) t.setsAccs = true;
    if (const auto* store = s.getIf<Store>()) t.stores.push_back(store);
    if (const Expr* value = valueOf(s)) {
      forEachLoad(*value, [&](const Expr& e) { t.loads.push_back(&e); });
      addAccReads(*value, t.readAccs);
    }
  });
  return t;
}

bool isSingleReduction(const Block& inner) {
  return inner.size() == 3 && inner[0].is<AccInit>() && inner[1].is<Loop>() && inner[2].is<Store>();
}

}  // namespace

KernelShape kernelShape(const Kernel& k) {
  KernelShape s;
  if (k.body.size() == 1) s.lhs = perfectNest(k.body[0]);
  s.inner = s.lhs.empty() ? &k.body : &innermostBody(s.lhs);
  for (const Loop* l : s.lhs) s.outputs *= l->extent;
  return s;
}

std::vector<std::string> unflattenExprs(const std::vector<int64_t>& extents, const std::string& flat) {
  std::vector<std::string> out(extents.size());
  int64_t stride = 1;
  for (size_t d = extents.size(); d-- > 0;) {
    std::string e = flat;
    if (stride > 1) e = fmt::format("{} / {}", e, stride);
    if (d > 0) e = stride > 1 ? fmt::format("({}) % {}", e, extents[d]) : fmt::format("{} % {}", e, extents[d]);
    out[d] = e;
    stride *= extents[d];
  }
  return out;
}

std::vector<const Expr*> loadsInOrder(const Expr& e) {
  std::vector<const Expr*> loads;
  forEachLoad(e, [&](const Expr& load) { loads.push_back(&load); });
  return loads;
}

const AccUpdate& kLoopUpdate(const Loop& kLoop) {
  const Guard* pad = kLoop.body[0].getIf<Guard>();
  return pad ? pad->body[0].as<AccUpdate>() : kLoop.body[0].as<AccUpdate>();
}

const Loop* poolWindow(const Block& inner) {
  if (inner.size() != 3 || !inner[0].is<AccInit>() || !inner[1].is<Loop>() || !inner[2].is<Store>()) return nullptr;
  const AccInit& m = inner[0].as<AccInit>();
  const Loop& w = inner[1].as<Loop>();
  if ((m.reduce != ReduceKind::Max && m.reduce != ReduceKind::Min) || w.body.empty()) return nullptr;
  const auto* fold = w.body.back().getIf<AccUpdate>();
  return fold && fold->acc == m.acc && fold->reduce == m.reduce ? &w : nullptr;
}

Expr linearAlong(const LoopProgram& p, const Kernel& k, const Expr& load, int var) {
  const std::vector<int64_t>& shape = p.buffers[load.buffer].shape;
  Expr out = load;
  // The address's part from the indices that read `var`: var itself, plus each such index at
  // var = 0 times its stride (a constant, or another variable's multiple: split-K's slice).
  IndexExpr last = IndexExpr::makeVar(var);
  int64_t first = 0, stride = 1;
  const std::vector<int64_t> zeros(k.varNames.size(), 0);
  auto add = [&](IndexExpr term) {
    IndexExpr sum;
    sum.kind = IndexExpr::Kind::Add;
    sum.ops = {std::move(last), std::move(term)};
    last = std::move(sum);
  };
  for (size_t d = shape.size(); d-- > 0;) {
    if (usesVar(load.index[d], var)) {
      IndexExpr rest = load.index[d];
      substitute(rest, var, IndexExpr::makeConst(0));
      if (rest.kind == IndexExpr::Kind::Add && rest.ops.size() == 2 && rest.ops[1].kind == IndexExpr::Kind::Const && rest.ops[1].constant == 0)
        rest = IndexExpr(rest.ops[0]);  // what var added
      bool constant = true;
      for (size_t v = 0; v < k.varNames.size(); ++v) constant = constant && !usesVar(rest, static_cast<int>(v));
      if (constant) {
        first += stride * evalIndex(rest, zeros);
      } else if (stride == 1) {
        add(std::move(rest));
      } else {
        IndexExpr scaled;
        scaled.kind = IndexExpr::Kind::Mul;
        scaled.constant = stride;
        scaled.ops = {std::move(rest)};
        add(std::move(scaled));
      }
      out.index[d] = IndexExpr::makeConst(0);
    }
    stride *= shape[d];
  }
  if (first != 0) add(IndexExpr::makeConst(first));
  out.index.back() = std::move(last);
  return out;
}

std::optional<TiledMatch> matchTiledContraction(const LoopProgram& p, const Kernel& k, const KernelShape& shape, const GpuMapOptions& o) {
  constexpr int kT = 16;  // threads per tile side, and the k-step
  const std::vector<const Loop*>& lhs = shape.lhs;
  // With a pool in the epilogue, the contraction is the window loop's body.
  const Loop* window = poolWindow(*shape.inner);
  // The body the CPU's tile pass recognises too (Contraction.h), of any reduction.
  std::optional<ReductionBody> body = matchReductionBody(window ? window->body : *shape.inner, /*allowGuard=*/true, /*allowFold=*/window);
  if (lhs.size() < 2 || !body || (window && !body->fold)) return std::nullopt;
  const Loop& kLoop = *body->kLoop;
  const AccUpdate* update = body->update;
  TiledMatch m;
  m.kStep = kT;
  m.copies = body->copies;  // computed once, every copy's accumulator given its value
  const Loop& li = *lhs[lhs.size() - 2];
  const Loop& lj = *lhs.back();
  int vi = li.var, vj = lj.var, vk = kLoop.var;
  // The window's elements are columns too (j * W + w): 2, 4 or 8 of them, neighbours in a warp
  // in both tiles' layouts (the scalar tile's lanes tx, the tensor-core fragment's 8 columns).
  const int vw = window ? window->var : vj;
  m.window = window ? static_cast<int>(window->extent) : 1;
  if (window && m.window != 2 && m.window != 4 && m.window != 8) return std::nullopt;
  int64_t I = li.extent, J = lj.extent * m.window, K = kLoop.extent;
  if (I < kT || J < kT || K < kT) return std::nullopt;
  std::vector<const Expr*> loads = loadsInOrder(update->value);
  for (size_t n = 0; n < loads.size(); ++n) {
    const Expr& e = *loads[n];
    bool ui = usesVar(e, vi), uj = usesVar(e, vj) || usesVar(e, vw), uk = usesVar(e, vk);
    if (uk && ui && !uj) m.rowOperands.push_back(static_cast<int>(n));
    if (uk && uj && !ui) m.colOperands.push_back(static_cast<int>(n));
  }
  if (m.rowOperands.empty() || m.colOperands.empty()) return std::nullopt;
  // The term is a sum of products of exactly one row and one column operand: what the padding
  // and the tensor cores need.
  const Expr& term = update->value;
  const bool oneProduct = update->reduce == ReduceKind::Sum && loads.size() == 2 && m.rowOperands.size() == 1 &&
                          m.colOperands.size() == 1 && term.kind == ExprKind::Binary && term.binaryOp == BinaryOp::Mul &&
                          term.args[0].kind == ExprKind::Load && term.args[1].kind == ExprKind::Load;
  // A guarded term (the implicit GEMM's padding, ImplicitGemmNest.h) is staged as a zero of its
  // column operand where the guard fails: the term must then be that product, and the guard may
  // not read the rows.
  if (body->guard) {
    if (!oneProduct) return std::nullopt;
    for (const GuardCond& c : body->guard->conds)
      if (usesVar(c.index, vi)) return std::nullopt;
    m.padded = true;
  }
  // Tensor cores: that product of one f16 or bf16 row operand and a column operand of the same
  // dtype (the products are exact in f32, the sums f32, as on the CUDA cores); anything else in
  // the term (a scale, a third factor) keeps the scalar tile. With o.tf32 (--math=fast, an
  // opt-in: docs/cuda.md), f32 operands too, rounded to TF32.
  const DType rowType = p.buffers[loads[m.rowOperands[0]]->buffer].dtype;
  if (oneProduct && k.computeType == DType::F32 && (rowType == DType::BF16 || rowType == DType::F16 || (o.tf32 && rowType == DType::F32)) &&
      p.buffers[loads[m.colOperands[0]]->buffer].dtype == rowType)
    m.mma = rowType == DType::BF16 ? "bf16" : rowType == DType::F16 ? "f16" : "tf32";
  // cp.async copies bytes: the scalar tile stages with it when every staged operand is stored
  // in the compute type (f32 or f64: 4- or 8-byte copies), so that nothing needs converting.
  if (m.mma.empty()) {
    m.asyncCopy = true;
    for (const std::vector<int>* side : {&m.rowOperands, &m.colOperands})
      for (int n : *side) m.asyncCopy = m.asyncCopy && p.buffers[loads[n]->buffer].dtype == k.computeType;
  }
  // 16-byte copies (four f32 elements of a row, one cp.async) for an operand that reads the
  // elements along the tile's inner variable (k of A[.., i, k], j of B[.., k, j]) one after
  // another in memory, in groups of four that start 16-byte aligned (buffers are 256-byte
  // aligned), over an extent of a multiple of 4: every group is then wholly in or out of the
  // tensor. Each index reads that variable alone or not at all; the indices that read it
  // address consecutive elements (checked value by value: the implicit GEMM's weights
  // W[k, crs / 9, crs / 3 % 3, crs % 3] are W's row k in order), the others step by multiples of
  // four. A copy per four elements leaves fewer addresses in registers. Not along a pool's
  // window columns (j, w), nor for a padded column operand (its guard is per element).
  auto contiguousAlong = [&](const Expr& e, int var, int64_t extent, int group) {
    if ((window && var == vj) || (body->guard && var == vj) || extent % group != 0) return false;
    const std::vector<int64_t>& shape = p.buffers[e.buffer].shape;
    if (shape.size() != e.index.size()) return false;
    std::vector<int64_t> stride(shape.size(), 1);
    for (size_t d = shape.size() - 1; d-- > 0;) stride[d] = stride[d + 1] * shape[d + 1];
    std::vector<size_t> along;
    for (size_t d = 0; d < e.index.size(); ++d) {
      if (!usesVar(e.index[d], var)) {
        if (stride[d] % group != 0) return false;
        continue;
      }
      // Other variables in that index only as affine terms that step by whole groups (split-K's
      // A[i, 1024 * kslice + k]).
      for (size_t v = 0; v < k.varNames.size(); ++v)
        if (static_cast<int>(v) != var && usesVar(e.index[d], static_cast<int>(v))) {
          AffineForm f = affineForm(e.index[d]);
          if (f.overflow || !f.isAffine() || (f.coeffOf(static_cast<int>(v)) * stride[d]) % group != 0) return false;
        }
      along.push_back(d);
    }
    if (along.empty() || extent > (int64_t{1} << 16)) return false;
    std::vector<int64_t> vals(k.varNames.size(), 0);
    auto address = [&](int64_t x) {
      vals[var] = x;
      int64_t a = 0;
      for (size_t d : along) a += stride[d] * evalIndex(e.index[d], vals);
      return a;
    };
    const int64_t first = address(0);
    if (first % group != 0) return false;
    for (int64_t x = 1; x < extent; ++x)
      if (address(x) != first + x) return false;
    return true;
  };
  if (m.asyncCopy && k.computeType == DType::F32) {
    for (int n : m.rowOperands)
      if (contiguousAlong(*loads[n], vk, K, 4)) m.vectorCopies.push_back(n);
    for (int n : m.colOperands)
      if (contiguousAlong(*loads[n], vj, J, 4)) m.vectorCopies.push_back(n);
  }
  // The tensor-core tile stages by cp.async too when both operands allow 16-byte copies (8
  // halves or 4 floats of a row: the staged values are the stored ones, f16/bf16 bits or f32).
  if (!m.mma.empty()) {
    const int group = 16 / static_cast<int>(dtypeBytes(rowType));
    const int a = m.rowOperands[0], b = m.colOperands[0];
    if (contiguousAlong(*loads[a], vk, K, group) && contiguousAlong(*loads[b], vj, J, group)) {
      m.asyncCopy = true;
      m.vectorCopies = {a, b};
    }
  }
  const bool allVector = m.vectorCopies.size() == m.rowOperands.size() + m.colOperands.size();
  bool rowVector = false;
  for (int n : m.rowOperands) rowVector = rowVector || std::count(m.vectorCopies.begin(), m.vectorCopies.end(), n) > 0;
  // The shared tiles' layout. Scalar tile: the row operands' rows padded by one element against
  // bank conflicts, except where a row operand is copied 16 bytes at a time (its rows must stay
  // 16-byte aligned; in f32 the two rows a warp reads at once then lie 16 words apart, in
  // different banks anyway). Tensor-core tile: its stored values (16-bit, or f32 for TF32), rows
  // of A padded by 16 bytes and of B by 8 elements, so that the fragment loads of the 8 row
  // groups meet no bank twice.
  const int64_t elemBytes = dtypeBytes(m.mma.empty() ? k.computeType : rowType);
  m.rowPad = !m.mma.empty() ? static_cast<int>(16 / elemBytes) : rowVector ? 0 : 1;
  m.colPad = m.mma.empty() ? 0 : 8;
  // 8 rows (or columns) of registers per thread, 128 of the tile, along a dimension of at least
  // 128 outputs, else 4 (64): 128x128 tiles for large products, 64x128 for 64 output channels
  // (a convolution's implicit GEMM: 12 shared loads per 32 FMAs where 64x64 has 8 per 16). The
  // tensor-core tile stays square. The two shared buffers of every operand must fit in the 48 KB
  // a block may declare statically; the larger side gives way first.
  auto stageBytes = [&](int rI, int rJ) {
    return (static_cast<int64_t>(m.rowOperands.size()) * kT * rI * (kT + m.rowPad) +
            static_cast<int64_t>(m.colOperands.size()) * kT * (kT * rJ + m.colPad)) *
           elemBytes;
  };
  auto sharedBytes = [&](int rI, int rJ) { return 2 * stageBytes(rI, rJ); };
  int rI = I >= 128 ? 8 : 4, rJ = J >= 128 ? 8 : 4;
  if (!m.mma.empty()) rI = rJ = std::min(rI, rJ);
  while (sharedBytes(rI, rJ) > 48 * 1024 && (rI > 4 || rJ > 4)) (rI >= rJ ? rI : rJ) = 4;
  if (sharedBytes(rI, rJ) > 48 * 1024) return std::nullopt;
  // At least two blocks per SM where smaller tiles give them (o.multiprocessors: 132, an H100
  // or H200): the larger side gives way first. Matmul 1024 has 64 tiles of 128x128, which leave
  // half of 132 SMs idle; its 256 tiles of 64x64 keep every SM busy at half the register block's
  // reuse (an estimate, not yet timed).
  int64_t batch = 1;
  for (size_t d = 0; d + 2 < lhs.size(); ++d) batch *= lhs[d]->extent;
  auto tilesOf = [&](int a, int b) { return batch * ((I + kT * a - 1) / (kT * a)) * ((J + kT * b - 1) / (kT * b)); };
  while (tilesOf(rI, rJ) < 2 * o.multiprocessors && (rI > 4 || rJ > 4)) {
    if (!m.mma.empty()) rI = rJ = 4;
    else (rI >= rJ ? rI : rJ) = 4;
  }
  m.regBlock = rI;
  m.regCols = rJ;
  m.tile = kT * rI;
  m.tileCols = kT * rJ;
  // Three stages of copies where three fit in the 48 KB (128x128 f32 tiles: 16 KB a stage) and
  // every staged operand is copied 16 bytes at a time: the copies of the next two k-steps are
  // in flight during each step's arithmetic. With element copies (the implicit GEMM's gathered
  // input) the third stage's addresses cost registers: ptxas spilled 52 bytes at 128 registers
  // for the convolution of conv_pool.tex, none with two stages. (A bf16/f16 tensor-core stage of
  // the 128x128 tile is 10.5 KB, a TF32 one 18.9 KB.)
  m.stages = m.asyncCopy && allVector && 3 * stageBytes(rI, rJ) <= 48 * 1024 ? 3 : 2;
  m.tilesI = (I + m.tile - 1) / m.tile;
  m.tilesJ = (J + m.tileCols - 1) / m.tileCols;
  m.tiles = batch * m.tilesI * m.tilesJ;
  return m;
}

std::optional<int64_t> matchBlockReduce(const KernelShape& shape) {
  if (!isSingleReduction(*shape.inner)) return std::nullopt;
  int64_t terms = 1;
  for (const Loop* r : perfectNest((*shape.inner)[1])) terms *= r->extent;
  // Worth it when the reduction is long or the outputs are too few to fill the GPU.
  if (!(terms >= 256 || (terms >= 32 && shape.outputs <= 16384))) return std::nullopt;
  return terms;
}

std::optional<Float4Match> matchFloat4(const LoopProgram& p, const Kernel& k, const KernelShape& shape) {
  const Block& inner = *shape.inner;
  if (inner.size() != 1 || !inner[0].is<Store>() || k.computeType != DType::F32 || shape.outputs % 4 != 0 || shape.outputs < 4 ||
      p.buffers[inner[0].as<Store>().buffer].dtype != DType::F32)
    return std::nullopt;
  // A load of a tensor shaped like the output at exactly the output's indices: element t of the
  // flat index, so four consecutive t are one aligned float4 (buffers are 256-byte aligned).
  std::set<int> buffers;
  Float4Match m;
  std::vector<const Expr*> loads = loadsInOrder(inner[0].as<Store>().value);
  for (size_t n = 0; n < loads.size(); ++n) {
    const Expr& e = *loads[n];
    const Buffer& buf = p.buffers[e.buffer];
    bool identity = buf.dtype == DType::F32 && e.index.size() == shape.lhs.size();
    for (size_t d = 0; identity && d < shape.lhs.size(); ++d)
      identity = isVar(e.index[d], shape.lhs[d]->var) && buf.shape[d] == shape.lhs[d]->extent;
    if (!identity) continue;
    buffers.insert(e.buffer);
    m.loads.push_back(static_cast<int>(n));
  }
  m.buffers.assign(buffers.begin(), buffers.end());
  return m;
}

namespace {

// Fills plan's rows-in-registers fields (GpuLegality.h, RowPlan) where they apply.
void planRowBlockRegisters(const LoopProgram& p, const Kernel& k, const KernelShape& shape, RowPlan& plan) {
  int64_t width = 0;
  for (const RowPhase& ph : plan.phases) {
    if (ph.nest.empty()) continue;
    if (ph.nest.size() != 1 || (width && ph.extent != width)) return;
    width = ph.extent;
  }
  if (width == 0 || (width + plan.threads - 1) / plan.threads > 32) return;
  const int64_t perThread = (width + plan.threads - 1) / plan.threads;
  // Per buffer: whether every access is [i.., j] inside a phase loop, and whether it is written.
  std::map<int, bool> rowForm, written;
  for (const RowPhase& ph : plan.phases)
    for (const RowAccess& a : ph.accesses) {
      bool row = !ph.nest.empty() && a.index->size() == shape.lhs.size() + 1 && isVar(a.index->back(), ph.nest[0]->var);
      for (size_t d = 0; row && d < shape.lhs.size(); ++d) row = isVar((*a.index)[d], shape.lhs[d]->var);
      auto [it, fresh] = rowForm.emplace(a.buffer, row);
      if (!fresh) it->second = it->second && row;
      written[a.buffer] = written[a.buffer] || a.write;
    }
  std::vector<int> held;
  if (rowForm.count(k.outputBuffer) && rowForm[k.outputBuffer] && p.buffers[k.outputBuffer].dtype == k.computeType)
    held.push_back(k.outputBuffer);
  for (const auto& [b, row] : rowForm)
    if (row && !written[b] && static_cast<int64_t>(held.size() + 1) * perThread <= 64) held.push_back(b);
  if (held.empty()) return;
  bool float4 = width % 4 == 0;
  for (int b : held) float4 = float4 && p.buffers[b].dtype == DType::F32 && p.buffers[b].shape.back() % 4 == 0;
  plan.rowWidth = width;
  plan.rowRegisters = std::move(held);
  plan.rowFloat4 = float4;
}

}  // namespace

std::optional<RowPlan> planRowBlock(const LoopProgram& p, const Kernel& k, const KernelShape& shape, const GpuMapOptions& o) {
  const Block& inner = *shape.inner;
  // A single reduction and its store is block-reduce's shape; when that declined (too few
  // terms), one thread per output is the better mapping here too.
  if (isSingleReduction(inner)) return std::nullopt;
  RowPlan plan;
  std::map<int, ReduceKind> rowAccs;
  std::set<int> fresh;  // row accumulators holding their identity (initialised, not yet reduced)
  for (size_t n = 0; n < inner.size(); ++n) {
    const Stmt& s = inner[n];
    RowPhase ph;
    ph.stmt = n;
    if (const auto* init = s.getIf<AccInit>()) {
      rowAccs[init->acc] = init->reduce;
      fresh.insert(init->acc);
    } else if (const auto* store = s.getIf<Store>()) {
      std::set<int> reads;
      addAccReads(store->value, reads);
      for (int acc : reads)
        if (!rowAccs.count(acc)) return std::nullopt;
      for (const Expr* e : loadsInOrder(store->value)) ph.accesses.push_back({e->buffer, false, &e->index});
      ph.stores.insert(store->buffer);
      ph.accesses.push_back({store->buffer, true, &store->index});
    } else if (const auto* loop = s.getIf<Loop>()) {
      ph.nest = perfectNest(s);
      for (const Loop* l : ph.nest) ph.extent *= l->extent;
      Touches t = touches(loop->body);
      if (t.setsAccs) return std::nullopt;  // online softmax's running max and sum: one thread per row
      for (const auto& [acc, kind] : t.updatedAccs) {
        if (t.localAccs.count(acc)) {
          if (rowAccs.count(acc)) return std::nullopt;  // a row accumulator re-initialised per iteration
          continue;
        }
        if (!rowAccs.count(acc) || !fresh.count(acc) || rowAccs[acc] != kind || t.readAccs.count(acc)) return std::nullopt;
        ph.reduced.push_back(acc);
        ph.kinds.push_back(kind);
      }
      for (int acc : ph.reduced) fresh.erase(acc);
      // Every thread holds a row accumulator's value; one initialised inside a loop holds, in
      // each thread, what that thread's last iteration left, so nothing after the loop may read it.
      for (int acc : t.readAccs)
        if (!t.localAccs.count(acc) && !rowAccs.count(acc)) return std::nullopt;
      for (int acc : t.localAccs) rowAccs.erase(acc);
      // Distinct strided iterations must store distinct elements: every strided variable indexes
      // some dimension of every store.
      for (const Store* st : t.stores) {
        for (const Loop* l : ph.nest) {
          bool indexed = std::any_of(st->index.begin(), st->index.end(), [&](const IndexExpr& ix) { return isVar(ix, l->var); });
          if (!indexed) return std::nullopt;
        }
        ph.stores.insert(st->buffer);
        ph.accesses.push_back({st->buffer, true, &st->index});
      }
      // A buffer written in this phase is read only where the same thread writes it.
      for (const Expr* e : t.loads) {
        ph.accesses.push_back({e->buffer, false, &e->index});
        if (!ph.stores.count(e->buffer)) continue;
        bool own = std::any_of(t.stores.begin(), t.stores.end(),
                               [&](const Store* st) { return st->buffer == e->buffer && equal(st->index, e->index); });
        if (!own) return std::nullopt;
      }
    } else {
      return std::nullopt;  // a guard or an update at the row level
    }
    plan.phases.push_back(std::move(ph));
  }
  if (std::none_of(plan.phases.begin(), plan.phases.end(), [](const RowPhase& ph) { return !ph.reduced.empty(); })) return std::nullopt;
  int64_t longest = 1;
  for (const RowPhase& ph : plan.phases) {
    longest = std::max(longest, ph.extent);
    plan.maxReduced = std::max(plan.maxReduced, static_cast<int>(ph.reduced.size()));
  }
  // Rows shorter than a warp: one thread per row (grid-stride) fills the GPU better, unless the
  // rows are too few to fill it either way.
  if (longest < 32 && shape.outputs > 16384) return std::nullopt;
  // The block: the configured size, halved while a whole row still fits in half of it (a warp
  // at least), so that short rows do not leave most threads idle.
  int b = o.threadsPerBlock;
  while (b > 32 && b / 2 >= longest) b /= 2;
  plan.threads = b;
  planRowBlockRegisters(p, k, shape, plan);
  return plan;
}

// Both loops stride the same nest shape over the threads, and b's index is a's with p's strided
// variables read as q's (the stores of a loop are indexed by every strided variable, so an
// element names its iteration, and so its thread).
bool sameThread(const RowPhase& p, const RowAccess& a, const RowPhase& q, const RowAccess& b) {
  if (p.nest.empty() || p.nest.size() != q.nest.size() || a.index->size() != b.index->size()) return false;
  VarRenaming rename;
  for (size_t n = 0; n < p.nest.size(); ++n) {
    if (p.nest[n]->extent != q.nest[n]->extent) return false;
    rename[p.nest[n]->var] = q.nest[n]->var;
  }
  return equal(*a.index, *b.index, rename);
}

// The left-hand variables index the same dimensions in every access of every written buffer, so
// consecutive rows of a block need no barrier between them.
bool rowPrivate(const LoopProgram& p, const KernelShape& shape) {
  std::map<int, std::vector<const std::vector<IndexExpr>*>> accesses;
  std::set<int> written;
  forEachAccess(
      *shape.inner, [&](const Expr& load) { accesses[load.buffer].push_back(&load.index); },
      [&](const Store& store) {
        accesses[store.buffer].push_back(&store.index);
        written.insert(store.buffer);
      });
  for (int b : written)
    for (const Loop* l : shape.lhs) {
      std::set<size_t> dims;
      for (size_t d = 0; d < p.buffers[b].shape.size(); ++d) dims.insert(d);
      for (const std::vector<IndexExpr>* idx : accesses[b])
        for (size_t d = 0; d < idx->size(); ++d)
          if (!isVar((*idx)[d], l->var)) dims.erase(d);
      if (dims.empty()) return false;
    }
  return true;
}

namespace {

// Whether `load` reads `var` in one of its indices.
bool reads(const Expr& load, int var) {
  for (const IndexExpr& ix : load.index)
    if (usesVar(ix, var)) return true;
  return false;
}

// The variables `load` reads.
std::set<int> varsRead(const Expr& load) {
  std::set<int> vars;
  for (const IndexExpr& ix : load.index) {
    std::function<void(const IndexExpr&)> visit = [&](const IndexExpr& e) {
      if (e.kind == IndexExpr::Kind::Var) vars.insert(e.var);
      for (const IndexExpr& o : e.ops) visit(o);
    };
    visit(ix);
  }
  return vars;
}

// Rows in registers: threads per block, the threads the lane rule aims for (132 SMs x 16 warps;
// measured on an H200, attention N=4096 d=64: 8 lanes 1.40 ms, 16 lanes 1.35 ms, 32 lanes
// 1.62 ms), and the most register floats per thread the row arrays may take.
constexpr int kRowThreads = 128;
constexpr int64_t kWantedThreads = 65536;
constexpr int64_t kMaxRowRegisters = 64;

// Whether `ix` is [outer.., i, v]: the left-hand loops' variables in order, then v.
bool rowIndex(const std::vector<IndexExpr>& ix, const KernelShape& shape, int v) {
  if (ix.size() != shape.lhs.size() + 1) return false;
  for (size_t d = 0; d < shape.lhs.size(); ++d)
    if (ix[d].kind != IndexExpr::Kind::Var || ix[d].var != shape.lhs[d]->var) return false;
  return ix.back().kind == IndexExpr::Kind::Var && ix.back().var == v;
}

// Whether `index` is the row's own: the left-hand variables, in order (a per-row statistic).
bool isRowStatistic(const std::vector<IndexExpr>& index, const KernelShape& shape) {
  if (index.size() != shape.lhs.size()) return false;
  for (size_t d = 0; d < index.size(); ++d)
    if (index[d].kind != IndexExpr::Kind::Var || index[d].var != shape.lhs[d]->var) return false;
  return true;
}

// Fills m's rows-in-registers plan (GpuLegality.h) when the row body has its shape; false, and m
// unchanged, otherwise.
bool planRowRegisters(const LoopProgram& p, const Kernel& k, const KernelShape& shape, OnlineTileMatch& m) {
  // The output row is rounded to its type once, at the end: only when it is the compute type.
  if (p.buffers[k.outputBuffer].dtype != k.computeType) return false;
  const Block& inner = *shape.inner;
  const Block* keyBody = &m.keys->body;
  if (keyBody->size() == 1 && (*keyBody)[0].is<Guard>()) keyBody = &(*keyBody)[0].as<Guard>().body;
  int64_t width = 0;
  std::set<const Loop*> split;
  std::vector<std::pair<const Loop*, std::vector<std::pair<int, ReduceKind>>>> reduced;
  std::set<int> rowInputs;
  std::set<int> readElsewhere;  // inputs the row loops also read at another index (a key's row)
  bool ok = true;
  // One region: the row body before the key loop, the key body, or the row body after it.
  auto region = [&](auto begin, auto end, bool after) {
    std::set<int> fresh;  // accumulators set to their identity and not written since
    for (auto it = begin; it != end && ok; ++it) {
      const Stmt& s = *it;
      if (const AccInit* a = s.getIf<AccInit>()) {
        fresh.insert(a->acc);
      } else if (const AccSet* a = s.getIf<AccSet>()) {
        fresh.erase(a->acc);
      } else if (const AccUpdate* a = s.getIf<AccUpdate>()) {
        fresh.erase(a->acc);
      } else if (const Loop* l = s.getIf<Loop>()) {
        if (width == 0) width = l->extent;
        if (l->extent != width) ok = false;
        std::vector<std::pair<int, ReduceKind>> accs;
        for (const Stmt& b : l->body) {
          if (const AccUpdate* u = b.getIf<AccUpdate>()) {
            // A partial per lane, combined after the loop: it must start from the identity.
            if (!fresh.count(u->acc)) ok = false;
            bool seen = false;
            for (auto& [acc, kind] : accs) seen = seen || acc == u->acc;
            if (!seen) accs.push_back({u->acc, u->reduce});
          } else if (const Store* st = b.getIf<Store>()) {
            if (st->buffer != k.outputBuffer || !rowIndex(st->index, shape, l->var)) ok = false;
          } else {
            ok = false;  // a loop, guard or AccSet inside
          }
          if (const Expr* value = valueOf(b))
            forEachLoad(*value, [&](const Expr& e) {
              if (e.buffer == k.outputBuffer && !rowIndex(e.index, shape, l->var)) ok = false;
              if (e.buffer != k.outputBuffer) (rowIndex(e.index, shape, l->var) ? rowInputs : readElsewhere).insert(e.buffer);
            });
        }
        for (auto& [acc, kind] : accs) fresh.erase(acc);  // combined: a second loop would count it again
        split.insert(l);
        if (!accs.empty()) reduced.push_back({l, accs});
      } else if (const Store* st = s.getIf<Store>(); st && after && st->buffer != k.outputBuffer && isRowStatistic(st->index, shape)) {
        // A statistic of the row stored after the pass over the keys (split-keys' running max
        // and sum): one lane of the row stores it.
      } else if (s.is<Store>() || s.is<Guard>()) {
        ok = false;  // a store of one element of the row, or a guard of its own
      }
      if (!s.is<Loop>())
        if (const Expr* value = valueOf(s))
          forEachLoad(*value, [&](const Expr& e) { ok = ok && e.buffer != k.outputBuffer; });
    }
  };
  region(inner.begin(), inner.begin() + static_cast<std::ptrdiff_t>(m.keyStmt), false);
  region(keyBody->begin(), keyBody->end(), false);
  region(inner.begin() + static_cast<std::ptrdiff_t>(m.keyStmt) + 1, inner.end(), true);
  if (!ok || split.empty() || width <= 0) return false;
  // Lanes: a power of two dividing the row, no more than a warp, the fewest that give about
  // kWantedThreads threads; the row arrays must fit kMaxRowRegisters floats.
  int lanes = 1;
  while (lanes < 32 && width % (2 * lanes) == 0 && shape.outputs * lanes < kWantedThreads) lanes *= 2;
  while (lanes < 32 && width % (2 * lanes) == 0 && width / lanes > kMaxRowRegisters) lanes *= 2;
  const int64_t perLane = width / lanes;
  if (perLane > kMaxRowRegisters) return false;
  m.lanes = lanes;
  m.rowWidth = width;
  m.group = lanes > 1 && perLane % 4 == 0 && k.computeType == DType::F32 ? 4 : 1;
  m.splitLoops = std::move(split);
  m.reduced = std::move(reduced);
  // A preloaded input's loads in the row loops all become its registers, so one also read at
  // another index (x[j, 7] beside x[i, u] when one tensor is both queries and keys) stays in
  // memory (random program, seed 91277).
  for (int b : rowInputs)
    if (!readElsewhere.count(b) && perLane * static_cast<int64_t>(m.preloaded.size() + 2) <= kMaxRowRegisters) m.preloaded.push_back(b);
  return true;
}

}  // namespace

std::optional<OnlineTileMatch> matchOnlineTile(const LoopProgram& p, const Kernel& k, const KernelShape& shape) {
  if (shape.lhs.empty()) return std::nullopt;
  const Block& inner = *shape.inner;
  OnlineTileMatch m;
  for (size_t n = 0; n < inner.size(); ++n) {
    const Loop* l = inner[n].getIf<Loop>();
    if (!l || !touches(l->body).setsAccs) continue;
    if (m.keys) return std::nullopt;  // one pass over the keys per row
    m.keys = l;
    m.keyStmt = n;
  }
  if (!m.keys) return std::nullopt;
  const int i = shape.lhs.back()->var, j = m.keys->var;
  std::set<int> outer;
  for (size_t d = 0; d + 1 < shape.lhs.size(); ++d) outer.insert(shape.lhs[d]->var);
  const Block* body = &m.keys->body;
  if (body->size() == 1 && (*body)[0].is<Guard>()) body = &(*body)[0].as<Guard>().body;  // the mask
  std::map<int, int64_t> extents;
  for (const Stmt& st : *body) {
    const Loop* v = st.getIf<Loop>();
    if (!v) continue;
    extents[v->var] = v->extent;
    // Loads under the loop over v and no guard (a guarded load may fall outside its tensor).
    std::function<void(const Block&)> visit = [&](const Block& b) {
      for (const Stmt& x : b) {
        if (x.is<Guard>()) continue;
        if (const Loop* l = x.getIf<Loop>()) {
          visit(l->body);
          continue;
        }
        const Expr* value = valueOf(x);
        if (!value) continue;
        forEachLoad(*value, [&](const Expr& e) {
          if (!reads(e, j) || reads(e, i) || !reads(e, v->var)) return;
          for (int var : varsRead(e))
            if (var != j && var != v->var && !outer.count(var)) return;
          StagedLoad sl{&e, v->var, -1};
          for (size_t q = 0; q < m.staged.size() && sl.slot < 0; ++q)
            if (m.staged[q].load->buffer == e.buffer && m.staged[q].var == v->var && equal(m.staged[q].load->index, e.index))
              sl.slot = m.staged[q].slot;
          if (sl.slot < 0) {
            sl.slot = static_cast<int>(m.slotExtents.size());
            m.slotExtents.push_back(v->extent);
          }
          m.staged.push_back(sl);
        });
      }
    };
    visit(v->body);
  }
  if (m.staged.empty()) return std::nullopt;
  for (size_t slot = 0; slot < m.slotExtents.size(); ++slot)
    for (size_t q = 0; q < m.staged.size(); ++q)
      if (m.staged[q].slot == static_cast<int>(slot)) {
        m.slotFirst.push_back(q);
        break;
      }
  // The stages fit 48 KB of shared memory: 32 keys, or fewer for wide rows.
  int64_t floatsPerKey = 0;
  for (int64_t e : m.slotExtents) floatsPerKey += e;
  const int64_t bytes = k.computeType == DType::F64 ? 8 : 4;
  while (m.keysPerStage > 4 && m.keysPerStage * floatsPerKey * bytes > 48 * 1024) m.keysPerStage /= 2;
  if (m.keysPerStage * floatsPerKey * bytes > 48 * 1024) return std::nullopt;
  const int64_t rows = shape.lhs.back()->extent;
  m.rowsPerBlock = rows >= 64 ? 64 : 32;
  if (planRowRegisters(p, k, shape, m)) m.rowsPerBlock = std::max(1, kRowThreads / m.lanes);
  m.tiles = (rows + m.rowsPerBlock - 1) / m.rowsPerBlock;
  m.work = shape.outputs / rows * m.tiles;
  return m;
}

}  // namespace texc::loops::gpu
