#include "compiler/analysis/Cost.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace texc {

namespace {

// Each distinct subexpression counts once (the compiled code computes a repeated one once:
// gelu's fused kernel reads x + b five times and adds once), and once per iteration of the loops
// where it runs (Graph.h, placementDepth): fused softmax's row max once per row.
double flopsOf(const Value& v, const Computation& c, const std::vector<LoopScope>& scopes, std::set<std::string>& seen) {
  if (v.kind != ValueKind::Const && v.kind != ValueKind::Access && v.kind != ValueKind::IndexValue && !seen.insert(canonicalKey(v, c)).second)
    return 0;
  double own = 0;
  switch (v.kind) {
    case ValueKind::Unary: own = v.unaryOp == UnaryOp::Neg ? 1 : 0; break;
    case ValueKind::Binary: own = 1; break;
    case ValueKind::Call: own = v.builtin == Builtin::Rsqrt ? 2 : 1; break;
    default: break;
  }
  if (v.kind != ValueKind::Reduce) {
    double total = own > 0 ? own * tripsTo(scopes, placementDepth(scopes, v)) : 0;
    for (const Value& a : v.args) total += flopsOf(a, c, scopes, seen);
    return total;
  }
  std::vector<LoopScope> inner = scopesInside(scopes, v, c);
  double total = tripsTo(inner, inner.size());  // one combine per term
  for (const Value& a : v.args) total += flopsOf(a, c, inner, seen);
  return total;
}

// Element loads executed: each distinct access counts once per iteration of the loops where it
// runs.
double loadsOf(const Value& v, const Computation& c, const std::vector<LoopScope>& scopes, std::set<std::string>& seen) {
  if (v.kind == ValueKind::Access) return seen.insert(canonicalKey(v, c)).second ? tripsTo(scopes, placementDepth(scopes, v)) : 0;
  if (v.kind == ValueKind::Reduce && !seen.insert("reduce " + canonicalKey(v, c)).second) return 0;  // computed once
  std::vector<LoopScope> inner = v.kind == ValueKind::Reduce ? scopesInside(scopes, v, c) : scopes;
  double total = 0;
  for (const Value& a : v.args) total += loadsOf(a, c, inner, seen);
  return total;
}

// An online-softmax node runs as one pass (LowerToLoops.cpp): per row and key the scores and
// seven operations (the running max, two exponentials with their subtractions, the running sum),
// per row, key and column the weight and three (o * a + e * w, o loaded and stored); then one
// division per output (weighted average) or two per row (m + log(l)).
void onlineCost(const Computation& c, double& flops, double& accesses) {
  const Value& s = onlineScores(c);
  const Value* w = onlineWeight(c);
  const std::vector<int> rowVars = onlineRowVars(c);
  std::vector<LoopScope> scopes;
  std::vector<int> cols;
  double rows = 1, colCount = 1;
  for (int v = 0; v < c.numLhsVars; ++v) {
    if (std::binary_search(rowVars.begin(), rowVars.end(), v)) {
      scopes.push_back({{v}, static_cast<double>(c.vars[v].extent)});
      rows *= static_cast<double>(c.vars[v].extent);
    } else {
      cols.push_back(v);
      colCount *= static_cast<double>(c.vars[v].extent);
    }
  }
  const int key = onlineKeyReduce(c).reduceVars[0];
  scopes.push_back({{key}, static_cast<double>(c.vars[key].extent)});
  const double rowKeys = rows * static_cast<double>(c.vars[key].extent);
  std::set<std::string> seen, loads;
  flops = flopsOf(s, c, scopes, seen) + 7 * rowKeys;
  accesses = loadsOf(s, c, scopes, loads);
  if (w) {
    for (int v : cols) scopes.push_back({{v}, static_cast<double>(c.vars[v].extent)});
    flops += flopsOf(*w, c, scopes, seen) + 3 * rowKeys * colCount + rows * colCount;
    accesses += loadsOf(*w, c, scopes, loads) + 2 * rowKeys * colCount;
  } else {
    flops += 2 * rows;
  }
}

}  // namespace

std::vector<KernelCost> costOfKernels(const Graph& g) {
  std::vector<KernelCost> out;
  for (const Computation& c : g.computations) {
    KernelCost k;
    const TensorInfo& t = g.tensors[c.tensor];
    k.name = t.name;
    k.op = nodeOpName(c);
    k.bytesWritten = static_cast<double>(t.numElements()) * dtypeBytes(t.dtype);
    // Distinct elements read per tensor: the largest box any access of it covers.
    std::map<int, double> read;
    forEachValue(c.body, [&](const Value& v) {
      if (v.kind != ValueKind::Access) return;
      const TensorInfo& src = g.tensors[v.tensor];
      double box = 1;
      for (size_t d = 0; d < v.indices.size(); ++d) {
        Interval r = rangeOfIndex(v.indices[d], c.vars);
        int64_t lo = std::max<int64_t>(r.lo, 0), hi = std::min<int64_t>(r.hi, src.shape[d] - 1);
        box *= hi >= lo ? static_cast<double>(hi - lo + 1) : 0;
      }
      double& b = read[v.tensor];
      b = std::max(b, box);
    });
    for (auto& [id, elems] : read) k.bytesRead += elems * dtypeBytes(g.tensors[id].dtype);
    k.arrays = static_cast<int>(read.size()) + 1;
    double points = 1;
    for (int v = 0; v < c.numLhsVars; ++v) points *= static_cast<double>(c.vars[v].extent);
    if (c.online != OnlineForm::None) {
      onlineCost(c, k.flops, k.accesses);
      k.accesses += points;
      out.push_back(std::move(k));
      continue;
    }
    std::set<std::string> seen;
    k.flops = flopsOf(c.body, c, lhsScopes(c), seen);
    std::set<std::string> loads;
    k.accesses = loadsOf(c.body, c, lhsScopes(c), loads) + points;
    out.push_back(std::move(k));
  }
  return out;
}

std::optional<HardwareModel> namedHardwareModel(const std::string& name) {
  // Figures from NVIDIA's H100 (SXM5) and H200 product briefs; the 4 us launch overhead is the
  // one the lecture notes use for small kernels.
  if (name == "h100") return HardwareModel{"h100", 3350, 67000, 4, "NVIDIA H100 SXM5 datasheet: 3.35 TB/s HBM3, 67 TFLOP/s fp32"};
  if (name == "h200") return HardwareModel{"h200", 4800, 67000, 4, "NVIDIA H200 datasheet: 4.8 TB/s HBM3e, 67 TFLOP/s fp32"};
  return std::nullopt;
}

RooflineTime roofline(const KernelCost& k, const HardwareModel& hw) {
  RooflineTime t;
  t.memoryUs = k.bytes() / (hw.bandwidthGBs * 1e3);
  t.computeUs = hw.peakGflops > 0 ? k.flops / (hw.peakGflops * 1e3) : 0;
  t.launchUs = hw.launchOverheadUs;
  return t;
}

}  // namespace texc
