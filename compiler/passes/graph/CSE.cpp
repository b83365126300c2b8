// cse: two nodes that compute the same expression over the same domain are one. The later node's
// readers are redirected to the earlier one (dce then removes it). Outputs are kept as they are.
#include <fmt/format.h>

#include <cstring>
#include <unordered_map>

#include "compiler/passes/Pass.h"

namespace texc {

namespace {

void keyIndex(std::string& k, const IndexExpr& ix) {
  k += fmt::format("({}:{}:{}", static_cast<int>(ix.kind), ix.constant, ix.var);
  for (const IndexExpr& o : ix.ops) keyIndex(k, o);
  k += ')';
}

// A canonical text of the expression: variables by id, constants by their bits.
void keyValue(std::string& k, const Value& v) {
  uint64_t bits;
  std::memcpy(&bits, &v.constant, sizeof bits);
  k += fmt::format("({}:{}:{}:{}:{}:{}:{}:{}:{}:{}:{}", static_cast<int>(v.kind), bits, v.var, v.tensor, static_cast<int>(v.check),
                   v.ownerReduce, static_cast<int>(v.unaryOp), static_cast<int>(v.binaryOp), static_cast<int>(v.builtin),
                   static_cast<int>(v.reduceKind), v.reduceId);
  for (int rv : v.reduceVars) k += fmt::format(",r{}", rv);
  for (const IndexExpr& ix : v.indices) keyIndex(k, ix);
  for (const Value& a : v.args) keyValue(k, a);
  k += ')';
}

std::string nodeKey(const Graph& g, const Computation& c) {
  std::string k = fmt::format("{}|{}|", dtypeName(g.tensors[c.tensor].dtype), c.numLhsVars);
  for (const IndexVar& v : c.vars) k += fmt::format("{},", v.extent);
  keyValue(k, c.body);
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
