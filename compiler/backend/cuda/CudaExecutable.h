// A compiled program on the GPU: the module's PTX loaded, one device arena holding every buffer,
// and the kernels launched in program order with every buffer's address as parameters.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/backend/cuda/CodeGenCUDA.h"
#include "compiler/backend/cuda/CudaDriver.h"
#include "compiler/loops/LoopIR.h"
#include "compiler/loops/MemoryPlan.h"

namespace texc {

// Where each buffer lives in the device arena: inputs and outputs (and temps without a plan)
// one after another at 256-byte aligned offsets; then the memory plan's arena, each planned temp
// at its planned offset, so temps whose lifetimes do not overlap share bytes as on the CPU.
struct DeviceArenaLayout {
  std::vector<size_t> offsets;  // per buffer
  size_t bytes = 0;
};
DeviceArenaLayout deviceArenaLayout(const loops::LoopProgram& program, const loops::MemoryPlan* plan);

class CudaExecutable {
 public:
  // Compiles `module` with NVRTC for the device's architecture and loads it. Throws
  // CudaUnavailable, NvrtcUnavailable, CudaCompileError or CudaError.
  // `plan` (may be null: --no-plan) places the temporaries; it must have no in-place writes.
  static std::unique_ptr<CudaExecutable> load(CudaDevice& device, const CudaModule& module, const loops::LoopProgram& program,
                                              const loops::MemoryPlan* plan);
  ~CudaExecutable();

  // Copies the inputs in, runs every kernel, copies the outputs back.
  // `host[b]` is buffer b's host memory.
  void run(void* const* host);
  // Runs the kernels only (data already on the device); returns the GPU time in milliseconds.
  double runKernelsTimed();

  size_t numKernels() const { return functions_.size(); }
  size_t arenaBytes() const { return arenaBytes_; }
  double nvrtcMs() const { return nvrtcMs_; }

 private:
  CudaExecutable(CudaDevice& d) : device_(d) {}
  void launchAll();

  CudaDevice& device_;
  const CudaModule* module_ = nullptr;
  const loops::LoopProgram* program_ = nullptr;
  std::vector<void*> functions_;
  uint64_t arena_ = 0;
  size_t arenaBytes_ = 0;
  std::vector<uint64_t> addresses_;  // per buffer
  std::vector<size_t> bytes_;        // per buffer
  double nvrtcMs_ = 0;
};

}  // namespace texc
