// printGraphDot: the dataflow graph in Graphviz form (`texc compile --emit dot | dot -Tsvg`).
// Inputs are ellipses, nodes are boxes labelled with their operation and type, outputs are
// drawn bold; an edge goes from each tensor to every node that reads it.
#include <fmt/format.h>

#include <set>

#include "compiler/graph/Graph.h"

namespace texc {

std::string printGraphDot(const Graph& g) { return printGraphDot(g, {}); }

std::string printGraphDot(const Graph& g, const std::vector<std::string>& nodeAttributes) {
  auto extra = [&](int id) {
    return id < static_cast<int>(nodeAttributes.size()) && !nodeAttributes[id].empty() ? ", " + nodeAttributes[id] : std::string();
  };
  auto typeText = [](const TensorInfo& t) {
    std::string s = dtypeName(t.dtype);
    if (t.shape.empty()) return s;
    s += "[";
    for (size_t i = 0; i < t.shape.size(); ++i) s += (i ? ", " : "") + std::to_string(t.shape[i]);
    return s + "]";
  };
  std::string out = "digraph texc {\n  rankdir=TB;\n  node [fontname=\"monospace\"];\n";
  for (int id : g.inputs)
    out += fmt::format("  t{} [shape=ellipse{}, label=\"{}\\n{}\"];\n", id, extra(id), g.tensors[id].name, typeText(g.tensors[id]));
  for (const Computation& c : g.computations) {
    const TensorInfo& t = g.tensors[c.tensor];
    out += fmt::format("  t{} [shape=box{}{}, label=\"%{} = {}\\n{}\"];\n", c.tensor, t.isOutput ? ", style=bold" : "", extra(c.tensor), t.name,
                       nodeOpName(c), typeText(t));
    std::set<int> reads;
    forEachValue(c.body, [&](const Value& v) {
      if (v.kind == ValueKind::Access) reads.insert(v.tensor);
    });
    for (int r : reads) out += fmt::format("  t{} -> t{};\n", r, c.tensor);
  }
  return out + "}\n";
}

}  // namespace texc
