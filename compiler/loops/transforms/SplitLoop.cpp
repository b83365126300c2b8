// split: one loop becomes an outer loop over blocks of `factor` iterations and an inner loop
// over the block, with a guard for the last, partial block (LoopTransforms.h).
#include <fmt/format.h>

#include "compiler/loops/Substitute.h"
#include "compiler/loops/transforms/LoopTransforms.h"

namespace texc::loops {

std::string splitLoop(Kernel& k, const std::string& var, int64_t factor) {
  if (factor < 1) return fmt::format("the factor must be >= 1, got {}", factor);
  nest::Found f = nest::findLoop(k, var);
  if (!f.error.empty()) return f.error;
  if (std::string why = nest::checkTransformable(k, *f.loop); !why.empty()) return why;
  if (factor > f.loop->extent)
    return fmt::format("the factor {} is larger than the loop's extent {}", factor, f.loop->extent);

  const int v = f.loop->var;
  const int64_t extent = f.loop->extent;
  const int64_t blocks = (extent + factor - 1) / factor;
  const int outerVar = nest::addVar(k, var + ".o");
  const int innerVar = nest::addVar(k, var + ".i");
  Loop& loop = *f.loop;  // adding variables moves no statement

  Block body = std::move(loop.body);
  IndexExpr value;  // v = v.o * f + v.i
  value.kind = IndexExpr::Kind::Add;
  value.ops.push_back(affineIndex(factor, outerVar, 0));
  value.ops.push_back(IndexExpr::makeVar(innerVar));
  substitute(body, v, value);
  if (extent % factor != 0) {
    // The last block runs past the extent: skip those iterations.
    Guard guard;
    guard.conds.push_back(GuardCond{value, extent});
    guard.body = std::move(body);
    body.clear();
    body.push_back(std::move(guard));
  }

  Loop inner;
  inner.var = innerVar;
  inner.extent = factor;
  inner.vectorize = loop.vectorize;
  inner.scalar = loop.scalar;
  inner.body = std::move(body);

  loop.var = outerVar;
  loop.extent = blocks;
  loop.vectorize = loop.scalar = false;  // parallel stays on the outer loop
  loop.body.clear();
  loop.body.push_back(std::move(inner));
  nest::refreshParallelExtent(k);
  return "";
}

}  // namespace texc::loops
