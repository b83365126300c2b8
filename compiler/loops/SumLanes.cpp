#include "compiler/loops/SumLanes.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "compiler/loops/InterleaveLoops.h"
#include "compiler/loops/Walk.h"

namespace texc::loops {

namespace {

// A sum's or product's update: the reductions whose order the rule fixes.
bool addsUpSum(const Stmt& s) {
  return s.is<AccUpdate>() && (s.as<AccUpdate>().reduce == ReduceKind::Sum || s.as<AccUpdate>().reduce == ReduceKind::Prod);
}

}  // namespace

int64_t sumLaneGroup(DType dtype) { return dtype == DType::F64 ? 8 : 16; }

bool canKeepSumLanes(const Loop& l, std::string* why) {
  auto fail = [&](const char* reason) {
    if (why) *why = reason;
    return false;
  };
  if (l.scalar || l.parallel || l.gpu != GpuLoop::None) return fail("it is a scalar, parallel or GPU loop");
  if (anyStmt(l.body, [](const Stmt& s) { return s.is<Loop>() || s.is<Tile>() || s.is<Pack>(); })) return fail("it holds a loop");
  std::set<int> summed;
  bool inOrder = true;
  forEachStmt(l.body, [&](const Stmt& s) {
    if (addsUpSum(s)) summed.insert(s.as<AccUpdate>().acc);
    if (s.is<Store>()) inOrder = inOrder && (!usesVar(s.as<Store>().index, l.var) || walksLastDimension(s.as<Store>().index, l.var));
    if (const Expr* v = valueOf(s)) forEachLoad(*v, [&](const Expr& e) { inOrder = inOrder && (!usesVar(e.index, l.var) || walksLastDimension(e.index, l.var)); });
  });
  if (summed.empty()) return fail("it adds up no sum or product");
  bool readsSum = false;
  forEachStmt(l.body, [&](const Stmt& s) {
    if (s.is<AccInit>() || s.is<AccSet>()) readsSum = readsSum || summed.count(s.is<AccInit>() ? s.as<AccInit>().acc : s.as<AccSet>().acc);
    if (s.is<AccUpdate>() && !addsUpSum(s)) readsSum = readsSum || summed.count(s.as<AccUpdate>().acc);
    if (const Expr* v = valueOf(s))
      forEachExprNode(*v, [&](const Expr& e) { readsSum = readsSum || (e.kind == ExprKind::AccRead && summed.count(e.acc)); });
  });
  if (readsSum) return fail("it reads or sets an accumulator that it sums");
  if (!l.vectorize && !inOrder) return fail("it is not a vector loop and strides across memory");
  return true;
}

int64_t sumLanesFor(const Loop& l, DType dtype) {
  if (!canKeepSumLanes(l)) return 0;
  const int64_t g = sumLaneGroup(dtype);
  const int64_t terms = l.pairs ? l.extent / 2 : l.extent;
  if (terms >= kInterleaveVectors * g) return kInterleaveVectors * g;
  return terms >= g ? g : 0;
}

namespace {

// "k0_y, j < 4096, acc1 (sum): its first 4096 terms in 64 lanes, the other 0 in order", or in
// order, and why.
std::string decision(const Kernel& k, const Loop& l, DType dtype) {
  std::string accs;
  forEachStmt(l.body, [&](const Stmt& s) {
    if (!addsUpSum(s)) return;
    const AccUpdate* u = &s.as<AccUpdate>();
    accs += fmt::format("{}acc{} ({})", accs.empty() ? "" : ", ", u->acc, u->reduce == ReduceKind::Sum ? "sum" : "prod");
  });
  const int64_t terms = l.pairs ? l.extent / 2 : l.extent;
  const std::string where = fmt::format("{}, {} < {}{}, {}", k.name, k.varNames[l.var], l.extent, l.pairs ? " (bf16 pairs)" : "", accs);
  if (l.sumLanes > 0)
    return fmt::format("{}: its first {} {} in {} lanes, the other {} in order", where, terms - terms % l.sumLanes, l.pairs ? "pairs" : "terms",
                       l.sumLanes, terms % l.sumLanes);
  std::string why;
  if (canKeepSumLanes(l, &why))
    why = fmt::format("{} {}, fewer than a group's {} lanes", terms, l.pairs ? "pairs" : "terms", sumLaneGroup(dtype));
  return fmt::format("{}: in order, {}", where, why);
}

}  // namespace

int pinSumLanes(LoopProgram& p, std::vector<std::string>* decisions) {
  int marked = 0;
  for (Kernel& k : p.kernels)
    forEachInnermostLoop(k.body, [&](Loop& l) {
      l.sumLanes = sumLanesFor(l, k.computeType);
      marked += l.sumLanes > 0;
      if (!decisions || !anyStmt(l.body, addsUpSum)) return;
      std::string line = decision(k, l, k.computeType);  // a row pass repeated (pipelined rows) says it once
      if (std::find(decisions->begin(), decisions->end(), line) == decisions->end()) decisions->push_back(std::move(line));
    });
  return marked;
}

}  // namespace texc::loops
