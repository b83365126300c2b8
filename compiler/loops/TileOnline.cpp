#include "compiler/loops/TileOnline.h"

#include <fmt/format.h>

#include <cmath>
#include <numeric>

#include "compiler/loops/Build.h"
#include "compiler/loops/Contraction.h"
#include "compiler/loops/MaskBounds.h"
#include "compiler/loops/PerfectNest.h"
#include "compiler/loops/Substitute.h"
#include "compiler/loops/Walk.h"
#include "compiler/loops/transforms/LoopTransforms.h"

namespace texc::loops {

namespace {

using namespace build;

// ---- building blocks -----------------------------------------------------------------------

IndexExpr combined(IndexExpr::Kind kind, IndexExpr a, IndexExpr b) {
  IndexExpr e;
  e.kind = kind;
  e.ops.push_back(std::move(a));
  e.ops.push_back(std::move(b));
  return e;
}
IndexExpr plus(IndexExpr a, IndexExpr b) { return combined(IndexExpr::Kind::Add, std::move(a), std::move(b)); }
IndexExpr minus(IndexExpr a, IndexExpr b) { return combined(IndexExpr::Kind::Sub, std::move(a), std::move(b)); }
IndexExpr var(int v) { return IndexExpr::makeVar(v); }

Loop loopOver(int v, int64_t extent, Block body, bool vectorize = false) {
  Loop l;
  l.var = v;
  l.extent = extent;
  l.vectorize = vectorize;
  l.body = std::move(body);
  return l;
}
// `body` under `conds`, or its one statement when there is no condition.
Stmt guarded(std::vector<GuardCond> conds, Block body, std::string skips) {
  if (conds.empty()) return std::move(body.at(0));
  Guard g;
  g.conds = std::move(conds);
  g.body = std::move(body);
  g.skips = std::move(skips);
  return g;
}
Block one(Stmt s) {
  Block b;
  b.push_back(std::move(s));
  return b;
}

// The mask's conditions as one boolean value (0 <= index < extent for each).
Expr maskValue(const std::vector<GuardCond>& conds) {
  Expr all;
  bool first = true;
  for (const GuardCond& c : conds) {
    Expr in = binary(BinaryOp::Ge, indexValue(c.index), constant(0));
    if (c.extent != kNoUpperBound)
      in = binary(BinaryOp::And, std::move(in), binary(BinaryOp::Lt, indexValue(c.index), constant(static_cast<double>(c.extent))));
    all = first ? std::move(in) : binary(BinaryOp::And, std::move(all), std::move(in));
    first = false;
  }
  return all;
}

// ---- the one-pass kernel, as LowerToLoops::runOnline emits it -------------------------------

struct OnePass {
  std::vector<const Loop*> rows;  // the row loops, outermost first; the last is the query row
  int i = -1, j = -1;             // query row and key
  int64_t Nq = 0, Nk = 0;
  std::vector<GuardCond> mask;    // the key loop's guard: the mask's affine comparisons
  int dot = -1;                   // the scores' dot product
  int d = -1;                     // its reduction variable
  int64_t D = 0;
  Expr qOperand, kOperand;        // read over (i, d) and (j, d)
  Expr score;                     // the score, reading the dot product
  int c = -1;                     // the output's column
  int64_t Dv = 0;
  Expr weight;                    // the weights' value at (j, c): V[.., j, c]
  int out = -1;
  std::vector<IndexExpr> outIndex;  // over the row variables and c
  bool normalised = false;          // divided by the sum (attention), or the weighted sum as it is
};

bool holdsAccSet(const Block& b) {
  return !walk(b, [](const Stmt& s) { return s.is<AccSet>() ? WalkAction::Stop : WalkAction::Advance; });
}

// Whether `e` reads any accumulator other than `allowed`.
bool readsOtherAcc(const Expr& e, int allowed) {
  bool other = false;
  forEachExprNode(e, [&](const Expr& n) { other = other || (n.kind == ExprKind::AccRead && n.acc != allowed); });
  return other;
}

// A perfect nest of one loop holding one store.
const Store* singleStoreLoop(const Stmt& s, const Loop*& loop) {
  std::vector<const Loop*> nest = perfectNest(s);
  if (nest.size() != 1 || nest[0]->body.size() != 1) return nullptr;
  loop = nest[0];
  return nest[0]->body[0].getIf<Store>();
}

// Matches kernel `k`; returns why it does not fit the tiled form ("" when it does).
std::string matchOnePass(const LoopProgram& p, const Kernel& k, OnePass& o) {
  if (k.computeType != DType::F32) return "computed in f64 (the micro-kernel is written for f32)";
  if (k.body.size() != 1) return "not one row nest";
  o.rows = perfectNest(k.body[0]);
  if (o.rows.empty()) return "a single row (no query rows to block)";
  const Block& rowBody = o.rows.back()->body;
  o.i = o.rows.back()->var;
  o.Nq = o.rows.back()->extent;
  size_t at = 0;
  while (at < rowBody.size() && !(rowBody[at].is<Loop>() && holdsAccSet(rowBody[at].as<Loop>().body))) ++at;
  if (at == rowBody.size()) return "no pass over the keys";
  const Loop& keys = rowBody[at].as<Loop>();
  o.j = keys.var;
  o.Nk = keys.extent;
  const Block* inner = &keys.body;
  if (inner->size() == 1 && (*inner)[0].is<Guard>()) {
    o.mask = (*inner)[0].as<Guard>().conds;
    inner = &(*inner)[0].as<Guard>().body;
  }
  const Block& b = *inner;
  // acc = 0; for d { acc += X * Y }; s' := score; m' := max(m, s'); a; e; l; for c { o = o a + e w }; m := m'
  // The weighted sum's update stores into the output row; logsumexp stores only after the keys.
  const bool weighted = !walk(b, [](const Stmt& x) { return x.is<Store>() ? WalkAction::Stop : WalkAction::Advance; });
  if (!weighted) return "logsumexp (no weighted sum to tile)";
  if (b.size() != 9) return "its scores are not one dot product (Q K^T)";
  const auto* init = b[0].getIf<AccInit>();
  const Loop* dLoop = b[1].getIf<Loop>();
  if (!init || init->reduce != ReduceKind::Sum || !dLoop || dLoop->body.size() != 1) return "its scores are not one dot product (Q K^T)";
  const auto* update = dLoop->body[0].getIf<AccUpdate>();
  if (!update || update->acc != init->acc || update->reduce != ReduceKind::Sum || update->value.kind != ExprKind::Binary ||
      update->value.binaryOp != BinaryOp::Mul)
    return "its scores are not one dot product (Q K^T)";
  o.dot = init->acc;
  o.d = dLoop->var;
  o.D = dLoop->extent;
  const Expr& x = update->value.args[0];
  const Expr& y = update->value.args[1];
  if (!isTileOperandLoad(p, x) || !isTileOperandLoad(p, y)) return "the dot product's operands are not f32, f16 or bf16 tensor reads";
  auto isQuery = [&](const Expr& e) { return loadUses(e, o.i) && !loadUses(e, o.j); };
  auto isKey = [&](const Expr& e) { return loadUses(e, o.j) && !loadUses(e, o.i); };
  if (isQuery(x) && isKey(y)) {
    o.qOperand = x;
    o.kOperand = y;
  } else if (isQuery(y) && isKey(x)) {
    o.qOperand = y;
    o.kOperand = x;
  } else {
    return "the dot product does not read one operand per query row and one per key";
  }
  const auto* sets = &b[2];
  for (int s : {0, 1, 2, 3, 4})
    if (!sets[s].is<AccSet>()) return "not the one-pass form";
  if (!b[8].is<AccSet>()) return "not the one-pass form";
  o.score = sets[0].as<AccSet>().value;
  if (readsOtherAcc(o.score, o.dot)) return "its scores read another reduction";
  const Loop* cLoop = nullptr;
  const Store* rescale = singleStoreLoop(b[7], cLoop);
  if (!rescale) return b[7].is<Store>() ? "one weighted sum per row (no column loop for the P V tile)" : "the output has more than one column variable";
  // o = o * a + e * w
  const Expr& v = rescale->value;
  if (v.kind != ExprKind::Binary || v.binaryOp != BinaryOp::Add || v.args[1].kind != ExprKind::Binary || v.args[1].args.size() != 2)
    return "not the one-pass form";
  o.weight = v.args[1].args[1];
  o.c = cLoop->var;
  o.Dv = cLoop->extent;
  o.out = rescale->buffer;
  o.outIndex = rescale->index;
  if (p.buffers[o.out].dtype != DType::F32) return "the output is not f32 (it holds the running sums)";
  if (!isTileOperandLoad(p, o.weight) || !loadUses(o.weight, o.j) || loadUses(o.weight, o.i) || readsOtherAcc(o.weight, -1))
    return "the weights are not an f32, f16 or bf16 tensor read per key (V[j, c])";
  // After the keys: the division by l (weighted average), or nothing (weighted sum).
  const size_t after = rowBody.size() - at - 1;
  if (after > 1) return "not the one-pass form";
  o.normalised = after == 1;
  // The mask compares index values as floats: exact below 2^24.
  if (o.Nq >= (int64_t{1} << 24) || o.Nk >= (int64_t{1} << 24)) return "more than 2^24 rows or keys";
  return "";
}

// ---- the schedule ----------------------------------------------------------------------------

struct OnlineSchedule {
  int64_t mr = 6, nr = 16;  // register tile: rows x columns
  int64_t mq = 48;          // query rows per block: a multiple of nr (S^T tile columns) and mr (P V tile rows)
  int64_t nc = 66;          // keys per tile: a multiple of mr (S^T tile rows)
  bool pairBlocks = false;  // run blocks p and QB - 1 - p together (a mask makes their work uneven)
  // Q and K bf16 on a CPU with vdpbf16ps (16-float vectors): S^T from bf16 pairs along d, the
  // Q block and each key tile's K packed as pairs (TileContractions.cpp's bf16 path).
  bool bf16Pairs = false;
  std::string explanation;
};

int64_t roundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// Keys per tile on every CPU. Each tile rescales the running maximum and sums, so the tile's
// size decides the bits of the result: the same size everywhere gives the same bits with AVX2's
// 6-row register tiles and AVX-512's 8-row ones (docs/architecture.md, "Summation order").
constexpr int64_t kKeyTile = 64;

OnlineSchedule chooseSchedule(const LoopProgram& p, const MachineInfo& m, const OnePass& o, const ScheduleOverrides& ov) {
  OnlineSchedule s;
  // The contraction rule's register tile (Schedule.h) with two vectors of columns: blocks of
  // 64 keys and 48 query rows are multiples of it (three vectors would need 48 and 96).
  const RegisterTile rt = chooseRegisterTile(m, 2);
  s.nr = ov.nr.value_or(rt.nr);
  s.mr = ov.mr.value_or(rt.mr);
  const int64_t unit = std::lcm(s.mr, s.nr);
  // About 48 query rows and 64 keys: the S tile (nc x mq), the packed Q block (D x mq), the
  // block's output rows (mq x Dv) and a K or V tile (nc x D) are each 12-17 KiB at D = 64, so
  // each phase works out of L1 and L2.
  s.mq = roundUp(std::min(ov.mc.value_or(48), roundUp(o.Nq, unit)), unit);
  // All the keys in one tile when they are fewer (any such tile gives the same bits), else
  // kKeyTile, whose last S^T tile has fewer rows when mr does not divide it (AVX2: 10 x 6 + 4).
  s.nc = ov.nc ? roundUp(std::min(*ov.nc, roundUp(o.Nk, s.mr)), s.mr) : o.Nk <= kKeyTile ? roundUp(o.Nk, s.mr) : kKeyTile;
  s.pairBlocks = !o.mask.empty() && o.rows.size() == 1 && o.rows.front()->parallel;
  s.bf16Pairs = m.bf16Dot && m.vectorFloats == 16 && s.nr % 16 == 0 && p.buffers[o.qOperand.buffer].dtype == DType::BF16 &&
                p.buffers[o.kOperand.buffer].dtype == DType::BF16;
  s.explanation = fmt::format(
      "online softmax tiled: blocks of {} query rows x tiles of {} keys; S^T = K Q^T in {}x{} register tiles (keys x "
      "queries) from Q packed once per block, the softmax update as vector loops over the block's rows, O += P V in {}x{} "
      "tiles (rows x columns); S and the running max, sum and rescale factor are local ({} KiB per thread)",
      s.mq, s.nc, s.mr, s.nr, s.mr, s.nr, (s.nc * s.mq + 4 * s.mq) * 4 / 1024);
  if (s.nc % s.mr != 0) s.explanation += fmt::format(" (the last S^T tile of each key tile {}x{})", s.nc % s.mr, s.nr);
  if (s.bf16Pairs)
    s.explanation += "; Q and K are bf16 on a CPU with AVX512-BF16: the Q block and each key tile's K packed as bf16 pairs along d, S^T "
                     "on vdpbf16ps (two d steps per instruction, sums in f32)";
  return s;
}

// ---- the rewrite ---------------------------------------------------------------------------

// The key tiles that can hold an (i, j) passing the mask: for each condition 0 <= e < extent,
// e affine in i and j, its largest value over the block (i in [qb mq, qb mq + mq)) and tile
// (j in [kt nc, kt nc + nc)) must be >= 0 and its smallest < extent. The conditions are
// checked one by one, so the guard may keep a tile that no single (i, j) passes; it never drops
// one that some (i, j) passes.
std::vector<GuardCond> liveTile(const OnePass& o, const OnlineSchedule& s, int qb, int kt) {
  std::vector<GuardCond> conds;
  for (const GuardCond& c : o.mask) {
    std::optional<MaskCorners> m = maskCorners(c, o.i, o.j, s.mq, s.nc);
    if (!m) continue;
    // e at the corner (qb mq + row, kt nc + key); a bare qb mq where the offset is 0.
    auto at = [&](int64_t row, int64_t key) {
      auto first = [](int64_t size, int v, int64_t offset) {
        return offset == 0 ? affineIndex(size, v, 0) : plus(affineIndex(size, v, 0), IndexExpr::makeConst(offset));
      };
      IndexExpr e = c.index;
      substitute(e, o.i, first(s.mq, qb, row));
      substitute(e, o.j, first(s.nc, kt, key));
      return e;
    };
    conds.push_back({at(m->rowOfLargest, m->keyOfLargest), kNoUpperBound});
    if (c.extent != kNoUpperBound)
      conds.push_back({minus(IndexExpr::makeConst(c.extent - 1), at(m->rowOfSmallest, m->keyOfSmallest)), kNoUpperBound});
  }
  return conds;
}

int addLocal(LoopProgram& p, const std::string& name, std::vector<int64_t> shape) {
  return addLocalBuffer(p, name, std::move(shape), DType::F32);
}

void tileOne(LoopProgram& p, Kernel& k, const OnePass& o, const OnlineSchedule& s) {
  auto newVar = [&](const std::string& name) {
    k.varNames.push_back(name);
    return static_cast<int>(k.varNames.size()) - 1;
  };
  const std::string iName = k.varNames[o.i], jName = k.varNames[o.j];
  const int qb = newVar(iName + "_b"), kt = newVar(jName + "_t"), qp = newVar(iName + "_p"), kr = newVar(jName + "_p");
  const int r = newVar(iName + "_r"), cc = newVar(jName + "_r"), rt = newVar(iName + "_t"), ct = newVar(k.varNames[o.c] + "_t");
  const std::string prefix = p.buffers[o.out].name;
  const int S = addLocal(p, prefix + "_scores", {s.nc, s.mq});
  const int M = addLocal(p, prefix + "_max", {s.mq});
  const int MN = addLocal(p, prefix + "_newmax", {s.mq});
  const int L = addLocal(p, prefix + "_sum", {s.mq});
  const int A = addLocal(p, prefix + "_rescale", {s.mq});
  k.scratchSizes.push_back(s.mq * o.D);
  const int qPack = static_cast<int>(k.scratchSizes.size()) - 1;
  const int pv = k.numAccs++;

  const IndexExpr blockRow = affineIndex(s.mq, qb, 0);  // the block's first query row
  const IndexExpr tileKey = affineIndex(s.nc, kt, 0);    // the tile's first key
  const IndexExpr rowOfBlock = plus(blockRow, var(r));   // query row r of the block
  auto local = [&](int buffer, IndexExpr at) { return load(buffer, {std::move(at)}); };
  auto row = [&](int buffer) { return local(buffer, var(r)); };
  auto setRow = [&](int buffer, Expr value) -> Stmt { return Store{buffer, {var(r)}, std::move(value)}; };
  auto output = [&](const IndexExpr& atRow) {
    std::vector<IndexExpr> ix = o.outIndex;
    for (IndexExpr& e : ix) substitute(e, o.i, atRow);
    return ix;
  };
  const std::vector<GuardCond> rowInside = {{rowOfBlock, o.Nq}};
  std::vector<GuardCond> keyInside;
  if (o.Nk % s.nc != 0) keyInside.push_back({plus(tileKey, var(cc)), o.Nk});
  const Expr negInf = constant(-HUGE_VAL);

  Block block;
  // The running max and sum start empty; so do the block's output rows.
  block.push_back(loopOver(r, s.mq, one(setRow(M, negInf)), true));
  block.push_back(loopOver(r, s.mq, one(setRow(L, constant(0))), true));
  block.push_back(loopOver(r, s.mq, one(guarded(rowInside, one(loopOver(o.c, o.Dv, one(Store{o.out, output(rowOfBlock), constant(0)}), true)), "a row past the last is"))));
  // Q's rows of the block, packed d-major in panels of nr: the S^T tiles' column operand.
  Pack pack;
  pack.side = PackSide::Columns;
  pack.var = o.i;
  pack.base = blockRow;
  pack.count = s.mq;
  pack.panel = s.nr;
  pack.extent = o.Nq;
  pack.scratch = qPack;
  pack.k = KWindow{o.d, o.D, 0, IndexExpr::makeConst(0)};
  pack.value = o.qOperand;
  pack.bf16Pairs = s.bf16Pairs;
  block.push_back(std::move(pack));
  int kPack = -1;
  if (s.bf16Pairs) {
    k.scratchSizes.push_back(s.nc * ((o.D + 1) / 2));
    kPack = static_cast<int>(k.scratchSizes.size()) - 1;
  }

  Block tile;
  // S^T = K Q^T: rows are keys, columns the block's query rows.
  {
    Tile t;
    t.rowVar = o.j;
    t.colVar = o.i;
    t.rowBase = plus(tileKey, affineIndex(s.mr, kr, 0));
    t.colBase = plus(blockRow, affineIndex(s.nr, qp, 0));
    t.rows = s.mr;
    t.cols = s.nr;
    t.rowExtent = o.Nk;
    t.colExtent = o.Nq;
    t.k = KWindow{o.d, o.D, 0, IndexExpr::makeConst(0)};
    t.acc = o.dot;
    t.value = binary(BinaryOp::Mul, o.kOperand, o.qOperand);
    t.colScratch = qPack;
    t.blockCol = affineIndex(s.nr, qp, 0);
    t.blockRow = IndexExpr::makeConst(0);
    if (s.bf16Pairs) {
      // The key tile's K rows, packed once per tile and read by every query panel.
      t.rowScratch = kPack;
      t.blockRow = affineIndex(s.mr, kr, 0);
      t.bf16Pairs = true;
      Stmt tileStmt = t;
      Stmt kRows = rowPack(tileStmt, kPack, tileKey, s.nc, /*allOfK=*/false);
      kRows.as<Pack>().bf16Pairs = true;
      tile.push_back(std::move(kRows));
    }
    Expr score = o.mask.empty() ? o.score : call(Builtin::Select, {maskValue(o.mask), o.score, negInf});
    t.epilogue.push_back(Store{S, {minus(var(o.j), tileKey), minus(var(o.i), blockRow)}, std::move(score)});
    // The key tile's last rows, when mr does not divide it: a tile of fewer rows after the whole ones.
    Tile last = t;
    last.rowBase = plus(tileKey, IndexExpr::makeConst(s.nc / s.mr * s.mr));
    last.rows = s.nc % s.mr;
    if (s.bf16Pairs) last.blockRow = IndexExpr::makeConst(s.nc / s.mr * s.mr);
    Block keyTiles = one(loopOver(kr, s.nc / s.mr, one(std::move(t))));
    if (last.rows > 0) keyTiles.push_back(std::move(last));
    tile.push_back(loopOver(qp, s.mq / s.nr, std::move(keyTiles)));
  }
  // The online update, across the block's rows (vector loops): new max, rescale factor, weights.
  const Expr scoreAt = load(S, {var(cc), var(r)});
  tile.push_back(loopOver(r, s.mq, one(setRow(MN, row(M))), true));
  tile.push_back(loopOver(cc, s.nc, one(guarded(keyInside, one(loopOver(r, s.mq, one(setRow(MN, call(Builtin::Max, {row(MN), scoreAt}))), true)), "a key past the last is"))));
  {
    Expr wasEmpty = binary(BinaryOp::Eq, row(M), negInf);
    Expr factor = call(Builtin::Select, {std::move(wasEmpty), constant(0), call(Builtin::Exp, {binary(BinaryOp::Sub, row(M), row(MN))})});
    Block body;
    body.push_back(setRow(A, std::move(factor)));
    body.push_back(setRow(L, binary(BinaryOp::Mul, row(L), row(A))));
    body.push_back(setRow(M, row(MN)));
    tile.push_back(loopOver(r, s.mq, std::move(body), true));
  }
  {
    Expr masked = binary(BinaryOp::Eq, scoreAt, negInf);
    Expr weight = call(Builtin::Select, {std::move(masked), constant(0), call(Builtin::Exp, {binary(BinaryOp::Sub, scoreAt, row(M))})});
    Block body;
    body.push_back(Store{S, {var(cc), var(r)}, std::move(weight)});
    body.push_back(setRow(L, binary(BinaryOp::Add, row(L), scoreAt)));
    tile.push_back(loopOver(cc, s.nc, one(guarded(keyInside, one(loopOver(r, s.mq, std::move(body), true)), "a key past the last is"))));
  }
  // O = O * A + P V over this tile's keys: rows are the block's query rows, columns c.
  {
    Tile t;
    t.rowVar = o.i;
    t.colVar = o.c;
    t.rowBase = plus(blockRow, affineIndex(s.mr, rt, 0));
    t.colBase = affineIndex(s.nr, ct, 0);
    t.rows = s.mr;
    t.cols = s.nr;
    t.rowExtent = o.Nq;
    t.colExtent = o.Dv;
    t.edgeRows = o.Nq % s.mr;
    t.k = KWindow{o.j, o.Nk, s.nc, tileKey};
    t.perWindow = true;
    t.acc = pv;
    t.value = binary(BinaryOp::Mul, load(S, {minus(var(o.j), tileKey), minus(var(o.i), blockRow)}), o.weight);
    t.blockRow = IndexExpr::makeConst(0);
    Expr before = load(o.out, o.outIndex);
    Expr factor = local(A, minus(var(o.i), blockRow));
    t.epilogue.push_back(Store{o.out, o.outIndex, binary(BinaryOp::Add, binary(BinaryOp::Mul, std::move(before), std::move(factor)), accRead(pv))});
    Loop rowTiles = loopOver(rt, s.mq / s.mr, one(std::move(t)));
    tile.push_back(loopOver(ct, (o.Dv + s.nr - 1) / s.nr, one(std::move(rowTiles))));
  }
  std::vector<GuardCond> live = liveTile(o, s, qb, kt);
  Loop keyTiles = loopOver(kt, (o.Nk + s.nc - 1) / s.nc, {});
  if (live.empty()) keyTiles.body = std::move(tile);
  else keyTiles.body.push_back(guarded(std::move(live), std::move(tile), "the whole tile, masked for every row of the block, is"));
  block.push_back(std::move(keyTiles));
  if (o.normalised) {
    Stmt divide = Store{o.out, output(rowOfBlock), binary(BinaryOp::Div, load(o.out, output(rowOfBlock)), row(L))};
    block.push_back(loopOver(r, s.mq, one(guarded(rowInside, one(loopOver(o.c, o.Dv, one(std::move(divide)), true)), "a row past the last is"))));
  }

  // The row loops around it: the batch loops as they were, the query rows now in blocks; the
  // outermost stays the parallel one.
  const int64_t QB = (o.Nq + s.mq - 1) / s.mq;
  Stmt nest = loopOver(qb, QB, std::move(block));
  if (s.pairBlocks && o.rows.size() == 1 && QB >= 2) {
    // Under a mask the blocks' work differs (causal: block b has b + 1 key tiles), and the
    // threads take contiguous chunks of the parallel loop: iteration p runs blocks p and
    // QB - 1 - p, so every chunk holds as much of the triangle as another.
    const int pair = newVar(iName + "_pair");
    Block first = std::move(nest.as<Loop>().body), last = first;
    substitute(first, qb, var(pair));
    substitute(last, qb, minus(IndexExpr::makeConst(QB - 1), var(pair)));
    Block both = std::move(first);
    if (QB % 2 == 0) {
      for (Stmt& st : last) both.push_back(std::move(st));
    } else {
      Guard distinct;
      distinct.conds = {{minus(IndexExpr::makeConst(QB - 2), affineIndex(2, pair, 0)), kNoUpperBound}};
      distinct.body = std::move(last);
      distinct.skips = "the middle block's second visit is";
      both.push_back(std::move(distinct));
    }
    nest = loopOver(pair, (QB + 1) / 2, std::move(both));
  }
  for (size_t d = o.rows.size() - 1; d-- > 0;) nest = loopOver(o.rows[d]->var, o.rows[d]->extent, one(std::move(nest)));
  nest.as<Loop>().parallel = o.rows.front()->parallel;
  k.parallelExtent = nest.as<Loop>().parallel ? nest.as<Loop>().extent : 0;
  k.body.clear();
  k.body.push_back(std::move(nest));
}

}  // namespace

int tileOnlineSoftmax(LoopProgram& p, const MachineInfo& machine, const ScheduleOverrides& overrides) {
  if (overrides.tile == false) return 0;
  int tiled = 0;
  for (Kernel& k : p.kernels) {
    if (!holdsAccSet(k.body)) continue;  // only online-softmax kernels set accumulators
    OnePass o;
    std::string why = matchOnePass(p, k, o);
    if (!why.empty()) {
      k.schedule += fmt::format("{}online softmax kept as one pass per row: {}", k.schedule.empty() ? "" : "; ", why);
      continue;
    }
    OnlineSchedule s = chooseSchedule(p, machine, o, overrides);
    tileOne(p, k, o, s);
    k.schedule = s.explanation;
    if (!o.mask.empty())
      k.schedule += "; key tiles that the mask excludes for the whole block are skipped (bounds of its comparisons over the block)";
    if (s.pairBlocks)
      k.schedule += "; blocks run in pairs from both ends (p and the last - p), so that each thread's chunk holds an even share of the masked work";
    ++tiled;
  }
  return tiled;
}

}  // namespace texc::loops
