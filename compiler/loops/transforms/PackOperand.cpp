// pack: copies one operand of a register tile into contiguous scratch at the start of a loop, so
// the tile reads it as one sequential stream (LoopTransforms.h). The tile pass builds its packs
// with columnPack and rowPack too.
#include <fmt/format.h>

#include <map>

#include "compiler/loops/transforms/LoopTransforms.h"

namespace texc::loops {

Stmt columnPack(const Stmt& tile, int scratch, IndexExpr colBase, int64_t cols, int64_t panel) {
  Stmt pack;
  pack.kind = StmtKind::Pack;
  pack.var = tile.var;
  pack.extent = tile.extent;
  pack.kBlock = tile.kBlock;
  pack.kBase = tile.kBase;
  pack.scratch = scratch;
  pack.colVar = tile.colVar;
  pack.colBase = std::move(colBase);
  pack.cols = cols;
  pack.rows = panel;
  pack.colExtent = tile.colExtent;
  pack.value = tile.value.args[1];
  return pack;
}

Stmt rowPack(const Stmt& tile, int scratch, IndexExpr rowBase, int64_t rows, bool allOfK) {
  Stmt pack;
  pack.kind = StmtKind::Pack;
  pack.var = tile.var;
  pack.extent = tile.extent;
  if (!allOfK) {
    pack.kBlock = tile.kBlock;
    pack.kBase = tile.kBase;
  }
  pack.scratch = scratch;
  pack.rowVar = tile.rowVar;
  pack.rowBase = std::move(rowBase);
  pack.rows = rows;
  pack.cols = tile.rows;
  pack.rowExtent = tile.rowExtent;
  pack.value = tile.value.args[0];
  return pack;
}

namespace {

// A packed block may be this large; beyond the stack's share, code generation puts it on the heap.
constexpr int64_t kMaxPackBytes = int64_t{256} << 20;

// The statements from the kernel's top down to its Tile (loops and guards), and how many tiles it holds.
struct TilePath {
  std::vector<Stmt*> path;  // enclosing statements, outermost first
  Stmt* tile = nullptr;
  int tiles = 0;
};

void findTile(std::vector<Stmt>& stmts, std::vector<Stmt*>& path, TilePath& out) {
  for (Stmt& s : stmts) {
    if (s.kind == StmtKind::Tile) {
      if (++out.tiles == 1) {
        out.tile = &s;
        out.path = path;
      }
    } else if (s.kind == StmtKind::Loop || s.kind == StmtKind::Guard) {
      path.push_back(&s);
      findTile(s.body, path, out);
      path.pop_back();
    }
  }
}

// `ix` as constant + sum(coef * var), when it is that simple.
bool affineTerms(const IndexExpr& ix, int64_t scale, std::map<int, int64_t>& coef, int64_t& constant) {
  switch (ix.kind) {
    case IndexExpr::Kind::Const: constant += scale * ix.constant; return true;
    case IndexExpr::Kind::Var: coef[ix.var] += scale; return true;
    case IndexExpr::Kind::Add:
      return affineTerms(ix.ops[0], scale, coef, constant) && affineTerms(ix.ops[1], scale, coef, constant);
    case IndexExpr::Kind::Sub:
      return affineTerms(ix.ops[0], scale, coef, constant) && affineTerms(ix.ops[1], -scale, coef, constant);
    case IndexExpr::Kind::Mul: return affineTerms(ix.ops[0], scale * ix.constant, coef, constant);
    case IndexExpr::Kind::FloorDiv:
    case IndexExpr::Kind::Mod: return false;
  }
  return false;
}

// The block of one operand a pack at a given place copies: where it starts, how many rows (or
// columns) it spans, and the tile's first row (column) inside it.
struct Block {
  IndexExpr base;
  int64_t span = 0;
  IndexExpr inBlock;  // Const 0 when the block is one tile's
  std::string error;
};

// The tile's base (rowBase or colBase) is affine in loop variables; those of `inner` loops
// (below the pack) vary over the block. A block is one tile (no inner variable), or the tiles
// of one inner loop whose variable steps the base by exactly one tile (`width`).
Block blockOf(const Kernel& k, const IndexExpr& tileBase, int64_t width, const std::vector<const Stmt*>& inner,
              const char* what) {
  Block b;
  std::map<int, int64_t> coef;
  int64_t constant = 0;
  if (!affineTerms(tileBase, 1, coef, constant)) {
    b.error = fmt::format("the tile's first {} is not affine in its loops", what);
    return b;
  }
  const Stmt* stepping = nullptr;
  IndexExpr base;  // the outer terms, then the constant
  bool empty = true;
  auto add = [&](IndexExpr term) {
    if (empty) {
      base = std::move(term);
      empty = false;
      return;
    }
    IndexExpr sum;
    sum.kind = IndexExpr::Kind::Add;
    sum.ops.push_back(std::move(base));
    sum.ops.push_back(std::move(term));
    base = std::move(sum);
  };
  for (const auto& [var, c] : coef) {
    if (c == 0) continue;
    const Stmt* loop = nullptr;
    for (const Stmt* l : inner)
      if (l->var == var) loop = l;
    if (!loop) {
      add(nest::affine(c, var, 0));
      continue;
    }
    if (stepping || c != width) {
      b.error = fmt::format("inside the pack's loop the tile's {}s move by {} x {}, not by whole tiles of one loop", what, c,
                            k.varNames[var]);
      return b;
    }
    stepping = loop;
  }
  if (constant != 0 || empty) add(IndexExpr::makeConst(constant));
  b.base = std::move(base);
  b.span = stepping ? width * stepping->extent : width;
  b.inBlock = stepping ? nest::affine(width, stepping->var, 0) : IndexExpr::makeConst(0);
  return b;
}

}  // namespace

std::string packOperand(Kernel& k, PackedOperand operand, const std::string& atLoop) {
  const char* name = operand == PackedOperand::A ? "A" : "B";
  TilePath t;
  std::vector<Stmt*> path;
  findTile(k.body, path, t);
  if (t.tiles == 0) return "the kernel has no register tile to pack for: apply register_block first";
  if (t.tiles > 1) return fmt::format("the kernel has {} register tiles; pack applies to a kernel with one", t.tiles);
  Stmt& tile = *t.tile;
  if (tile.kBlock > 0) return "the tile sums over k blocks (the tile pass's kc); its packs are the tile pass's";
  if ((operand == PackedOperand::A ? tile.rowScratch : tile.scratch) >= 0) return fmt::format("{} is already packed", name);

  // Where the pack goes: first in the body of `atLoop`, or before the whole nest.
  size_t at = 0;  // statements of `path` above the pack
  if (!atLoop.empty()) {
    nest::Found f = nest::findLoop(k, atLoop);
    if (!f.error.empty()) return f.error;
    while (at < t.path.size() && t.path[at] != f.loop) ++at;
    if (at == t.path.size()) return fmt::format("loop {} does not enclose the register tile", atLoop);
    ++at;
  }
  std::vector<const Stmt*> inner;
  for (size_t d = at; d < t.path.size(); ++d) {
    // A guard below the pack would let it read where the guarded statements never do.
    if (t.path[d]->kind == StmtKind::Guard) return "a guard lies between the pack and the tile; pack inside it";
    inner.push_back(t.path[d]);
  }

  const bool rows = operand == PackedOperand::A;
  // The block is copied once per iteration of the pack's loop: the operand may not read a
  // variable that changes below it (a batch loop inside), other than through the tile's rows or
  // columns.
  const Expr& value = tile.value.args[rows ? 0 : 1];
  for (const Stmt* l : inner)
    if (loadUses(value, l->var))
      return fmt::format("{} reads {}, whose loop lies between the pack and the tile: pack inside loop {}", name,
                         k.varNames[l->var], k.varNames[l->var]);
  Block b = rows ? blockOf(k, tile.rowBase, tile.rows, inner, "row") : blockOf(k, tile.colBase, tile.cols, inner, "column");
  if (!b.error.empty()) return b.error;
  const int64_t elements = b.span * tile.extent;
  if (elements * 4 > kMaxPackBytes)
    return fmt::format("the packed block ({} x {} floats, {} MiB) would exceed {} MiB", tile.extent, b.span,
                       elements * 4 >> 20, kMaxPackBytes >> 20);
  k.scratchSizes.push_back(elements);
  const int scratch = static_cast<int>(k.scratchSizes.size()) - 1;
  Stmt pack;
  if (rows) {
    // A block of several tiles is laid out panel by panel (mr rows each); one tile's is one panel.
    pack = rowPack(tile, scratch, b.base, b.span, /*allOfK=*/false);
    tile.rowScratch = scratch;
    tile.blockRow = b.inBlock;
  } else {
    pack = columnPack(tile, scratch, b.base, b.span, b.span == tile.cols ? 0 : tile.cols);
    tile.scratch = scratch;
    tile.blockCol = b.inBlock;
  }
  // Pointers into the kernel are not used past this insertion.
  std::vector<Stmt>& body = at == 0 ? k.body : t.path[at - 1]->body;
  size_t position = 0;
  if (at == 0 && !t.path.empty())
    while (position < body.size() && &body[position] != t.path.front()) ++position;
  body.insert(body.begin() + static_cast<std::ptrdiff_t>(position), std::move(pack));
  return "";
}

}  // namespace texc::loops
