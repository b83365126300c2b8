#include "compiler/backend/cuda/CudaExecutable.h"

#include "compiler/backend/cuda/Nvrtc.h"

#include <algorithm>

namespace texc {

DeviceArenaLayout deviceArenaLayout(const loops::LoopProgram& program, const loops::MemoryPlan* plan) {
  DeviceArenaLayout layout;
  layout.offsets.assign(program.buffers.size(), 0);
  auto align = [](size_t n) { return (n + 255) / 256 * 256; };
  for (size_t b = 0; b < program.buffers.size(); ++b) {
    if (plan && plan->find(static_cast<int>(b))) continue;
    const loops::Buffer& buf = program.buffers[b];
    layout.offsets[b] = layout.bytes;
    layout.bytes += align(static_cast<size_t>(buf.numElements()) * dtypeBytes(buf.dtype));
  }
  if (plan) {
    size_t base = layout.bytes;
    for (const loops::PlannedTemp& t : plan->temps) layout.offsets[t.buffer] = base + static_cast<size_t>(t.offset);
    layout.bytes = base + align(static_cast<size_t>(plan->arenaBytes));
  }
  return layout;
}

std::unique_ptr<CudaExecutable> CudaExecutable::load(CudaDevice& device, const CudaModule& module, const loops::LoopProgram& program,
                                                     const loops::MemoryPlan* plan) {
  std::unique_ptr<CudaExecutable> exe(new CudaExecutable(device));
  exe->module_ = &module;
  exe->program_ = &program;
  PtxOptions opts;
  opts.arch = device.arch();
  PtxResult ptx = compileToPtx(module.source, "texc_program.cu", opts);
  exe->nvrtcMs_ = ptx.compileMs;
  void* m = device.loadModule(ptx.ptx);
  for (const CudaKernel& k : module.kernels) exe->functions_.push_back(device.function(m, k.symbol));

  // One device arena, laid out by the memory plan.
  DeviceArenaLayout layout = deviceArenaLayout(program, plan);
  for (const loops::Buffer& b : program.buffers) exe->bytes_.push_back(static_cast<size_t>(b.numElements()) * dtypeBytes(b.dtype));
  exe->arenaBytes_ = layout.bytes;
  exe->arena_ = device.alloc(std::max<size_t>(layout.bytes, 256));
  for (size_t o : layout.offsets) exe->addresses_.push_back(exe->arena_ + o);
  return exe;
}

CudaExecutable::~CudaExecutable() {
  if (arena_) device_.free(arena_);
}

void CudaExecutable::launchAll() {
  for (size_t k = 0; k < functions_.size(); ++k) {
    const CudaKernel& info = module_->kernels[k];
    device_.launch(functions_[k], info.blocks, info.threads, addresses_);
  }
}

void CudaExecutable::run(void* const* host) {
  for (size_t b = 0; b < program_->buffers.size(); ++b)
    if (program_->buffers[b].kind == loops::BufferKind::Input) device_.copyToDevice(addresses_[b], host[b], bytes_[b]);
  launchAll();
  device_.synchronize();
  for (size_t b = 0; b < program_->buffers.size(); ++b)
    if (program_->buffers[b].kind == loops::BufferKind::Output) device_.copyToHost(host[b], addresses_[b], bytes_[b]);
}

double CudaExecutable::runKernelsTimed() {
  void* start = device_.createEvent();
  void* end = device_.createEvent();
  device_.record(start);
  launchAll();
  device_.record(end);
  double ms = device_.elapsedMs(start, end);
  device_.destroyEvent(start);
  device_.destroyEvent(end);
  return ms;
}

}  // namespace texc
