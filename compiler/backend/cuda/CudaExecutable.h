// A compiled program on the GPU: the module's PTX loaded, one device arena holding every buffer
// (the memory plan: each buffer at a 256-byte aligned offset), and the kernels launched in
// program order with every buffer's address as parameters.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/backend/cuda/CodeGenCUDA.h"
#include "compiler/backend/cuda/CudaDriver.h"
#include "compiler/loops/LoopIR.h"

namespace texc {

class CudaExecutable {
 public:
  // Compiles `module` with NVRTC for the device's architecture and loads it. Throws
  // CudaUnavailable, NvrtcUnavailable, CudaCompileError or CudaError.
  static std::unique_ptr<CudaExecutable> load(CudaDevice& device, const CudaModule& module, const loops::LoopProgram& program);
  ~CudaExecutable();

  // Copies the inputs in, runs every kernel, copies the outputs (and temporaries) back.
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
