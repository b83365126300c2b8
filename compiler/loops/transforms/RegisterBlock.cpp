// register_block: a contraction's two output loops become loops over mr x nr tiles of the
// output, each one Tile statement whose accumulators stay in vector registers for the whole
// reduction (LoopTransforms.h). The tile pass builds its tiles with registerTile too.
#include <fmt/format.h>

#include "compiler/loops/Substitute.h"
#include "compiler/loops/Walk.h"
#include "compiler/loops/transforms/LoopTransforms.h"

namespace texc::loops {

Stmt registerTile(const Contraction& c, int64_t mr, int64_t nr) {
  Tile tile;
  tile.k.var = c.k;
  tile.k.extent = c.K;
  tile.rowVar = c.i;
  tile.colVar = c.j;
  tile.rows = mr;
  tile.cols = nr;
  tile.rowExtent = c.M;
  tile.edgeRows = c.M % mr;
  tile.colExtent = c.N;
  tile.acc = c.acc;
  tile.value.kind = ExprKind::Binary;
  tile.value.binaryOp = BinaryOp::Mul;
  tile.value.args = {c.rowOperand, c.colOperand};
  tile.epilogue.push_back(c.store);
  return tile;
}

std::string registerBlock(const LoopProgram& p, Kernel& k, const std::string& rowName, const std::string& colName, int64_t mr,
                          int64_t nr) {
  // A tiled kernel's contraction is a tile already, and pack works on a kernel with one tile.
  if (anyStmt(k.body, [](const Stmt& s) { return s.is<Pack>() || s.is<Tile>(); }))
    return fmt::format("kernel {} holds register tiles already (pack and tile statements, from the tile pass or "
                       "register_block); register_block applies to an untiled kernel: add 'tile = off' to the schedule "
                       "(or pass --no-tile)",
                       k.name);
  if (mr < 1 || mr > kMaxTileRows) return fmt::format("the tile's rows must be 1..{}, got {}", kMaxTileRows, mr);
  if (nr < 1 || nr > kMaxTileColumns) return fmt::format("the tile's columns must be 1..{}, got {}", kMaxTileColumns, nr);
  if (k.computeType != DType::F32)
    return "the register tile is written for f32 kernels; this kernel computes in f64";
  nest::Found row = nest::findLoop(k, rowName);
  if (!row.error.empty()) return row.error;
  nest::Found col = nest::findLoop(k, colName);
  if (!col.error.empty()) return col.error;
  if (row.loop == col.loop) return "the row and the column loop must be two different loops";
  // The two loops must be directly nested, in either order: the outer one's body is exactly the
  // inner one.
  const bool rowOuter = row.loop->body.size() == 1 && &row.loop->body[0] == col.stmt;
  const bool colOuter = col.loop->body.size() == 1 && &col.loop->body[0] == row.stmt;
  if (!rowOuter && !colOuter)
    return fmt::format("loops {} and {} are not directly nested (the outer one's body must be exactly the inner one)", rowName,
                       colName);
  Loop& outer = rowOuter ? *row.loop : *col.loop;
  const Loop& inner = outer.body[0].as<Loop>();

  // Match the nest as row loop around column loop, whatever its order.
  Loop probeInner;
  probeInner.var = col.loop->var;
  probeInner.extent = col.loop->extent;
  probeInner.body = inner.body;
  Loop probeOuter;
  probeOuter.var = row.loop->var;
  probeOuter.extent = row.loop->extent;
  probeOuter.body.push_back(std::move(probeInner));
  Stmt probe = std::move(probeOuter);
  Contraction c;
  if (!matchContraction(p, probe, c))
    return fmt::format("the body of loops {} and {} is not a contraction 'acc = 0; for k {{ acc += A * B }}; store', A (f32) not "
                       "reading {} and B (f32) reading {} but not {}",
                       rowName, colName, colName, colName, rowName);

  const int rowTiles = nest::addVar(k, rowName + "_t");
  const int colTiles = nest::addVar(k, colName + "_t");
  Stmt tileStmt = registerTile(c, mr, nr);
  Tile& tile = tileStmt.as<Tile>();
  tile.rowBase = affineIndex(mr, rowTiles, 0);
  tile.colBase = affineIndex(nr, colTiles, 0);

  // The tile loops keep the nest's order; the outer one keeps its parallel mark. The vector
  // mark goes: the tile is vector code itself.
  const int64_t rowCount = (c.M + mr - 1) / mr, colCount = (c.N + nr - 1) / nr;
  Loop innerTiles;
  innerTiles.var = rowOuter ? colTiles : rowTiles;
  innerTiles.extent = rowOuter ? colCount : rowCount;
  innerTiles.body.push_back(std::move(tileStmt));
  outer.var = rowOuter ? rowTiles : colTiles;
  outer.extent = rowOuter ? rowCount : colCount;
  outer.vectorize = outer.scalar = false;
  outer.body.clear();
  outer.body.push_back(std::move(innerTiles));
  nest::refreshParallelExtent(k);
  return "";
}

}  // namespace texc::loops
