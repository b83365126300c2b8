// Cost accounting per kernel (one kernel per node of the final dataflow graph), and the roofline.
//
// Bytes: each distinct element of each tensor a kernel touches is counted once per kernel (the
// kernel is assumed to keep it in cache while it needs it): reads of an input tensor count the
// elements inside the box of index ranges of its accesses (clipped to the tensor), writes count
// the output once. Caveat: a CPU store to memory not in cache first reads the line
// (write-allocate), so real traffic for written arrays can be twice the count; non-temporal
// stores avoid that. The model does not count it.
//
// FLOPs: each + - * / (and unary minus), each min, max, comparison and select, sqrt, floor and
// ceil counts 1; each reduction step counts 1; rsqrt counts 2 (sqrt and a division); exp, log,
// tanh, sigmoid, erf, sin, cos and pow count 1 each by the roofline convention, although their
// vectorized approximations take 10-30 instructions (so elementwise kernels that use them are
// more compute-heavy than the count says).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/graph/Graph.h"

namespace texc {

struct KernelCost {
  std::string name;      // the node's tensor
  std::string op;        // its operation ("fused", "add", "contract.sum", ...)
  int arrays = 0;        // distinct tensors read and written
  double bytesRead = 0;
  double bytesWritten = 0;
  double flops = 0;
  // The lecture's model: element loads and stores the loops execute (a repeated read in one
  // term counts once), with no cache reuse. E = D + (A+B)*C: 9 accesses for 3 ops op by op (1/3),
  // 5 for 3 fused (3/5).
  double accesses = 0;
  double bytes() const { return bytesRead + bytesWritten; }
  double intensity() const { return bytes() > 0 ? flops / bytes() : 0; }
  double opsPerAccess() const { return accesses > 0 ? flops / accesses : 0; }
};

std::vector<KernelCost> costOfKernels(const Graph& g);

// A machine for the roofline: time = max(flops / peak, bytes / bandwidth) + launch overhead.
struct HardwareModel {
  std::string name;
  double bandwidthGBs = 0;     // GB/s
  double peakGflops = 0;       // fp32 GFLOP/s
  double launchOverheadUs = 0;  // per kernel (GPU models)
  std::string source;          // where the figures come from
};

// "h100", "h200"; nothing for other names.
std::optional<HardwareModel> namedHardwareModel(const std::string& name);

struct RooflineTime {
  double memoryUs = 0;
  double computeUs = 0;
  double launchUs = 0;
  double totalUs() const { return std::max(memoryUs, computeUs) + launchUs; }
};

RooflineTime roofline(const KernelCost& k, const HardwareModel& hw);

}  // namespace texc
