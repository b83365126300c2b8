#include "compiler/loops/FuseSiblingReductions.h"

#include <algorithm>
#include <optional>
#include <set>

#include "compiler/loops/Substitute.h"
#include "compiler/loops/Walk.h"

namespace texc::loops {

namespace {

// A loop that only updates accumulators: its updated accumulators, or nullopt.
std::optional<std::set<int>> reductionOnly(const Stmt& s) {
  const Loop* l = s.getIf<Loop>();
  if (!l || l->parallel || l->gpu != GpuLoop::None || l->body.empty()) return std::nullopt;
  std::set<int> updated;
  for (const Stmt& c : l->body) {
    const AccUpdate* u = c.getIf<AccUpdate>();
    if (!u) return std::nullopt;
    updated.insert(u->acc);
  }
  return updated;
}

bool readsAny(const Loop& l, const std::set<int>& accs) {
  bool found = false;
  for (const Stmt& c : l.body)
    forEachExprNode(c.as<AccUpdate>().value, [&](const Expr& e) { found |= e.kind == ExprKind::AccRead && accs.count(e.acc); });
  return found;
}

// Merges, in `list`, each reduction loop into the loop just before it, across the accumulator
// starts of its own that lie between them.
int mergeSiblings(Block& list) {
  int merged = 0;
  for (size_t m = 1; m < list.size(); ++m) {
    std::optional<std::set<int>> second = reductionOnly(list[m]);
    if (!second) continue;
    size_t l = m;  // back over the second loop's own starts
    while (l > 0 && list[l - 1].is<AccInit>() && second->count(list[l - 1].as<AccInit>().acc)) --l;
    if (l == 0) continue;
    const size_t f = l - 1;
    std::optional<std::set<int>> first = reductionOnly(list[f]);
    if (!first) continue;
    Loop& a = list[f].as<Loop>();
    Loop& b = list[m].as<Loop>();
    if (a.extent != b.extent || readsAny(a, *second) || readsAny(b, *first)) continue;
    for (Stmt& c : b.body) {
      substitute(c, b.var, IndexExpr::makeVar(a.var));
      a.body.push_back(std::move(c));
    }
    a.vectorize = a.vectorize || b.vectorize;
    // The starts go above the first loop (in their order), the second loop goes away.
    list.erase(list.begin() + static_cast<std::ptrdiff_t>(m));
    std::rotate(list.begin() + static_cast<std::ptrdiff_t>(f), list.begin() + static_cast<std::ptrdiff_t>(l),
                list.begin() + static_cast<std::ptrdiff_t>(m));
    m = f + (m - l);  // the merged loop; the next candidate follows it
    ++merged;
  }
  return merged;
}

}  // namespace

int fuseSiblingReductions(LoopProgram& p) {
  int n = 0;
  for (Kernel& k : p.kernels) {
    rewrite(k.body, [&](Stmt& s) -> std::optional<Block> {
      if (Block* nested = nestedBlock(s)) n += mergeSiblings(*nested);
      return std::nullopt;
    });
    n += mergeSiblings(k.body);
  }
  return n;
}

}  // namespace texc::loops
