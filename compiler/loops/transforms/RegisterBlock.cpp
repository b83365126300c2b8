// register_block: a contraction's two output loops become loops over mr x nr tiles of the
// output, each one Tile statement whose accumulators stay in vector registers for the whole
// reduction (LoopTransforms.h). The tile pass builds its tiles with registerTile too.
#include <fmt/format.h>

#include "compiler/loops/transforms/LoopTransforms.h"

namespace texc::loops {

Stmt registerTile(const Contraction& c, int64_t mr, int64_t nr) {
  Stmt tile;
  tile.kind = StmtKind::Tile;
  tile.var = c.k;
  tile.extent = c.K;
  tile.rowVar = c.i;
  tile.colVar = c.j;
  tile.rows = mr;
  tile.cols = nr;
  tile.rowExtent = c.M;
  tile.colExtent = c.N;
  tile.acc = c.acc;
  tile.value.kind = ExprKind::Binary;
  tile.value.binaryOp = BinaryOp::Mul;
  tile.value.args = {c.rowOperand, c.colOperand};
  tile.body.push_back(c.store);
  return tile;
}

std::string registerBlock(const LoopProgram& p, Kernel& k, const std::string& rowName, const std::string& colName, int64_t mr,
                          int64_t nr) {
  if (std::string why = nest::checkTransformable(k); !why.empty()) return why;
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
  const bool rowOuter = row.loop->body.size() == 1 && &row.loop->body[0] == col.loop;
  const bool colOuter = col.loop->body.size() == 1 && &col.loop->body[0] == row.loop;
  if (!rowOuter && !colOuter)
    return fmt::format("loops {} and {} are not directly nested (the outer one's body must be exactly the inner one)", rowName,
                       colName);
  Stmt& outer = rowOuter ? *row.loop : *col.loop;
  const Stmt& inner = outer.body[0];

  // Match the nest as row loop around column loop, whatever its order.
  Stmt probe;
  probe.kind = StmtKind::Loop;
  probe.var = row.loop->var;
  probe.extent = row.loop->extent;
  Stmt probeInner;
  probeInner.kind = StmtKind::Loop;
  probeInner.var = col.loop->var;
  probeInner.extent = col.loop->extent;
  probeInner.body = inner.body;
  probe.body.push_back(std::move(probeInner));
  Contraction c;
  if (!matchContraction(p, probe, c))
    return fmt::format("the body of loops {} and {} is not a contraction 'acc = 0; for k {{ acc += A * B }}; store', A (f32) not "
                       "reading {} and B (f32) reading {} but not {}",
                       rowName, colName, colName, colName, rowName);

  const int rowTiles = nest::addVar(k, rowName + "_t");
  const int colTiles = nest::addVar(k, colName + "_t");
  Stmt tile = registerTile(c, mr, nr);
  tile.rowBase = nest::affine(mr, rowTiles, 0);
  tile.colBase = nest::affine(nr, colTiles, 0);

  // The tile loops keep the nest's order; the outer one keeps its parallel mark. The vector
  // mark goes: the tile is vector code itself.
  const int64_t rowCount = (c.M + mr - 1) / mr, colCount = (c.N + nr - 1) / nr;
  Stmt innerTiles;
  innerTiles.kind = StmtKind::Loop;
  innerTiles.var = rowOuter ? colTiles : rowTiles;
  innerTiles.extent = rowOuter ? colCount : rowCount;
  innerTiles.body.push_back(std::move(tile));
  outer.var = rowOuter ? rowTiles : colTiles;
  outer.extent = rowOuter ? rowCount : colCount;
  outer.vectorize = outer.scalar = false;
  outer.body.clear();
  outer.body.push_back(std::move(innerTiles));
  nest::refreshParallelExtent(k);
  return "";
}

}  // namespace texc::loops
