// fuse-statements: merges the nodes that split-ops made from one statement back into one node,
// by substituting each producer's expression for its read. Such producers share the statement's
// index variables and are read at exactly those variables, so substitution needs no index
// rewriting. With --fuse=none it does nothing, and every operator stays its own kernel.
//
// This is the default fusion until cross-statement fusion lands: one kernel per statement.
#include "compiler/passes/Pass.h"

namespace texc {

namespace {

bool readsAtIdentity(const Value& v, int numLhsVars) {
  if (static_cast<int>(v.indices.size()) != numLhsVars) return false;
  for (int d = 0; d < numLhsVars; ++d)
    if (v.indices[d].kind != IndexExpr::Kind::Var || v.indices[d].var != d) return false;
  return true;
}

}  // namespace

bool runFuseStatements(CompileState& s) {
  if (s.options.fuse == FuseMode::None) return false;
  Graph& g = *s.graph;
  bool changed = false;
  for (Computation& c : g.computations) {
    // Producers come first in program order and were already merged, so one sweep suffices.
    forEachValueMut(c.body, [&](Value& v) {
      if (v.kind != ValueKind::Access || v.ownerReduce >= 0) return;
      const TensorInfo& t = g.tensors[v.tensor];
      if (t.isInput || t.isOutput || t.computation < 0) return;
      const Computation& p = g.computations[t.computation];
      if (p.statement != c.statement || p.numLhsVars != c.numLhsVars || !readsAtIdentity(v, c.numLhsVars)) return;
      if (s.options.fuse == FuseMode::Elementwise && p.body.kind == ValueKind::Reduce) return;
      v = p.body;
      changed = true;
    });
  }
  return changed;
}

}  // namespace texc
