// The loop IR's core on hand-built statements: the walker (pre-order, SkipNested, Stop, the
// enclosing statements), the mutator (a statement replaced by none or by two), the index
// expressions a statement holds, substitution (a tile's bases rewritten, its own variables kept),
// structural equality (constants by their bits, variables through a renaming), perfect nests and
// the affine form of an index expression.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "compiler/loops/Build.h"
#include "compiler/loops/Equal.h"
#include "compiler/loops/PerfectNest.h"
#include "compiler/loops/Substitute.h"
#include "compiler/loops/Walk.h"
#include "core/IndexAlgebra.h"

namespace texc::loops {
namespace {

IndexExpr var(int v) { return IndexExpr::makeVar(v); }
IndexExpr num(int64_t c) { return IndexExpr::makeConst(c); }

IndexExpr node(IndexExpr::Kind kind, int64_t constant, std::vector<IndexExpr> ops) {
  return IndexExpr::makeNode(kind, constant, std::move(ops));
}
IndexExpr add(IndexExpr a, IndexExpr b) { return node(IndexExpr::Kind::Add, 0, {std::move(a), std::move(b)}); }
IndexExpr sub(IndexExpr a, IndexExpr b) { return node(IndexExpr::Kind::Sub, 0, {std::move(a), std::move(b)}); }
IndexExpr mul(int64_t c, IndexExpr a) { return node(IndexExpr::Kind::Mul, c, {std::move(a)}); }
IndexExpr floorDiv(IndexExpr a, int64_t d) { return node(IndexExpr::Kind::FloorDiv, d, {std::move(a)}); }
IndexExpr mod(IndexExpr a, int64_t d) { return node(IndexExpr::Kind::Mod, d, {std::move(a)}); }

Expr constant(double c) {
  Expr e;
  e.constant = c;
  return e;
}

Expr load(int buffer, std::vector<IndexExpr> index) {
  Expr e;
  e.kind = ExprKind::Load;
  e.buffer = buffer;
  e.index = std::move(index);
  return e;
}

Expr valueOfVar(int v) {
  Expr e;
  e.kind = ExprKind::VarValue;
  e.var = v;
  return e;
}

Expr product(Expr a, Expr b) {
  Expr e;
  e.kind = ExprKind::Binary;
  e.binaryOp = BinaryOp::Mul;
  e.args = {std::move(a), std::move(b)};
  return e;
}

// buffer[index] = value; tests tell stores apart by their buffer.
Store store(int buffer, std::vector<IndexExpr> index = {}, Expr value = constant(0)) {
  Store s;
  s.buffer = buffer;
  s.index = std::move(index);
  s.value = std::move(value);
  return s;
}

Loop loop(int v, int64_t extent, Block body) {
  Loop l;
  l.var = v;
  l.extent = extent;
  l.body = std::move(body);
  return l;
}

// A short name per statement: its kind, and a store's buffer.
std::string label(const Stmt& s) {
  switch (s.kind()) {
    case StmtKind::Loop: return "loop";
    case StmtKind::Store: return "store" + std::to_string(s.as<Store>().buffer);
    case StmtKind::AccInit: return "init";
    case StmtKind::AccUpdate: return "update";
    case StmtKind::Guard: return "guard";
    case StmtKind::Pack: return "pack";
    case StmtKind::Tile: return "tile";
    case StmtKind::AccSet: return "set";
  }
  return "?";
}

// for v0 { if v0 in [0, 4) { store0 }; store1 }; tile { store2 }; store3
Block sample() {
  Guard g;
  g.conds.push_back({var(0), 4});
  g.body = {store(0)};
  Tile t;
  t.rowVar = 1;
  t.colVar = 2;
  t.k.var = 3;
  t.epilogue = {store(2)};
  return {loop(0, 8, {g, store(1)}), t, store(3)};
}

// A tile over rows v1, columns v2 and k = v3, whose bases read v0 and v1.
Tile sampleTile() {
  Tile t;
  t.rowVar = 1;
  t.colVar = 2;
  t.k.var = 3;
  t.k.extent = 16;
  t.k.block = 4;
  t.rowBase = mul(4, var(1));
  t.colBase = add(var(0), num(8));
  t.k.base = mul(4, var(0));
  t.blockRow = num(1);
  t.blockCol = var(0);
  t.rows = 4;
  t.cols = 8;
  t.rowExtent = 10;
  t.colExtent = 20;
  t.acc = 0;
  t.value = product(load(0, {var(1), var(3)}), load(1, {var(3), var(2)}));
  t.epilogue = {store(2, {var(1), var(0)}, valueOfVar(1))};
  return t;
}

TEST_CASE("loop core: walk visits statements before the ones nested in them", "[passes][core]") {
  Block b = sample();
  std::vector<std::string> seen;
  CHECK(walk(b, [&](const Stmt& s) {
    seen.push_back(label(s));
    return WalkAction::Advance;
  }));
  CHECK(seen == std::vector<std::string>{"loop", "guard", "store0", "store1", "tile", "store2", "store3"});
  CHECK(countStmts(b) == 7);

  seen.clear();
  CHECK(walk(b, [&](const Stmt& s) {
    seen.push_back(label(s));
    return s.is<Guard>() || s.is<Tile>() ? WalkAction::SkipNested : WalkAction::Advance;
  }));
  CHECK(seen == std::vector<std::string>{"loop", "guard", "store1", "tile", "store3"});

  seen.clear();
  CHECK_FALSE(walk(b, [&](const Stmt& s) {
    seen.push_back(label(s));
    return label(s) == "store1" ? WalkAction::Stop : WalkAction::Advance;
  }));
  CHECK(seen == std::vector<std::string>{"loop", "guard", "store0", "store1"});

  CHECK(anyStmt(b, [](const Stmt& s) { return s.is<Tile>(); }));
  CHECK_FALSE(anyStmt(b, [](const Stmt& s) { return s.is<Pack>(); }));
}

TEST_CASE("loop core: walkWithEnclosing passes the statements around each one", "[passes][core]") {
  Block b = sample();
  std::vector<std::string> around;
  walkWithEnclosing(b, [&](const Stmt& s, const std::vector<const Stmt*>& enclosing) {
    std::string path;
    for (const Stmt* e : enclosing) path += label(*e) + "/";
    around.push_back(path + label(s));
    return WalkAction::Advance;
  });
  CHECK(around == std::vector<std::string>{"loop", "loop/guard", "loop/guard/store0", "loop/store1", "tile", "tile/store2", "store3"});
}

TEST_CASE("loop core: rewrite replaces a statement by none or by several, inner statements first", "[passes][core]") {
  Block b = {loop(0, 8, {store(1), store(2), store(3)}), store(4)};
  std::vector<std::string> order;
  rewrite(b, [&](Stmt& s) -> std::optional<Block> {
    order.push_back(label(s));
    if (label(s) == "store2") return Block{};
    if (label(s) == "store3") return Block{store(5), store(6)};
    return std::nullopt;
  });
  CHECK(order == std::vector<std::string>{"store1", "store2", "store3", "loop", "store4"});
  REQUIRE(b.size() == 2);
  std::vector<std::string> inside;
  for (const Stmt& s : b[0].as<Loop>().body) inside.push_back(label(s));
  CHECK(inside == std::vector<std::string>{"store1", "store5", "store6"});
  CHECK(label(b[1]) == "store4");
}

TEST_CASE("loop core: forEachIndexOf visits a tile's bases and a pack's padding, not nested statements", "[passes][core]") {
  std::vector<IndexExpr> seen;
  Tile t = sampleTile();
  forEachIndexOf(Stmt(t), [&](const IndexExpr& ix) { seen.push_back(ix); });
  // rowBase, colBase, k.base, blockRow, blockCol, sumRow, sumCol, then the two loads of the value
  // (2 indices each).
  REQUIRE(seen.size() == 11);
  CHECK(equal(seen[0], t.rowBase));
  CHECK(equal(seen[1], t.colBase));
  CHECK(equal(seen[2], t.k.base));
  CHECK(equal(seen[3], t.blockRow));
  CHECK(equal(seen[4], t.blockCol));
  CHECK(equal(seen[5], t.sumRow));
  CHECK(equal(seen[6], t.sumCol));
  CHECK(equal(seen[7], var(1)));
  CHECK(equal(seen[10], var(2)));

  Pack p;
  p.side = PackSide::Columns;
  p.var = 2;
  p.k.var = 3;
  p.base = var(0);
  p.k.base = num(0);
  p.padding = {{sub(var(2), num(1)), 7}, {add(var(3), var(2)), 9}};
  p.value = load(1, {var(3), var(2)});
  seen.clear();
  forEachIndexOf(Stmt(p), [&](const IndexExpr& ix) { seen.push_back(ix); });
  REQUIRE(seen.size() == 6);
  CHECK(equal(seen[0], var(0)));
  CHECK(equal(seen[2], p.padding[0].index));
  CHECK(equal(seen[3], p.padding[1].index));
  CHECK(equal(seen[4], var(3)));

  // Rewriting through it reaches the same fields.
  Stmt s = p;
  forEachIndexOf(s, [](IndexExpr& ix) { ix = num(0); });
  CHECK(equal(s.as<Pack>().padding[1].index, num(0)));
  CHECK(equal(s.as<Pack>().value.index[1], num(0)));
}

TEST_CASE("loop core: substitute rewrites a tile's bases but not the variables the tile binds", "[passes][core]") {
  // v1 is the tile's row variable: inside the tile it is the tile's own, but the row base is
  // evaluated outside, where v1 is the enclosing one.
  Block b = {sampleTile()};
  CHECK(usesVar(b, 1));
  substitute(b, 1, num(3));
  const Tile& t = b[0].as<Tile>();
  CHECK(equal(t.rowBase, mul(4, num(3))));
  CHECK(equal(t.value.args[0].index[0], var(1)));
  CHECK(equal(t.epilogue[0].as<Store>().index[0], var(1)));
  CHECK(t.epilogue[0].as<Store>().value.index.empty());
  CHECK_FALSE(usesVar(b, 1));

  // v0 is free everywhere: bases, the value and the epilogue all change.
  substitute(b, 0, add(var(5), num(1)));
  CHECK(equal(t.colBase, add(add(var(5), num(1)), num(8))));
  CHECK(equal(t.k.base, mul(4, add(var(5), num(1)))));
  CHECK(equal(t.blockCol, add(var(5), num(1))));
  CHECK(equal(t.epilogue[0].as<Store>().index[1], add(var(5), num(1))));
  CHECK_FALSE(usesVar(b, 0));
  CHECK(usesVar(b, 5));

  // A loop that binds the variable again keeps its own.
  Block nested = {loop(0, 4, {store(0, {var(0)}, valueOfVar(0))}), store(1, {var(0)}, valueOfVar(0))};
  substitute(nested, 0, num(2));
  const Store& inner = nested[0].as<Loop>().body[0].as<Store>();
  CHECK(equal(inner.index[0], var(0)));
  CHECK(inner.value.index.empty());
  const Store& outer = nested[1].as<Store>();
  CHECK(equal(outer.index[0], num(2)));
  REQUIRE(outer.value.index.size() == 1);  // the value of v0 is now the value of the index 2
  CHECK(equal(outer.value.index[0], num(2)));
}

TEST_CASE("loop core: equal compares constants by their bits and variables through a renaming", "[passes][core]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(equal(constant(nan), constant(nan)));
  CHECK_FALSE(equal(constant(nan), constant(-nan)));
  CHECK_FALSE(equal(constant(0.0), constant(-0.0)));
  CHECK(equal(constant(-0.0), constant(-0.0)));
  CHECK(equal(constant(1.5), constant(1.5)));
  CHECK_FALSE(equal(constant(1.5), constant(2.5)));

  // for v0 { b[v0] = float(v0) } and the same over v1.
  Stmt over0 = loop(0, 4, {store(0, {var(0)}, valueOfVar(0))});
  Stmt over1 = loop(1, 4, {store(0, {var(1)}, valueOfVar(1))});
  CHECK(equal(over0, over0));
  CHECK_FALSE(equal(over0, over1));
  CHECK(equal(over0, over1, VarRenaming{{0, 1}}));
  CHECK_FALSE(equal(over0, over1, VarRenaming{{0, 2}}));
  CHECK(equal(Block{over0, over0}, Block{over1, over1}, VarRenaming{{0, 1}}));
  CHECK_FALSE(equal(Block{over0}, Block{over0, over0}));
  Stmt longer = loop(0, 5, {store(0, {var(0)}, valueOfVar(0))});
  CHECK_FALSE(equal(over0, longer));

  // A tile's accumulator is part of it.
  Tile a = sampleTile();
  Tile b = sampleTile();
  CHECK(equal(Stmt(a), Stmt(b)));
  b.acc = 1;
  CHECK_FALSE(equal(Stmt(a), Stmt(b)));
}

TEST_CASE("loop core: perfectNest follows loops whose body is one loop", "[passes][core]") {
  Stmt deep = loop(0, 2, {loop(1, 3, {loop(2, 4, {store(0), store(1)})})});
  std::vector<Loop*> nest = perfectNest(deep);
  REQUIRE(nest.size() == 3);
  CHECK(nest[0]->var == 0);
  CHECK(nest[2]->var == 2);
  CHECK(innermostBody(nest).size() == 2);
  CHECK(perfectNest(deep, 2).size() == 2);
  CHECK(perfectNest(std::as_const(deep)).size() == 3);

  Stmt imperfect = loop(0, 2, {loop(1, 3, {store(0)}), store(1)});
  CHECK(perfectNest(imperfect).size() == 1);
  Stmt notALoop = store(0);
  CHECK(perfectNest(notALoop).empty());
}

TEST_CASE("loop core: affineForm merges like terms and keeps divisions as atoms", "[passes][core]") {
  // 2 v0 + 3 - v0 + v1 / 4 + 5 (v1 / 4) + v1 % 4 + 7 v2 - 7 v2
  IndexExpr e = add(add(add(add(sub(add(mul(2, var(0)), num(3)), var(0)), floorDiv(var(1), 4)), mul(5, floorDiv(var(1), 4))),
                        mod(var(1), 4)),
                    sub(mul(7, var(2)), mul(7, var(2))));
  AffineForm f = affineForm(e);
  CHECK_FALSE(f.overflow);
  CHECK(f.constant == 3);
  REQUIRE(f.terms.size() == 3);  // v0, v1 / 4, v1 % 4; v2 cancels
  CHECK(f.terms[0].atom == nullptr);
  CHECK(f.terms[0].var == 0);
  CHECK(f.terms[0].coeff == 1);
  REQUIRE(f.terms[1].atom != nullptr);
  CHECK(equal(*f.terms[1].atom, floorDiv(var(1), 4)));
  CHECK(f.terms[1].coeff == 6);
  REQUIRE(f.terms[2].atom != nullptr);
  CHECK(f.terms[2].atom->kind == IndexExpr::Kind::Mod);
  CHECK(f.coeffOf(0) == 1);
  CHECK(f.coeffOf(1) == 0);
  CHECK(f.coeffOf(2) == 0);
  CHECK_FALSE(f.isAffine());
  CHECK(f.varInAtom(1));
  CHECK_FALSE(f.varInAtom(0));

  AffineForm plain = affineForm(sub(mul(3, add(var(0), num(2))), var(1)));
  CHECK(plain.isAffine());
  CHECK(plain.constant == 6);
  CHECK(plain.coeffOf(0) == 3);
  CHECK(plain.coeffOf(1) == -1);

  const int64_t big = std::numeric_limits<int64_t>::max();
  CHECK(affineForm(mul(2, mul(big, var(0)))).overflow);
  CHECK(affineForm(add(num(big), num(1))).overflow);
  CHECK_FALSE(affineForm(add(num(big), num(0))).overflow);
  CHECK_FALSE(affineForm(sub(mul(big, var(0)), mul(big, var(0)))).overflow);
}

TEST_CASE("loop core: mergedAffineForm merges the floor divisions and modulos that cancel", "[passes][core]") {
  // A conv's weights W[k, crs / 9, (crs / 3) % 3, crs % 3] over [64, 64, 3, 3]: 576 k + crs.
  IndexExpr weights = add(add(add(mul(576, var(0)), mul(9, floorDiv(var(1), 9))), mul(3, mod(floorDiv(var(1), 3), 3))), mod(var(1), 3));
  const IndexExpr weightsBefore = weights;
  AffineForm w = mergedAffineForm(weights);
  CHECK(w.isAffine());
  CHECK(w.coeffOf(0) == 576);
  CHECK(w.coeffOf(1) == 1);
  CHECK(w.constant == 0);
  CHECK(w.terms.size() == 2);

  // A pixel p read as [p / 56 + r - 1, p % 56 + s - 1] over [56, 56], scaled by 2: 2 p + ...
  IndexExpr pixel = mul(2, add(mul(56, sub(add(floorDiv(var(2), 56), var(3)), num(1))), sub(add(mod(var(2), 56), var(4)), num(1))));
  const IndexExpr pixelBefore = pixel;
  AffineForm p = mergedAffineForm(pixel);
  CHECK(p.isAffine());
  CHECK(p.coeffOf(2) == 2);
  CHECK(p.coeffOf(3) == 112);
  CHECK(p.coeffOf(4) == 2);
  CHECK(p.constant == -114);

  // 2 ((x / 3) % 4) + x % 3 does not cancel (the coefficient is not 3): both atoms stay.
  IndexExpr other = add(mul(2, mod(floorDiv(var(1), 3), 4)), mod(var(1), 3));
  const IndexExpr otherBefore = other;
  AffineForm o = mergedAffineForm(other);
  CHECK_FALSE(o.isAffine());
  CHECK(o.terms.size() == 2);

  // Every rewrite is exact for negative values too (floor division): the rewritten expressions
  // agree with the originals everywhere.
  for (int64_t x = -40; x <= 40; ++x)
    for (int64_t y = -3; y <= 3; ++y) {
      const std::vector<int64_t> vals = {y, x, x, y, -y};
      CHECK(evalIndex(weights, vals) == evalIndex(weightsBefore, vals));
      CHECK(evalIndex(pixel, vals) == evalIndex(pixelBefore, vals));
      CHECK(evalIndex(other, vals) == evalIndex(otherBefore, vals));
    }
}

}  // namespace
}  // namespace texc::loops
