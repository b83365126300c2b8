#include "compiler/loops/PipelineRowStores.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "compiler/loops/Build.h"
#include "compiler/loops/Substitute.h"
#include "compiler/loops/Walk.h"
#include "compiler/loops/transforms/LoopTransforms.h"

namespace texc::loops {

namespace {

// Rows per block at least this, and at least this many blocks for the threads to share.
constexpr int64_t kMinRowsPerBlock = 4;
constexpr int64_t kMinBlocks = 64;

IndexExpr plus(IndexExpr a, IndexExpr b) {
  if (b.kind == IndexExpr::Kind::Const && b.constant == 0) return a;
  IndexExpr e;
  e.kind = IndexExpr::Kind::Add;
  e.ops = {std::move(a), std::move(b)};
  return e;
}

bool isVar(const IndexExpr& ix, int var) { return ix.kind == IndexExpr::Kind::Var && ix.var == var; }

// The row's staged buffers read by `store`: local rows of the loop's extent, which `row` (the
// row's statements before the store loop) writes; nullopt when the store reads something else
// the row writes, or reads a staged buffer at another index than the store loop's variable.
std::optional<std::set<int>> stagedReads(const LoopProgram& p, const Block& row, const Store& store, const Loop& storeLoop) {
  std::set<int> written;
  forEachAccess(row, [](const Expr&) {}, [&](const Store& st) { written.insert(st.buffer); });
  if (written.count(store.buffer)) return std::nullopt;
  std::set<int> staged;
  bool ok = true;
  forEachLoad(store.value, [&](const Expr& l) {
    if (!written.count(l.buffer)) return;
    const Buffer& b = p.buffers[l.buffer];
    if (b.kind != BufferKind::Local || b.shape.size() != 1 || b.shape[0] != storeLoop.extent || l.index.size() != 1 ||
        !isVar(l.index[0], storeLoop.var))
      ok = false;
    else
      staged.insert(l.buffer);
  });
  if (!ok || staged.empty()) return std::nullopt;
  return staged;
}

// Whether every access to the staged buffers in `row` lies in `pass` (its last statement) at
// [pass.var], and no other kernel touches them.
bool stagedOnlyInPass(const LoopProgram& p, const Kernel& k, const Block& row, const std::set<int>& staged) {
  const Loop& pass = row.back().as<Loop>();
  bool ok = true;
  auto check = [&](int buffer, const std::vector<IndexExpr>& index, bool inPass) {
    if (!staged.count(buffer)) return;
    ok = ok && inPass && index.size() == 1 && isVar(index[0], pass.var);
  };
  for (size_t s = 0; s < row.size(); ++s) {
    const bool inPass = s + 1 == row.size();
    forEachAccess(std::vector<Stmt>{row[s]}, [&](const Expr& l) { check(l.buffer, l.index, inPass); },
                  [&](const Store& st) { check(st.buffer, st.index, inPass); });
  }
  for (const Kernel& other : p.kernels) {
    if (&other == &k) continue;
    forEachAccess(other.body, [&](const Expr& l) { ok = ok && !staged.count(l.buffer); },
                  [&](const Store& st) { ok = ok && !staged.count(st.buffer); });
  }
  return ok;
}

// Points every access of a staged buffer under `block` / in `e` at its other half.
void useHalf(Expr& e, const std::map<int, int>& other) {
  forEachExprNode(e, [&](Expr& n) {
    if (n.kind == ExprKind::Load && other.count(n.buffer)) n.buffer = other.at(n.buffer);
  });
}
void useHalf(Block& block, const std::map<int, int>& other) {
  forEachStmt(block, [&](Stmt& s) {
    if (Store* st = s.getIf<Store>(); st && other.count(st->buffer)) st->buffer = other.at(st->buffer);
    if (Expr* v = valueOf(s)) useHalf(*v, other);
  });
}

bool pipelineOne(LoopProgram& p, Kernel& k) {
  if (k.body.size() != 1 || !k.body[0].is<Loop>()) return false;
  const Loop& rows = k.body[0].as<Loop>();
  if (!rows.parallel || rows.gpu != GpuLoop::None || rows.pairs || rows.body.size() < 2) return false;
  const Loop* store = rows.body.back().getIf<Loop>();
  const Loop* pass = rows.body[rows.body.size() - 2].getIf<Loop>();
  if (!store || !pass) return false;
  auto plainVector = [](const Loop& l) { return l.vectorize && !l.scalar && !l.pairs && !l.parallel && l.gpu == GpuLoop::None; };
  if (!plainVector(*store) || !plainVector(*pass) || store->extent != pass->extent) return false;
  if (store->body.size() != 1 || !store->body[0].is<Store>() || !store->body[0].as<Store>().streaming) return false;
  for (const Stmt& c : pass->body)
    if (!c.is<Store>() && !c.is<AccUpdate>() && !c.is<AccSet>()) return false;
  const Store& out = store->body[0].as<Store>();
  const Block row(rows.body.begin(), rows.body.end() - 1);
  std::optional<std::set<int>> staged = stagedReads(p, row, out, *store);
  if (!staged || !stagedOnlyInPass(p, k, row, *staged)) return false;

  int64_t blocks = kMinBlocks;
  while (blocks < rows.extent && rows.extent % blocks != 0) ++blocks;
  const int64_t perBlock = rows.extent / blocks;
  if (blocks >= rows.extent || perBlock < kMinRowsPerBlock) return false;

  // The accumulators the stores read, and their copies that carry them to the next row.
  std::map<int, int> prev;
  forEachExprNode(out.value, [&](const Expr& e) {
    if (e.kind == ExprKind::AccRead && !prev.count(e.acc)) prev[e.acc] = -1;
  });
  for (auto& [acc, copy] : prev) copy = k.numAccs++;
  // The staged rows' second halves: separate local arrays, so that the two never alias.
  std::map<int, int> otherHalf;
  for (int b : *staged) {
    const Buffer copy = p.buffers[b];
    otherHalf[b] = addLocalBuffer(p, copy.name, copy.shape, copy.dtype);
  }

  const std::string rowName = k.varNames[rows.var];
  const int blockVar = nest::addVar(k, rowName + "b");
  const int stepVar = nest::addVar(k, rowName + "r");
  const IndexExpr first = affineIndex(perBlock, blockVar, 0);  // the block's first row
  auto rowOf = [&](const IndexExpr& offset) { return plus(first, offset); };
  // The stores of row `storedRow` (an offset in the block) from half `half`, in the loop over `column`.
  auto storesOf = [&](const IndexExpr& storedRow, int half, int column) {
    Stmt s = out;
    substitute(s, store->var, IndexExpr::makeVar(column));
    substitute(s, rows.var, rowOf(storedRow));
    Expr& value = s.as<Store>().value;
    if (half == 1) useHalf(value, otherHalf);
    for (const auto& [acc, copy] : prev) renameAcc(value, acc, copy);
    return s;
  };
  // Row q of the block (its offset from the first), in half q % 2 of the staged rows, with the
  // stores of the row before it (in the other half) in its last pass.
  auto rowAt = [&](const IndexExpr& q, int half, const IndexExpr* storedRow) {
    Block b = row;
    substitute(b, rows.var, rowOf(q));
    if (half == 1) useHalf(b, otherHalf);
    if (storedRow) b.back().as<Loop>().body.push_back(storesOf(*storedRow, 1 - half, b.back().as<Loop>().var));
    for (const auto& [acc, copy] : prev) b.push_back(AccSet{copy, build::accRead(acc)});
    return b;
  };
  // Row 0; then rows 1, 2, ... two per step (each half a constant in its body); an odd row left
  // over; then the last row's stores.
  auto offset = [&](int64_t c) { return plus(affineIndex(2, stepVar, 0), IndexExpr::makeConst(c)); };
  Loop block;
  block.var = blockVar;
  block.extent = blocks;
  block.parallel = true;
  block.body = rowAt(IndexExpr::makeConst(0), 0, nullptr);
  const int64_t rest = perBlock - 1, pairs = rest / 2;
  Loop steps;
  steps.var = stepVar;
  steps.extent = pairs;
  const IndexExpr before0 = offset(0), before1 = offset(1);
  steps.body = rowAt(offset(1), 1, &before0);
  for (Stmt& st : rowAt(offset(2), 0, &before1)) steps.body.push_back(std::move(st));
  block.body.push_back(std::move(steps));
  if (rest % 2 == 1) {
    const IndexExpr before = IndexExpr::makeConst(perBlock - 2);
    for (Stmt& st : rowAt(IndexExpr::makeConst(perBlock - 1), 1, &before)) block.body.push_back(std::move(st));
  }
  Loop last = *store;
  last.body = {storesOf(IndexExpr::makeConst(perBlock - 1), static_cast<int>((perBlock - 1) % 2), store->var)};
  block.body.push_back(std::move(last));

  k.streaming += fmt::format(
      "; rows pipelined: each row's stores run inside the next row's last pass, beside its arithmetic (blocks of {} rows, {} blocks)",
      perBlock, blocks);
  k.body = {Stmt(std::move(block))};
  nest::refreshParallelExtent(k);
  return true;
}

}  // namespace

int pipelineRowStores(LoopProgram& p) {
  int pipelined = 0;
  for (Kernel& k : p.kernels) pipelined += pipelineOne(p, k) ? 1 : 0;
  return pipelined;
}

}  // namespace texc::loops
