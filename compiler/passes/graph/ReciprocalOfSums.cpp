// reciprocal-of-sums: a division by a row statistic made from sums becomes a multiplication by
// the statistic's reciprocal.
//
// Softmax divides every element of a row by the row's sum (`e[i, j] / s[i]`), and a division
// costs many times a multiplication: `e[i, j] * (1 / s[i])` computes the reciprocal once per row
// (LLVM and NVRTC hoist it out of the row's loop) at the price of one more rounding, which the
// error bound counts (the expression is what runs: compiler/reference/ErrorBound.cpp sees both
// operations).
//
// The choice is made here, once, on the unfused graph, and not by the backends: it used to be
// LLVM's (`arcp` on the division), which took the reciprocal where the divisor was a hoistable
// accumulator of a fused kernel but not where it was the element of a tensor of the unfused
// program, so fusion changed the bits (random programs 170067, 170092 and 170101). Written into
// the graph, fused and unfused kernels compute the same operations.
//
// Each node that divides by a computed tensor gets a decision line (`--print-after`, `texc
// explain`): rewritten, or why not. A node's division is rewritten when all of these hold:
//   * it is the node's root (after split-ops, a node of its own: `%y = div %e[i, j], %s[i]`);
//   * the divisor reads a tensor made from sums: computed by a sum, or from such a tensor (layer
//     norm's sqrt(var + eps)). A max or min is exact, and so is a division by it;
//   * the divisor's value does not change along the node's last variable (its innermost loop),
//     so that its reciprocal is computed once per row. split-ops writes a function of a row
//     statistic over the whole row (`%d[i, j] = sqrt %v[i]`): what the divisor depends on is
//     followed through its producers, not read off its indices.
#include <fmt/format.h>

#include "compiler/passes/Pass.h"
#include "core/IndexAlgebra.h"

namespace texc {

namespace {

// Which dimensions of each tensor its value depends on. split-ops computes a row statistic's
// function over the whole row (`%z.1[i, j] = abs %m[i]`), so a tensor's shape does not say it:
// a node depends on its dimension d when its body reads variable d as a value, in an index of
// a dimension that the read tensor depends on, or in the index of a guarded read. An input
// depends on all of its dimensions.
std::vector<std::vector<bool>> dimensionsDependedOn(const Graph& g) {
  std::vector<std::vector<bool>> deps(g.tensors.size());
  for (int id : g.inputs) deps[id].assign(g.tensors[id].shape.size(), true);
  for (const Computation& c : g.computations) {
    std::vector<bool>& d = deps[c.tensor];
    d.assign(g.tensors[c.tensor].shape.size(), false);
    forEachValue(c.body, [&](const Value& v) {
      if (v.kind == ValueKind::IndexValue && v.var < c.numLhsVars) d[v.var] = true;
      if (v.kind != ValueKind::Access) return;
      // A guarded read (padding) skips its term where its index leaves the tensor: whether it
      // does depends on the index, whatever the tensor holds (a count of a window's cells).
      const bool guarded = v.check != AccessCheck::InBounds;
      for (size_t k = 0; k < v.indices.size(); ++k)
        if (guarded || deps[v.tensor][k])
          for (int x = 0; x < c.numLhsVars; ++x) d[x] = d[x] || usesVar(v.indices[k], x);
    });
  }
  return deps;
}

// Whether the element `access` reads changes with variable `var`.
bool variesWith(const Value& access, int var, const std::vector<std::vector<bool>>& deps) {
  for (size_t k = 0; k < access.indices.size(); ++k)
    if (deps[access.tensor][k] && usesVar(access.indices[k], var)) return true;
  return false;
}

}  // namespace

bool runReciprocalOfSums(CompileState& s) {
  Graph& g = *s.graph;
  const std::vector<std::vector<bool>> deps = dimensionsDependedOn(g);
  std::vector<bool> madeFromSums(g.tensors.size(), false);
  bool changed = false;
  s.reciprocalDecisions.clear();
  for (Computation& c : g.computations) {
    bool fromSums = false;
    forEachValue(c.body, [&](const Value& v) {
      fromSums = fromSums || (v.kind == ValueKind::Reduce && v.reduceKind == ReduceKind::Sum) ||
                 (v.kind == ValueKind::Access && madeFromSums[v.tensor]);
    });
    madeFromSums[c.tensor] = fromSums;

    Value& v = c.body;
    if (c.online != OnlineForm::None || c.numLhsVars == 0 || v.kind != ValueKind::Binary || v.binaryOp != BinaryOp::Div) continue;
    // (A node without variables is one element: nothing to hoist, and nothing to say.)
    const Value& divisor = v.args[1];
    if (divisor.kind != ValueKind::Access || g.tensors[divisor.tensor].isInput) continue;
    const std::string& node = g.tensors[c.tensor].name;
    const std::string& by = g.tensors[divisor.tensor].name;
    if (!madeFromSums[divisor.tensor]) {
      s.reciprocalDecisions.push_back(fmt::format("%{}: stays a division: %{} is not made from a sum (a max or min is divided by exactly)", node, by));
      continue;
    }
    const std::string& row = c.vars[c.numLhsVars - 1].name;
    if (variesWith(divisor, c.numLhsVars - 1, deps)) {
      s.reciprocalDecisions.push_back(fmt::format("%{}: stays a division: %{} changes along {} (a reciprocal per element saves nothing)", node, by, row));
      continue;
    }
    s.reciprocalDecisions.push_back(fmt::format(
        "%{}: multiplies by 1 / %{}: it is made from sums and does not change along {}, so the reciprocal is computed outside the "
        "loop over {} (one more rounding than the division)", node, by, row, row));
    Value one;
    one.kind = ValueKind::Const;
    one.constant = 1;
    one.range = divisor.range;
    Value reciprocal;
    reciprocal.kind = ValueKind::Binary;
    reciprocal.binaryOp = BinaryOp::Div;
    reciprocal.range = v.range;
    reciprocal.args = {std::move(one), std::move(v.args[1])};
    v.binaryOp = BinaryOp::Mul;
    v.args[1] = std::move(reciprocal);
    changed = true;
  }
  return changed;
}

}  // namespace texc
