#include "compiler/loops/TileContractions.h"

#include <fmt/format.h>

namespace texc::loops {

namespace {

bool usesVar(const IndexExpr& ix, int var) {
  if (ix.kind == IndexExpr::Kind::Var) return ix.var == var;
  for (const IndexExpr& o : ix.ops)
    if (usesVar(o, var)) return true;
  return false;
}

bool loadUses(const Expr& load, int var) {
  for (const IndexExpr& ix : load.index)
    if (usesVar(ix, var)) return true;
  return false;
}

IndexExpr scaled(int var, int64_t factor) {
  IndexExpr v = IndexExpr::makeVar(var);
  if (factor == 1) return v;
  IndexExpr m;
  m.kind = IndexExpr::Kind::Mul;
  m.constant = factor;
  m.ops.push_back(std::move(v));
  return m;
}

IndexExpr sum(IndexExpr a, IndexExpr b) {
  IndexExpr s;
  s.kind = IndexExpr::Kind::Add;
  s.ops.push_back(std::move(a));
  s.ops.push_back(std::move(b));
  return s;
}

Stmt makeLoop(int var, int64_t extent) {
  Stmt l;
  l.kind = StmtKind::Loop;
  l.var = var;
  l.extent = extent;
  return l;
}

// A contraction found in a kernel: the i loop (whose single statement is the j loop) and the
// parts of the j loop's body.
struct Contraction {
  Stmt* iLoop = nullptr;
  int i = -1, j = -1, k = -1;
  int64_t M = 0, N = 0, K = 0;
  int acc = -1;
  Expr rowOperand, colOperand;  // A[.., i, k] (no j) and B[.., k, j] (j only as the last index)
  Stmt store;
};

bool isF32Load(const LoopProgram& p, const Expr& e) {
  return e.kind == ExprKind::Load && p.buffers[e.buffer].dtype == DType::F32;
}

bool sameIndex(const IndexExpr& a, const IndexExpr& b) {
  if (a.kind != b.kind || a.constant != b.constant || a.var != b.var || a.ops.size() != b.ops.size()) return false;
  for (size_t i = 0; i < a.ops.size(); ++i)
    if (!sameIndex(a.ops[i], b.ops[i])) return false;
  return true;
}

bool sameExpr(const Expr& a, const Expr& b) {
  if (a.kind != b.kind || a.isBool != b.isBool || a.constant != b.constant || a.var != b.var || a.buffer != b.buffer ||
      a.acc != b.acc || a.unaryOp != b.unaryOp || a.binaryOp != b.binaryOp || a.builtin != b.builtin ||
      a.index.size() != b.index.size() || a.args.size() != b.args.size())
    return false;
  for (size_t i = 0; i < a.index.size(); ++i)
    if (!sameIndex(a.index[i], b.index[i])) return false;
  for (size_t i = 0; i < a.args.size(); ++i)
    if (!sameExpr(a.args[i], b.args[i])) return false;
  return true;
}

void renameVar(IndexExpr& ix, int from, int to) {
  if (ix.kind == IndexExpr::Kind::Var && ix.var == from) ix.var = to;
  for (IndexExpr& o : ix.ops) renameVar(o, from, to);
}

void renameVar(Expr& e, int from, int to) {
  if (e.kind == ExprKind::VarValue && e.var == from) e.var = to;
  for (IndexExpr& ix : e.index) renameVar(ix, from, to);
  for (Expr& a : e.args) renameVar(a, from, to);
}

void renameAcc(Expr& e, int from, int to) {
  if (e.kind == ExprKind::AccRead && e.acc == from) e.acc = to;
  for (Expr& a : e.args) renameAcc(a, from, to);
}

// One `acc = 0; for k { acc += X * Y }` pair of a j loop's body, starting at body[at].
const Stmt* sumOfProducts(const std::vector<Stmt>& body, size_t at) {
  if (at + 1 >= body.size()) return nullptr;
  const Stmt& init = body[at];
  const Stmt& kLoop = body[at + 1];
  if (init.kind != StmtKind::AccInit || init.reduce != ReduceKind::Sum) return nullptr;
  if (kLoop.kind != StmtKind::Loop || kLoop.body.size() != 1) return nullptr;
  const Stmt& update = kLoop.body[0];
  if (update.kind != StmtKind::AccUpdate || update.acc != init.acc || update.reduce != ReduceKind::Sum) return nullptr;
  return &kLoop;
}

// Matches `for j { acc = 0; for k { acc += X * Y }; store }` under the loop `iLoop`. Fusion may
// repeat the same reduction for several uses (matmul + bias + gelu reads it twice): repeats of
// the first pair, over the same k and the same product, are read as the first accumulator.
bool match(const LoopProgram& p, Stmt& iLoop, Contraction& c) {
  if (iLoop.kind != StmtKind::Loop || iLoop.body.size() != 1 || iLoop.body[0].kind != StmtKind::Loop) return false;
  Stmt& jLoop = iLoop.body[0];
  if (jLoop.body.size() < 3 || jLoop.body.size() % 2 != 1) return false;
  const Stmt* first = sumOfProducts(jLoop.body, 0);
  const Stmt& store = jLoop.body.back();
  if (!first || store.kind != StmtKind::Store) return false;
  const Stmt& kLoop = *first;
  const Stmt& update = kLoop.body[0];
  Stmt epilogue = store;
  for (size_t at = 2; at + 1 < jLoop.body.size(); at += 2) {
    const Stmt* again = sumOfProducts(jLoop.body, at);
    if (!again || again->extent != kLoop.extent) return false;
    Expr term = again->body[0].value;
    renameVar(term, again->var, kLoop.var);  // the same reduction over its own variable
    if (!sameExpr(term, update.value)) return false;
    renameAcc(epilogue.value, again->body[0].acc, update.acc);
  }
  const Expr& v = update.value;
  if (v.kind != ExprKind::Binary || v.binaryOp != BinaryOp::Mul) return false;
  if (!isF32Load(p, v.args[0]) || !isF32Load(p, v.args[1])) return false;
  int i = iLoop.var, j = jLoop.var, k = kLoop.var;
  // The column operand is contiguous in j: j is exactly its last index and appears nowhere else.
  auto isColumn = [&](const Expr& e) {
    if (e.index.empty() || loadUses(e, i)) return false;
    const IndexExpr& last = e.index.back();
    if (last.kind != IndexExpr::Kind::Var || last.var != j) return false;
    for (size_t d = 0; d + 1 < e.index.size(); ++d)
      if (usesVar(e.index[d], j)) return false;
    return true;
  };
  auto isRow = [&](const Expr& e) { return !loadUses(e, j); };
  if (isRow(v.args[0]) && isColumn(v.args[1])) {
    c.rowOperand = v.args[0];
    c.colOperand = v.args[1];
  } else if (isRow(v.args[1]) && isColumn(v.args[0])) {
    c.rowOperand = v.args[1];
    c.colOperand = v.args[0];
  } else {
    return false;
  }
  c.iLoop = &iLoop;
  c.i = i;
  c.j = j;
  c.k = k;
  c.M = iLoop.extent;
  c.N = jLoop.extent;
  c.K = kLoop.extent;
  c.acc = update.acc;
  c.store = std::move(epilogue);
  return true;
}

// Finds the contraction in the chain of single-statement loops that starts at `body`.
Stmt* findContraction(const LoopProgram& p, std::vector<Stmt>& body, Contraction& c, bool& outermost) {
  outermost = true;
  std::vector<Stmt>* level = &body;
  while (level->size() == 1 && (*level)[0].kind == StmtKind::Loop) {
    Stmt& l = (*level)[0];
    if (match(p, l, c)) return &l;
    level = &l.body;
    outermost = false;
  }
  return nullptr;
}

Stmt makePack(const Contraction& c, int scratch, const TileSchedule& s, int kBlockVar) {
  Stmt pack;
  pack.kind = StmtKind::Pack;
  pack.var = c.k;
  pack.extent = c.K;
  pack.scratch = scratch;
  if (kBlockVar >= 0) {
    pack.kBlock = s.kc;
    pack.kBase = scaled(kBlockVar, s.kc);
  }
  return pack;
}

void tileOne(Kernel& k, const Contraction& c, const TileSchedule& s, bool outermost) {
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
  int rowPack = s.packA ? newScratch(s.mc * window) : -1;
  int colPack = s.pack ? newScratch(window * packCols) : -1;

  Stmt tile;
  tile.kind = StmtKind::Tile;
  tile.var = c.k;
  tile.extent = c.K;
  tile.rowVar = c.i;
  tile.colVar = c.j;
  tile.rowBase = sum(scaled(ic, s.mc), scaled(it, s.mr));
  tile.colBase = jc >= 0 ? sum(scaled(jc, s.nc), scaled(jt, s.nr)) : scaled(jt, s.nr);
  if (jc >= 0) tile.blockCol = scaled(jt, s.nr);
  tile.rows = s.mr;
  tile.cols = s.nr;
  tile.rowExtent = c.M;
  tile.colExtent = c.N;
  tile.acc = c.acc;
  tile.value.kind = ExprKind::Binary;
  tile.value.binaryOp = BinaryOp::Mul;
  tile.value.args = {c.rowOperand, c.colOperand};
  tile.body.push_back(c.store);
  tile.scratch = colPack;
  tile.rowScratch = rowPack;
  tile.blockRow = scaled(it, s.mr);
  if (kb >= 0) {
    tile.kBlock = s.kc;
    tile.kBase = scaled(kb, s.kc);
  }

  Stmt rowTiles = makeLoop(it, s.mc / s.mr);
  rowTiles.body.push_back(std::move(tile));
  Stmt panels = makeLoop(jt, jc >= 0 ? s.nc / s.nr : (c.N + s.nr - 1) / s.nr);
  Stmt colPackStmt;
  if (s.pack) {
    colPackStmt = makePack(c, colPack, s, kb);
    colPackStmt.colVar = c.j;
    colPackStmt.colBase = jc >= 0 ? scaled(jc, s.nc) : scaled(jt, s.nr);
    colPackStmt.cols = packCols;
    colPackStmt.rows = jc >= 0 ? s.nr : 0;  // micro-panels of nr columns
    colPackStmt.colExtent = c.N;
    colPackStmt.value = c.colOperand;
    if (jc < 0) panels.body.push_back(std::move(colPackStmt));
  }
  panels.body.push_back(std::move(rowTiles));

  // The A block: packed once per row block (and k block), reused by every column panel.
  Stmt rowPackStmt;
  if (s.packA) {
    rowPackStmt = makePack(c, rowPack, s, kb);
    rowPackStmt.rowVar = c.i;
    rowPackStmt.rowBase = scaled(ic, s.mc);
    rowPackStmt.rows = s.mc;
    rowPackStmt.cols = s.mr;
    rowPackStmt.rowExtent = c.M;
    rowPackStmt.value = c.rowOperand;
  }

  if (s.columnsOuter && jc >= 0 && kb >= 0 && s.pack && s.packA) {
    // Column blocks outermost (BLIS's order): each B block is packed once, and the A blocks are
    // packed again for every column block instead.
    Stmt rowBlocks = makeLoop(ic, (c.M + s.mc - 1) / s.mc);
    rowBlocks.body.push_back(std::move(rowPackStmt));
    rowBlocks.body.push_back(std::move(panels));
    Stmt kBlocks = makeLoop(kb, (c.K + s.kc - 1) / s.kc);
    kBlocks.body.push_back(std::move(colPackStmt));
    kBlocks.body.push_back(std::move(rowBlocks));
    Stmt colBlocks = makeLoop(jc, (c.N + s.nc - 1) / s.nc);
    colBlocks.parallel = c.iLoop->parallel;
    colBlocks.body.push_back(std::move(kBlocks));
    if (outermost && colBlocks.parallel) k.parallelExtent = colBlocks.extent;
    *c.iLoop = std::move(colBlocks);
    return;
  }

  if (jc >= 0) {
    Stmt colBlocks = makeLoop(jc, (c.N + s.nc - 1) / s.nc);
    if (s.pack) colBlocks.body.push_back(std::move(colPackStmt));
    colBlocks.body.push_back(std::move(panels));
    panels = std::move(colBlocks);
  }
  std::vector<Stmt> perBlock;
  if (s.packA) perBlock.push_back(std::move(rowPackStmt));
  perBlock.push_back(std::move(panels));
  Stmt blocks = makeLoop(ic, (c.M + s.mc - 1) / s.mc);
  blocks.parallel = c.iLoop->parallel;
  if (kb >= 0) {
    Stmt kBlocks = makeLoop(kb, (c.K + s.kc - 1) / s.kc);
    kBlocks.body = std::move(perBlock);
    blocks.body.push_back(std::move(kBlocks));
  } else {
    blocks.body = std::move(perBlock);
  }
  if (outermost && blocks.parallel) k.parallelExtent = blocks.extent;
  *c.iLoop = std::move(blocks);
}

bool loadsBuffer(const Expr& e, int buffer) {
  if (e.kind == ExprKind::Load && e.buffer == buffer) return true;
  for (const Expr& a : e.args)
    if (loadsBuffer(a, buffer)) return true;
  return false;
}

// k blocks keep partial sums in the output element itself: it must hold f32 exactly, be
// contiguous in j, and not be read by the epilogue.
bool canBlockK(const LoopProgram& p, const Contraction& c) {
  const Stmt& st = c.store;
  if (p.buffers[st.buffer].dtype != DType::F32 || st.index.empty() || loadsBuffer(st.value, st.buffer)) return false;
  const IndexExpr& last = st.index.back();
  if (last.kind != IndexExpr::Kind::Var || last.var != c.j) return false;
  bool rowSeen = false;
  for (size_t d = 0; d + 1 < st.index.size(); ++d) {
    if (usesVar(st.index[d], c.j)) return false;
    rowSeen = rowSeen || (st.index[d].kind == IndexExpr::Kind::Var && st.index[d].var == c.i);
  }
  return rowSeen;
}

}  // namespace

int tileContractions(LoopProgram& p, const MachineInfo& machine, const ScheduleOverrides& overrides) {
  if (overrides.tile == false) return 0;
  int tiled = 0;
  for (Kernel& k : p.kernels) {
    if (k.computeType != DType::F32) continue;  // the micro-kernel is written for f32
    Contraction c;
    bool outermost = false;
    if (!findContraction(p, k.body, c, outermost)) continue;
    TileSchedule s = chooseTileSchedule(machine, c.M, c.N, c.K, overrides, canBlockK(p, c));
    tileOne(k, c, s, outermost);
    k.schedule = s.explanation;
    ++tiled;
  }
  return tiled;
}

}  // namespace texc::loops
