// pack: copies one operand of a register tile into contiguous scratch at the start of a loop, so
// the tile reads it as one sequential stream (LoopTransforms.h). The tile pass builds its packs
// with columnPack and rowPack too.
#include <fmt/format.h>

#include <algorithm>

#include "compiler/loops/Substitute.h"
#include "compiler/loops/Walk.h"
#include "compiler/loops/transforms/LoopTransforms.h"

namespace texc::loops {

Stmt columnPack(const Stmt& tileStmt, int scratch, IndexExpr colBase, int64_t cols, int64_t panel) {
  const Tile& tile = tileStmt.as<Tile>();
  Pack pack;
  pack.side = PackSide::Columns;
  pack.k = tile.k;
  pack.scratch = scratch;
  pack.var = tile.colVar;
  pack.base = std::move(colBase);
  pack.count = cols;
  pack.panel = panel;
  pack.extent = tile.colExtent;
  pack.value = tile.value.args[1];
  return pack;
}

Stmt rowPack(const Stmt& tileStmt, int scratch, IndexExpr rowBase, int64_t rows, bool allOfK) {
  const Tile& tile = tileStmt.as<Tile>();
  Pack pack;
  pack.side = PackSide::Rows;
  pack.k.var = tile.k.var;
  pack.k.extent = tile.k.extent;
  if (!allOfK) {
    pack.k.block = tile.k.block;
    pack.k.base = tile.k.base;
  }
  pack.scratch = scratch;
  pack.var = tile.rowVar;
  pack.base = std::move(rowBase);
  pack.count = rows;
  pack.panel = tile.rows;
  pack.extent = tile.rowExtent;
  pack.value = tile.value.args[0];
  return pack;
}

namespace {

// A packed block may be this large; beyond the stack's share, code generation puts it on the heap.
constexpr int64_t kMaxPackBytes = int64_t{256} << 20;

// The kernel's Tile and the statements above it (loops and guards), and how many tiles it holds.
struct TilePath {
  std::vector<Stmt*> path;  // enclosing statements, outermost first
  Stmt* tile = nullptr;
  int tiles = 0;
};

TilePath findTile(Block& body) {
  TilePath out;
  walkWithEnclosing(body, [&](Stmt& s, const std::vector<Stmt*>& enclosing) {
    if (!s.is<Tile>()) return WalkAction::Advance;
    if (++out.tiles == 1) {
      out.tile = &s;
      out.path = enclosing;
    }
    return WalkAction::SkipNested;
  });
  return out;
}

// The block of one operand a pack at a given place copies: where it starts, how many rows (or
// columns) it spans, and the tile's first row (column) inside it.
struct PackedBlock {
  IndexExpr base;
  int64_t span = 0;
  IndexExpr inBlock;  // Const 0 when the block is one tile's
  std::string error;
};

// The tile's base (rowBase or colBase) is affine in loop variables; those of `inner` loops
// (below the pack) vary over the block. A block is one tile (no inner variable), or the tiles
// of one inner loop whose variable steps the base by exactly one tile (`width`).
PackedBlock blockOf(const Kernel& k, const IndexExpr& tileBase, int64_t width, const std::vector<const Loop*>& inner,
                    const char* what) {
  PackedBlock b;
  AffineForm form = affineForm(tileBase);
  if (!form.isAffine() || form.overflow) {
    b.error = fmt::format("the tile's first {} is not affine in its loops", what);
    return b;
  }
  // The base keeps the outer terms in the order of their variables.
  std::sort(form.terms.begin(), form.terms.end(), [](const AffineTerm& x, const AffineTerm& y) { return x.var < y.var; });
  const Loop* stepping = nullptr;
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
  for (const AffineTerm& term : form.terms) {
    const Loop* loop = nullptr;
    for (const Loop* l : inner)
      if (l->var == term.var) loop = l;
    if (!loop) {
      add(affineIndex(term.coeff, term.var, 0));
      continue;
    }
    if (stepping || term.coeff != width) {
      b.error = fmt::format("inside the pack's loop the tile's {}s move by {} x {}, not by whole tiles of one loop", what,
                            term.coeff, k.varNames[term.var]);
      return b;
    }
    stepping = loop;
  }
  if (form.constant != 0 || empty) add(IndexExpr::makeConst(form.constant));
  b.base = std::move(base);
  b.span = stepping ? width * stepping->extent : width;
  b.inBlock = stepping ? affineIndex(width, stepping->var, 0) : IndexExpr::makeConst(0);
  return b;
}

}  // namespace

std::string packOperand(Kernel& k, PackedOperand operand, const std::string& atLoop) {
  const char* name = operand == PackedOperand::A ? "A" : "B";
  TilePath t = findTile(k.body);
  if (t.tiles == 0) return "the kernel has no register tile to pack for: apply register_block first";
  if (t.tiles > 1) return fmt::format("the kernel has {} register tiles; pack applies to a kernel with one", t.tiles);
  Tile& tile = t.tile->as<Tile>();
  if (tile.k.block > 0) return "the tile sums over k blocks (the tile pass's kc); its packs are the tile pass's";
  if ((operand == PackedOperand::A ? tile.rowScratch : tile.colScratch) >= 0) return fmt::format("{} is already packed", name);

  // Where the pack goes: first in the body of `atLoop`, or before the whole nest.
  size_t at = 0;  // statements of `path` above the pack
  if (!atLoop.empty()) {
    nest::Found f = nest::findLoop(k, atLoop);
    if (!f.error.empty()) return f.error;
    while (at < t.path.size() && t.path[at] != f.stmt) ++at;
    if (at == t.path.size()) return fmt::format("loop {} does not enclose the register tile", atLoop);
    ++at;
  }
  std::vector<const Loop*> inner;
  for (size_t d = at; d < t.path.size(); ++d) {
    // A guard below the pack would let it read where the guarded statements never do.
    if (t.path[d]->is<Guard>()) return "a guard lies between the pack and the tile; pack inside it";
    inner.push_back(&t.path[d]->as<Loop>());
  }

  const bool rows = operand == PackedOperand::A;
  // The block is copied once per iteration of the pack's loop: the operand may not read a
  // variable that changes below it (a batch loop inside), other than through the tile's rows or
  // columns.
  const Expr& value = tile.value.args[rows ? 0 : 1];
  for (const Loop* l : inner)
    if (loadUses(value, l->var))
      return fmt::format("{} reads {}, whose loop lies between the pack and the tile: pack inside loop {}", name,
                         k.varNames[l->var], k.varNames[l->var]);
  PackedBlock b = rows ? blockOf(k, tile.rowBase, tile.rows, inner, "row") : blockOf(k, tile.colBase, tile.cols, inner, "column");
  if (!b.error.empty()) return b.error;
  const int64_t elements = b.span * tile.k.extent;
  if (elements * 4 > kMaxPackBytes)
    return fmt::format("the packed block ({} x {} floats, {} MiB) would exceed {} MiB", tile.k.extent, b.span,
                       elements * 4 >> 20, kMaxPackBytes >> 20);
  k.scratchSizes.push_back(elements);
  const int scratch = static_cast<int>(k.scratchSizes.size()) - 1;
  Stmt pack;
  if (rows) {
    // A block of several tiles is laid out panel by panel (mr rows each); one tile's is one panel.
    pack = rowPack(*t.tile, scratch, b.base, b.span, /*allOfK=*/false);
    tile.rowScratch = scratch;
    tile.blockRow = b.inBlock;
  } else {
    pack = columnPack(*t.tile, scratch, b.base, b.span, b.span == tile.cols ? 0 : tile.cols);
    // An input the tile read in place takes its padding into the pack (zeros where padded).
    pack.as<Pack>().padding = std::move(tile.colPadding);
    tile.colPadding.clear();
    tile.colScratch = scratch;
    tile.blockCol = b.inBlock;
  }
  // Pointers into the kernel are not used past this insertion.
  Block& body = at == 0 ? k.body : t.path[at - 1]->as<Loop>().body;
  size_t position = 0;
  if (at == 0 && !t.path.empty())
    while (position < body.size() && &body[position] != t.path.front()) ++position;
  body.insert(body.begin() + static_cast<std::ptrdiff_t>(position), std::move(pack));
  return "";
}

}  // namespace texc::loops
