// unroll: copies a loop's body `factor` times per iteration (tail iterations as straight-line
// copies after the loop), or replaces a short loop by one copy per iteration (LoopTransforms.h).
#include <fmt/format.h>

#include "compiler/loops/Substitute.h"
#include "compiler/loops/Walk.h"
#include "compiler/loops/transforms/LoopTransforms.h"

namespace texc::loops {

namespace {

// Unrolling copies statements; past this many in the kernel the request is refused rather than
// making a program the code generator takes minutes over.
constexpr int64_t kMaxStatements = 100000;

// `body` with v := value, appended to `out`.
void appendCopy(Block& out, const Block& body, int v, const IndexExpr& value) {
  Block copy = body;
  substitute(copy, v, value);
  for (Stmt& s : copy) out.push_back(std::move(s));
}

}  // namespace

std::string unrollLoop(Kernel& k, const std::string& var, int64_t factor) {
  nest::Found f = nest::findLoop(k, var);
  if (!f.error.empty()) return f.error;
  if (std::string why = nest::checkTransformable(k, *f.loop); !why.empty()) return why;
  Loop& loop = *f.loop;
  const int v = loop.var;
  const int64_t extent = loop.extent;
  const bool full = factor == 0;
  if (full && extent > kMaxFullUnroll)
    return fmt::format("a full unroll needs an extent of at most {}, and the loop has {}; give a factor",
                       kMaxFullUnroll, extent);
  if (!full && (factor < 2 || factor > kMaxUnrollFactor))
    return fmt::format("the factor must be in 2..{}, got {}", kMaxUnrollFactor, factor);
  if (!full && factor > extent)
    return fmt::format("the factor {} is larger than the loop's extent {}; unroll it fully instead", factor,
                       extent);
  if (!full && loop.parallel && extent % factor != 0)
    return fmt::format("{} is the parallel loop and {} does not divide its extent {} (the tail would run in every "
                       "thread's chunk); split it and unroll the inner loop",
                       var, factor, extent);
  const int64_t copies = full ? extent : factor + extent % factor;
  const int64_t bodySize = countStmts(loop.body);
  if (countStmts(k.body) + (copies - 1) * bodySize > kMaxStatements)
    return fmt::format("the kernel would hold more than {} statements", kMaxStatements);

  Block body = std::move(loop.body);
  Block tail;  // statements that replace or follow the loop
  if (full) {
    for (int64_t u = 0; u < extent; ++u) appendCopy(tail, body, v, IndexExpr::makeConst(u));
  } else {
    Block unrolled;
    for (int64_t u = 0; u < factor; ++u) appendCopy(unrolled, body, v, affineIndex(factor, v, u));
    for (int64_t u = extent / factor * factor; u < extent; ++u) appendCopy(tail, body, v, IndexExpr::makeConst(u));
    loop.body = std::move(unrolled);
    loop.extent = extent / factor;
  }
  // The copies go where the loop was: in its place (full unroll) or right after it.
  Block& parent = *f.parent;
  size_t at = f.position;
  if (full) parent.erase(parent.begin() + static_cast<std::ptrdiff_t>(at));
  else ++at;
  parent.insert(parent.begin() + static_cast<std::ptrdiff_t>(at), std::make_move_iterator(tail.begin()),
                std::make_move_iterator(tail.end()));
  nest::refreshParallelExtent(k);
  return "";
}

}  // namespace texc::loops
