#include "compiler/loops/gpu/ImplicitGemmNest.h"

#include <fmt/format.h>

#include "compiler/loops/Build.h"
#include "compiler/loops/ImplicitGemm.h"
#include "compiler/loops/PerfectNest.h"
#include "compiler/loops/gpu/GpuLegality.h"

namespace texc::loops::gpu {

namespace {

// The matched nest rebuilt: the batch loops in their order, then the rows, then the columns.
void rebuild(Kernel& k, const ImplicitGemm& g, const AccInit& init) {
  const Contraction& c = g.c;
  AccUpdate update;
  update.acc = c.acc;
  update.reduce = ReduceKind::Sum;
  update.value.kind = ExprKind::Binary;
  update.value.binaryOp = BinaryOp::Mul;
  update.value.args = {c.rowOperand, c.colOperand};
  Loop kLoop = build::loop(c.k, c.K);
  if (g.padding.empty()) {
    kLoop.body.push_back(std::move(update));
  } else {
    Guard pad;
    pad.conds = g.padding;
    pad.body.push_back(std::move(update));
    kLoop.body.push_back(std::move(pad));
  }
  Block body;
  body.push_back(init);
  body.push_back(std::move(kLoop));
  body.push_back(c.store);
  std::vector<std::pair<int, int64_t>> order;
  for (const Loop* l : g.chain)
    if (l->var != c.i && l->var != c.j) order.push_back({l->var, l->extent});
  order.push_back({c.i, c.M});
  order.push_back({c.j, c.N});
  const bool parallel = g.chain.front()->parallel;
  k.parallelExtent = parallel ? order.front().second : 0;
  k.body = build::loopNest(order, std::move(body), parallel);
}

}  // namespace

int rewriteImplicitGemms(LoopProgram& p) {
  int rewritten = 0;
  for (Kernel& k : p.kernels) {
    if (k.computeType != DType::F32 || matchTiledContraction(p, k, kernelShape(k))) continue;
    Kernel candidate = k;
    ImplicitGemm g;
    if (!matchImplicitGemm(p, candidate, g)) continue;
    const AccInit init = innermostBody(g.chain)[0].as<AccInit>();
    mergeRowIntoColumns(p, candidate, g, PixelMerge::WhereTheStoreAllows);
    rebuild(candidate, g, init);
    // Only when the tiled contraction then takes it (rows and columns of at least 16, the
    // padding over the columns alone).
    if (!matchTiledContraction(p, candidate, kernelShape(candidate))) continue;
    candidate.schedule = fmt::format(
        "implicit GEMM: {}x{}x{} (rows {}, columns {}, reduction {}){}; the terms and their order unchanged",
        g.c.M, g.c.N, g.c.K, candidate.varNames[g.c.i], candidate.varNames[g.c.j], candidate.varNames[g.c.k],
        g.padding.empty() ? "" : ", the padding a guard over the reduction and the columns");
    k = std::move(candidate);
    ++rewritten;
  }
  return rewritten;
}

}  // namespace texc::loops::gpu
