#include "compiler/backend/cuda/CudaExecutable.h"

#include "compiler/backend/cuda/Nvrtc.h"

namespace texc {

std::unique_ptr<CudaExecutable> CudaExecutable::load(CudaDevice& device, const CudaModule& module, const loops::LoopProgram& program) {
  std::unique_ptr<CudaExecutable> exe(new CudaExecutable(device));
  exe->module_ = &module;
  exe->program_ = &program;
  PtxOptions opts;
  opts.arch = device.arch();
  PtxResult ptx = compileToPtx(module.source, "texc_program.cu", opts);
  exe->nvrtcMs_ = ptx.compileMs;
  void* m = device.loadModule(ptx.ptx);
  for (const CudaKernel& k : module.kernels) exe->functions_.push_back(device.function(m, k.symbol));

  // The memory plan: one arena, every buffer at a 256-byte aligned offset.
  size_t offset = 0;
  std::vector<size_t> offsets;
  for (const loops::Buffer& b : program.buffers) {
    size_t bytes = static_cast<size_t>(b.numElements()) * dtypeBytes(b.dtype);
    offsets.push_back(offset);
    exe->bytes_.push_back(bytes);
    offset += (bytes + 255) / 256 * 256;
  }
  exe->arenaBytes_ = offset;
  exe->arena_ = device.alloc(offset);
  for (size_t o : offsets) exe->addresses_.push_back(exe->arena_ + o);
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
    if (program_->buffers[b].kind != loops::BufferKind::Input) device_.copyToHost(host[b], addresses_[b], bytes_[b]);
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
