// Helpers the loop transformations share: finding a loop by name, checking what a parallel
// loop requires, keeping the kernel's parallel extent in step with its marks.
#include <fmt/format.h>

#include <algorithm>

#include "compiler/loops/Walk.h"
#include "compiler/loops/transforms/LoopTransforms.h"

namespace texc::loops::nest {

Found findLoop(Kernel& k, const std::string& name) {
  Found out;
  int count = 0;
  std::string names;  // every loop, for the message when none matches
  walkWithEnclosing(k.body, [&](Stmt& s, const std::vector<Stmt*>& enclosing) {
    auto* l = s.getIf<Loop>();
    if (!l) return WalkAction::Advance;
    names += (names.empty() ? "" : ", ") + k.varNames[l->var];
    const bool inTile = std::any_of(enclosing.begin(), enclosing.end(), [](const Stmt* e) { return e->is<Tile>(); });
    if (!inTile && l->var >= 0 && k.varNames[l->var] == name && ++count == 1) {
      out.stmt = &s;
      out.loop = l;
      out.parent = enclosing.empty() ? &k.body : nestedBlock(*enclosing.back());
      out.position = static_cast<size_t>(&s - out.parent->data());
      out.topLevel = enclosing.empty();
    }
    return WalkAction::Advance;
  });
  if (count == 0) {
    out = Found{};
    out.error = fmt::format("kernel {} has no loop over '{}' (its loops: {})", k.name, name, names.empty() ? "none" : names);
  } else if (count > 1) {
    out = Found{};
    out.error = fmt::format("kernel {} has {} loops over '{}' (copies made by unroll, or one per reduction); "
                            "transform it before unrolling",
                            k.name, count, name);
  }
  return out;
}

std::string checkTransformable(const Kernel& k, const Loop& loop) {
  const bool bound = anyStmt(k.body, [&](const Stmt& s) {
    if (!s.is<Pack>() && !s.is<Tile>()) return false;
    std::vector<int> vars = boundVars(s);
    return std::find(vars.begin(), vars.end(), loop.var) != vars.end();
  });
  if (bound)
    return fmt::format("kernel {} has a pack or tile statement that runs {} itself; transform the loops around it",
                       k.name, k.varNames[loop.var]);
  return "";
}

bool writesWith(const Store& store, const std::vector<const Stmt*>& enclosing, int var) {
  auto indexUses = [&](int v) {
    return std::any_of(store.index.begin(), store.index.end(), [&](const IndexExpr& ix) { return usesVar(ix, v); });
  };
  if (indexUses(var)) return true;
  for (const Stmt* s : enclosing)
    if (auto* t = s->getIf<Tile>())
      if ((indexUses(t->rowVar) && usesVar(t->rowBase, var)) || (indexUses(t->colVar) && usesVar(t->colBase, var)))
        return true;
  return false;
}

std::string parallelProblem(const Kernel& k, const Loop& loop) {
  std::vector<bool> set(k.numAccs, false), updated(k.numAccs, false);
  forEachStmt(loop.body, [&](const Stmt& s) {
    if (auto* init = s.getIf<AccInit>()) set[init->acc] = true;
    if (auto* update = s.getIf<AccUpdate>()) updated[update->acc] = true;
    if (auto* set = s.getIf<AccSet>()) updated[set->acc] = true;
  });
  for (int a = 0; a < k.numAccs; ++a)
    if (updated[a] && !set[a])
      return fmt::format("its iterations carry accumulator acc{} (a reduction over {}), which threads cannot share", a,
                         k.varNames[loop.var]);
  std::string why;
  walkWithEnclosing(loop.body, [&](const Stmt& s, const std::vector<const Stmt*>& enclosing) {
    auto* store = s.getIf<Store>();
    if (!store || writesWith(*store, enclosing, loop.var)) return WalkAction::Advance;
    why = fmt::format("a store inside it does not index with {}", k.varNames[loop.var]);
    return WalkAction::Stop;
  });
  if (!why.empty()) return why;
  // What stands beside the parallel loop runs once per chunk, in every thread.
  const bool storesOutside = !walk(k.body, [&](const Stmt& s) {
    if (s.getIf<Loop>() == &loop) return WalkAction::SkipNested;
    return s.is<Store>() ? WalkAction::Stop : WalkAction::Advance;
  });
  if (storesOutside) return "the kernel stores outside that loop too (every thread would run those stores)";
  return "";
}

int addVar(Kernel& k, const std::string& name) {
  auto taken = [&](const std::string& n) {
    for (const std::string& v : k.varNames)
      if (v == n) return true;
    return false;
  };
  std::string unique = name;
  for (int i = 2; taken(unique); ++i) unique = fmt::format("{}{}", name, i);
  k.varNames.push_back(unique);
  return static_cast<int>(k.varNames.size()) - 1;
}

void refreshParallelExtent(Kernel& k) {
  k.parallelExtent = 0;
  for (const Stmt& s : k.body)
    if (auto* l = s.getIf<Loop>(); l && l->parallel) k.parallelExtent = l->extent;
}

}  // namespace texc::loops::nest
