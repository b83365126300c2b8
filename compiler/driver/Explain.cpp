// texc explain: what the compiler did to a program and what it should cost.
//
//   1. the dataflow table of the unfused graph (one node per operator): value, operation, depth
//      level, number of readers, last reader;
//   2. the kernels with and without fusion: arrays, bytes moved, FLOPs, arithmetic intensity and
//      roofline time on a hardware model (host measured, or h100/h200);
//   3. every fusion decision, with its reason;
//   4. the memory plan of the intermediates: table, totals and timeline (docs/memory-planning.md);
//   5. where online-softmax rewrote something: its decisions, and the program without it
//      (`materialized`, --disable-pass=online-softmax) beside it in (2) and (4);
//   6. where a node divides by a computed tensor: reciprocal-of-sums' decision on it.
#include <fmt/format.h>

#include <iostream>
#include <map>

#include "compiler/analysis/Cost.h"
#include "compiler/analysis/HostModel.h"
#include "compiler/target/CpuTarget.h"
#include "compiler/driver/Commands.h"
#include "compiler/driver/TextTable.h"

namespace texc {

namespace {

std::string dataflowTable(const Graph& g) {
  std::vector<int> depth(g.tensors.size(), 0), users(g.tensors.size(), 0), lastUse(g.tensors.size(), -1);
  for (size_t ci = 0; ci < g.computations.size(); ++ci) {
    const Computation& c = g.computations[ci];
    std::map<int, bool> reads;
    forEachValue(c.body, [&](const Value& v) {
      if (v.kind == ValueKind::Access) reads[v.tensor] = true;
    });
    int d = 0;
    for (auto& [t, _] : reads) {
      d = std::max(d, depth[t] + 1);
      ++users[t];
      lastUse[t] = static_cast<int>(ci);
    }
    depth[c.tensor] = d;
  }
  std::vector<std::vector<std::string>> rows = {{"value", "op", "level", "users", "last use"}};
  auto last = [&](int t) {
    if (g.tensors[t].isOutput) return std::string("output");
    return lastUse[t] < 0 ? std::string("-") : "%" + g.tensors[g.computations[lastUse[t]].tensor].name;
  };
  for (int id : g.inputs)
    rows.push_back({g.tensors[id].name, "input", "0", std::to_string(users[id]), last(id)});
  for (const Computation& c : g.computations)
    rows.push_back({"%" + g.tensors[c.tensor].name, nodeOpName(c), std::to_string(depth[c.tensor]), std::to_string(users[c.tensor]),
                    last(c.tensor)});
  return renderTable(rows);
}

struct Totals {
  size_t kernels = 0;
  int arrays = 0;
  double bytes = 0, flops = 0, accesses = 0, memoryUs = 0, computeUs = 0, launchUs = 0, totalUs = 0;
};

Totals totals(const std::vector<KernelCost>& ks, const HardwareModel& hw) {
  Totals t;
  t.kernels = ks.size();
  for (const KernelCost& k : ks) {
    RooflineTime r = roofline(k, hw);
    t.arrays += k.arrays;
    t.bytes += k.bytes();
    t.flops += k.flops;
    t.accesses += k.accesses;
    t.memoryUs += r.memoryUs;
    t.computeUs += r.computeUs;
    t.launchUs += r.launchUs;
    t.totalUs += r.totalUs();
  }
  return t;
}

std::string kernelTable(const std::vector<KernelCost>& ks, const HardwareModel& hw) {
  std::vector<std::vector<std::string>> rows = {{"kernel", "op", "arrays", "bytes", "FLOPs", "FLOP/B", "time (us)", "bound by"}};
  for (const KernelCost& k : ks) {
    RooflineTime r = roofline(k, hw);
    rows.push_back({"%" + k.name, k.op, std::to_string(k.arrays), bytesText(k.bytes()), countText(k.flops, "FLOP"),
                    fmt::format("{:.3f}", k.intensity()), fmt::format("{:.1f}", r.totalUs()),
                    r.memoryUs >= r.computeUs ? "memory" : "compute"});
  }
  return renderTable(rows);
}

}  // namespace

int commandExplain(const ExplainOptions& o) {
  HardwareModel hw = hardwareModelFor(o.hw);

  ProgramOptions unfusedOpts = o.program;
  unfusedOpts.fuse = "none";
  CompileRequest unfusedRequest = unfusedOpts.request(Stage::Plan);
  unfusedRequest.printedPassesMustRun = false;  // its --fuse=none leaves fuse out
  std::unique_ptr<Compilation> unfused = compileProgram(unfusedRequest);
  if (!unfused->ok) return kExitProgramError;
  std::unique_ptr<Compilation> fused = compileProgram(o.program.request(Stage::Plan));
  if (!fused->ok) return kExitProgramError;

  std::vector<KernelCost> ku = costOfKernels(*unfused->state.graph);
  std::vector<KernelCost> kf = costOfKernels(*fused->state.graph);
  Totals tu = totals(ku, hw), tf = totals(kf, hw);

  // The same program with its softmax stored (the N x N scores and weights), when one was rewritten.
  const std::vector<std::string>& online = fused->state.onlineSoftmaxDecisions;
  std::unique_ptr<Compilation> materialized;
  if (hasOnlineNode(*fused->state.graph)) {
    ProgramOptions m = o.program;
    m.disablePasses.push_back("online-softmax");
    materialized = compileProgram(m.request(Stage::Plan));
    if (!materialized->ok) return kExitProgramError;
  }
  Totals tm = materialized ? totals(costOfKernels(*materialized->state.graph), hw) : Totals{};

  std::cout << "cpu: " << cpuTarget(o.program.pipeline.cpu).describe() << " (--cpu; the tile rule's machine)\n";
  std::cout << fmt::format("hardware model: {} — {:.1f} GB/s, {:.1f} GFLOP/s fp32, {} us launch overhead per kernel\n  ({})\n\n",
                           hw.name, hw.bandwidthGBs, hw.peakGflops, hw.launchOverheadUs, hw.source);
  std::cout << "== dataflow (unfused: one node per operator) ==\n" << dataflowTable(*unfused->state.graph) << "\n";

  std::cout << fmt::format("== kernels, fused (--fuse={}) vs unfused ==\n", o.program.fuse);
  std::vector<std::vector<std::string>> rows = {
      {"variant", "kernels", "arrays moved", "bytes", "FLOPs", "FLOP/B", "ops/access", "memory (us)", "compute (us)", "launch (us)",
       "total (us)"}};
  auto row = [&](const char* name, const Totals& t) {
    rows.push_back({name, std::to_string(t.kernels), std::to_string(t.arrays), bytesText(t.bytes), countText(t.flops, "FLOP"),
                    fmt::format("{:.3f}", t.bytes > 0 ? t.flops / t.bytes : 0),
                    fmt::format("{:.3f}", t.accesses > 0 ? t.flops / t.accesses : 0), fmt::format("{:.1f}", t.memoryUs),
                    fmt::format("{:.1f}", t.computeUs), fmt::format("{:.1f}", t.launchUs), fmt::format("{:.1f}", t.totalUs)});
  };
  row("unfused", tu);
  row("fused", tf);
  if (materialized) row("materialized", tm);
  std::cout << renderTable(rows);
  std::cout << "FLOP/B: texc's byte model (each distinct element once per kernel); ops/access: the lecture's model\n"
               "(every element load and store the loops execute, no cache reuse).\n";
  if (tf.totalUs > 0) std::cout << fmt::format("fusion moves {:.2f}x fewer bytes; modelled speed-up {:.2f}x\n", tu.bytes / std::max(tf.bytes, 1.0), tu.totalUs / tf.totalUs);
  if (materialized && tf.totalUs > 0)
    std::cout << fmt::format("materialized: the program without online-softmax (--disable-pass=online-softmax); the one pass moves {:.2f}x fewer bytes\n",
                             tm.bytes / std::max(tf.bytes, 1.0));
  std::cout << "\nfused kernels:\n" << kernelTable(kf, hw);

  std::cout << "\n== fusion decisions ==\n";
  if (fused->state.fusionDecisions.empty()) std::cout << "(none: nothing reads a computed value, or --fuse=none)\n";
  for (const FusionDecision& d : fused->state.fusionDecisions)
    std::cout << fmt::format("%{} -> {}: {}\n", d.producer, d.consumers, d.reason);
  if (!online.empty()) {
    std::cout << "\n== online softmax ==\n";
    for (const std::string& d : online) std::cout << d << "\n";
  }
  if (!fused->state.reciprocalDecisions.empty()) {
    std::cout << "\n== divisions by sums (reciprocal-of-sums) ==\n";
    for (const std::string& d : fused->state.reciprocalDecisions) std::cout << d << "\n";
  }
  if (!fused->state.sumOrderDecisions.empty()) {
    std::cout << "\n== summation order (sum-lanes): the same in every kernel, fused or not, on every CPU ==\n";
    for (const std::string& d : fused->state.sumOrderDecisions) std::cout << d << "\n";
  }
  std::cout << "\nBytes count each distinct element a kernel touches once; CPU stores may add a read of each\n"
               "written line (write-allocate). Transcendental functions count 1 FLOP. See docs/cost-model.md.\n";

  std::cout << fmt::format("\n== memory plan (--fuse={}) ==\n", o.program.fuse);
  std::cout << printStage(fused->state, Stage::Plan);
  if (o.program.fuse != "none" && unfused->state.memoryPlan) {
    const loops::MemoryPlan& u = *unfused->state.memoryPlan;
    std::cout << fmt::format("unfused (--fuse=none): {} temps in {} blocks, arena {} vs {} unplanned\n", u.temps.size(),
                             u.blockBytes.size(), bytesText(static_cast<double>(u.arenaBytes)), bytesText(static_cast<double>(u.naiveBytes)));
  }
  if (materialized && materialized->state.memoryPlan) {
    const loops::MemoryPlan& m = *materialized->state.memoryPlan;
    std::cout << fmt::format("materialized (--disable-pass=online-softmax): {} temps in {} blocks, arena {} vs {} unplanned\n", m.temps.size(),
                             m.blockBytes.size(), bytesText(static_cast<double>(m.arenaBytes)), bytesText(static_cast<double>(m.naiveBytes)));
  }
  return kExitOk;
}

}  // namespace texc
