// cse: two nodes that compute the same expression over the same domain are one. The later node's
// readers are redirected to the earlier one (dce then removes it). Outputs are kept as they are.
#include <fmt/format.h>

#include <unordered_map>

#include "compiler/passes/Pass.h"

namespace texc {

namespace {

std::string nodeKey(const Graph& g, const Computation& c) {
  std::string k = fmt::format("{}|{}|{}|", dtypeName(g.tensors[c.tensor].dtype), c.numLhsVars, static_cast<int>(c.online));
  for (const IndexVar& v : c.vars) k += fmt::format("{},", v.extent);
  k += valueKey(c.body);
  return k;
}

}  // namespace

bool runCSE(CompileState& s) {
  Graph& g = *s.graph;
  std::unordered_map<std::string, int> seen;
  bool changed = false;
  for (Computation& c : g.computations) {
    std::string key = nodeKey(g, c);
    auto [it, fresh] = seen.emplace(key, c.tensor);
    if (fresh || g.tensors[c.tensor].isOutput) continue;
    changed |= replaceUses(g, c.tensor, it->second);
  }
  return changed;
}

}  // namespace texc
