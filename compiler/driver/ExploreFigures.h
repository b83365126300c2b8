// The figures of texc explore's page (docs/explore.md): the dataflow graph (Graphviz's `dot`
// when on PATH, else a built-in layered layout), the memory plan as a timeline, the roofline and
// the bar chart of measured variants, each as inline SVG.
#pragma once

#include <string>
#include <vector>

#include "compiler/analysis/HostModel.h"
#include "compiler/driver/Commands.h"
#include "compiler/graph/Graph.h"
#include "compiler/loops/LoopIR.h"
#include "compiler/loops/MemoryPlan.h"

namespace texc::explore {

struct Picture {
  std::string svg;
  std::string how;  // which layout drew it
};

// The path of an executable `name` on PATH, or "".
std::string findOnPath(const std::string& name);

// Draws `g` with its nodes coloured by kernel (kernelOf: by tensor id, -1 for none): by `dot` at
// `dotPath` when not empty, else (or when dot fails) by the built-in layout; `why` says why dot
// was not used.
Picture drawGraph(const Graph& g, const std::vector<int>& kernelOf, const std::string& id, const std::string& dotPath,
                  const std::string& why);

// Kernels across, buffers as bars (colour = arena block), reuse and in-place writes marked.
std::string memorySvg(const loops::LoopProgram& p, const loops::MemoryPlan& plan);

struct RoofPoint {
  std::string label;
  double intensity = 0, gflops = 0;
  int kernel = -1;  // colour
  enum Kind { Fused, Unfused, Measured } kind = Fused;
};

// Log-log roofline: each machine's roofs, each point at its arithmetic intensity.
std::string rooflineSvg(const std::vector<HardwareModel>& machines, const std::vector<RoofPoint>& points);

// Bars of the measured variants' median times.
std::string measureSvg(const CompareReport& report);

}  // namespace texc::explore
