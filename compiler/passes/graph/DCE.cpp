// dce: keep the nodes some output depends on; drop the rest.
#include "compiler/passes/Pass.h"

namespace texc {

bool runDCE(CompileState& s) {
  Graph& g = *s.graph;
  std::vector<bool> live(g.tensors.size(), false);
  for (int id : g.outputs) live[id] = true;
  for (size_t ci = g.computations.size(); ci-- > 0;) {
    const Computation& c = g.computations[ci];
    if (!live[c.tensor]) continue;
    forEachValue(c.body, [&](const Value& v) {
      if (v.kind == ValueKind::Access) live[v.tensor] = true;
    });
  }
  bool changed = false;
  for (const Computation& c : g.computations) changed |= !live[c.tensor];
  if (changed) compactGraph(g, live);
  return changed;
}

}  // namespace texc
