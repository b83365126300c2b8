#include "compiler/backend/cuda/CudaDriver.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <mutex>

namespace texc {

// The driver entry points texc uses, with the signatures of cuda.h (CUresult is an int enum,
// CUdevice an int, CUdeviceptr a 64-bit integer, the rest opaque pointers). The _v2 names are the
// symbols cuda.h's macros select.
struct CudaDevice::Api {
  void* handle = nullptr;
  std::string error;
  int (*init)(unsigned) = nullptr;
  int (*getErrorString)(int, const char**) = nullptr;
  int (*deviceGetCount)(int*) = nullptr;
  int (*deviceGet)(int*, int) = nullptr;
  int (*deviceGetName)(char*, int, int) = nullptr;
  int (*deviceGetAttribute)(int*, int, int) = nullptr;
  int (*primaryCtxRetain)(void**, int) = nullptr;
  int (*primaryCtxRelease)(int) = nullptr;
  int (*ctxSetCurrent)(void*) = nullptr;
  int (*ctxSynchronize)() = nullptr;
  int (*memAlloc)(uint64_t*, size_t) = nullptr;
  int (*memFree)(uint64_t) = nullptr;
  int (*memcpyHtoD)(uint64_t, const void*, size_t) = nullptr;
  int (*memcpyDtoH)(void*, uint64_t, size_t) = nullptr;
  int (*moduleLoadData)(void**, const void*) = nullptr;
  int (*moduleUnload)(void*) = nullptr;
  int (*moduleGetFunction)(void**, void*, const char*) = nullptr;
  int (*launchKernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**, void**) = nullptr;
  int (*eventCreate)(void**, unsigned) = nullptr;
  int (*eventRecord)(void*, void*) = nullptr;
  int (*eventSynchronize)(void*) = nullptr;
  int (*eventElapsedTime)(float*, void*, void*) = nullptr;
  int (*eventDestroy)(void*) = nullptr;
};

namespace {

constexpr int kAttrComputeMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrComputeMinor = 76;

template <typename F>
bool bind(void* h, F& fn, const char* name, const char* fallback = nullptr) {
  fn = reinterpret_cast<F>(dlsym(h, name));
  if (!fn && fallback) fn = reinterpret_cast<F>(dlsym(h, fallback));
  return fn != nullptr;
}

}  // namespace

namespace {
const CudaDevice::Api* loadApi();
}

std::unique_ptr<CudaDevice> CudaDevice::open() {
  const Api* api = loadApi();
  if (!api->handle) throw CudaUnavailable(api->error);
  std::unique_ptr<CudaDevice> d(new CudaDevice());
  d->api_ = api;
  int rc = api->init(0);
  if (rc == 100) throw CudaUnavailable("no CUDA device: libcuda is present but the driver reports no GPU (CUDA_ERROR_NO_DEVICE)");
  if (rc != 0) {
    const char* msg = nullptr;
    api->getErrorString(rc, &msg);
    throw CudaUnavailable(fmt::format("cuInit failed: {} (error {})", msg ? msg : "unknown error", rc));
  }
  int count = 0;
  d->check(api->deviceGetCount(&count), "cuDeviceGetCount");
  if (count == 0) throw CudaUnavailable("no CUDA device: the driver reports 0 GPUs");
  d->check(api->deviceGet(&d->device_, 0), "cuDeviceGet");
  char name[256] = {};
  d->check(api->deviceGetName(name, sizeof(name) - 1, d->device_), "cuDeviceGetName");
  d->name_ = name;
  d->check(api->deviceGetAttribute(&d->major_, kAttrComputeMajor, d->device_), "cuDeviceGetAttribute");
  d->check(api->deviceGetAttribute(&d->minor_, kAttrComputeMinor, d->device_), "cuDeviceGetAttribute");
  d->check(api->primaryCtxRetain(&d->context_, d->device_), "cuDevicePrimaryCtxRetain");
  d->check(api->ctxSetCurrent(d->context_), "cuCtxSetCurrent");
  return d;
}

CudaDevice::~CudaDevice() {
  if (!api_) return;
  for (void* m : modules_) api_->moduleUnload(m);
  if (context_) api_->primaryCtxRelease(device_);
}

std::string CudaDevice::arch() const { return fmt::format("sm_{}{}", major_, minor_); }

void CudaDevice::check(int rc, const char* call) const {
  if (rc == 0) return;
  const char* msg = nullptr;
  api_->getErrorString(rc, &msg);
  // 222: PTX from an NVRTC newer than the driver.
  const char* hint = rc == 222 ? "; the driver is older than NVRTC: use the NVRTC of a toolkit the driver supports (CUDA_HOME)" : "";
  throw CudaError(fmt::format("{} failed: {} (CUDA error {}){}", call, msg ? msg : "unknown error", rc, hint));
}

uint64_t CudaDevice::alloc(size_t bytes) {
  uint64_t p = 0;
  check(api_->memAlloc(&p, bytes == 0 ? 1 : bytes), "cuMemAlloc");
  return p;
}
void CudaDevice::free(uint64_t ptr) { api_->memFree(ptr); }
void CudaDevice::copyToDevice(uint64_t dst, const void* src, size_t bytes) { check(api_->memcpyHtoD(dst, src, bytes), "cuMemcpyHtoD"); }
void CudaDevice::copyToHost(void* dst, uint64_t src, size_t bytes) { check(api_->memcpyDtoH(dst, src, bytes), "cuMemcpyDtoH"); }
void CudaDevice::synchronize() { check(api_->ctxSynchronize(), "cuCtxSynchronize"); }

void* CudaDevice::loadModule(const std::string& ptx) {
  void* m = nullptr;
  check(api_->moduleLoadData(&m, ptx.c_str()), "cuModuleLoadData");
  modules_.push_back(m);
  return m;
}

void* CudaDevice::function(void* module, const std::string& name) {
  void* f = nullptr;
  check(api_->moduleGetFunction(&f, module, name.c_str()), ("cuModuleGetFunction(" + name + ")").c_str());
  return f;
}

void CudaDevice::launch(void* function, int64_t blocks, int threads, const std::vector<uint64_t>& args) {
  std::vector<uint64_t> values = args;  // the driver reads each parameter through a pointer
  std::vector<void*> params;
  for (uint64_t& v : values) params.push_back(&v);
  check(api_->launchKernel(function, static_cast<unsigned>(blocks), 1, 1, static_cast<unsigned>(threads), 1, 1, 0, nullptr,
                           params.data(), nullptr),
        "cuLaunchKernel");
}

void* CudaDevice::createEvent() {
  void* e = nullptr;
  check(api_->eventCreate(&e, 0), "cuEventCreate");
  return e;
}
void CudaDevice::record(void* event) { check(api_->eventRecord(event, nullptr), "cuEventRecord"); }
float CudaDevice::elapsedMs(void* start, void* end) {
  check(api_->eventSynchronize(end), "cuEventSynchronize");
  float ms = 0;
  check(api_->eventElapsedTime(&ms, start, end), "cuEventElapsedTime");
  return ms;
}
void CudaDevice::destroyEvent(void* event) { api_->eventDestroy(event); }

namespace {

const CudaDevice::Api* loadApi() {
  static CudaDevice::Api api;
  static std::once_flag once;
  std::call_once(once, [] {
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) h = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      api.error = "no NVIDIA driver: libcuda.so.1 is not on the loader path (a GPU and its driver are needed to run)";
      return;
    }
    bool ok = bind(h, api.init, "cuInit") && bind(h, api.getErrorString, "cuGetErrorString") &&
              bind(h, api.deviceGetCount, "cuDeviceGetCount") && bind(h, api.deviceGet, "cuDeviceGet") &&
              bind(h, api.deviceGetName, "cuDeviceGetName") && bind(h, api.deviceGetAttribute, "cuDeviceGetAttribute") &&
              bind(h, api.primaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
              bind(h, api.primaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease") &&
              bind(h, api.ctxSetCurrent, "cuCtxSetCurrent") && bind(h, api.ctxSynchronize, "cuCtxSynchronize") &&
              bind(h, api.memAlloc, "cuMemAlloc_v2") && bind(h, api.memFree, "cuMemFree_v2") &&
              bind(h, api.memcpyHtoD, "cuMemcpyHtoD_v2") && bind(h, api.memcpyDtoH, "cuMemcpyDtoH_v2") &&
              bind(h, api.moduleLoadData, "cuModuleLoadData") && bind(h, api.moduleUnload, "cuModuleUnload") &&
              bind(h, api.moduleGetFunction, "cuModuleGetFunction") && bind(h, api.launchKernel, "cuLaunchKernel") &&
              bind(h, api.eventCreate, "cuEventCreate") && bind(h, api.eventRecord, "cuEventRecord") &&
              bind(h, api.eventSynchronize, "cuEventSynchronize") &&
              bind(h, api.eventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime") &&
              bind(h, api.eventDestroy, "cuEventDestroy_v2", "cuEventDestroy");
    if (!ok) {
      api.error = "libcuda.so.1 lacks driver API entry points texc needs (driver too old?)";
      dlclose(h);
      return;
    }
    api.handle = h;
  });
  return &api;
}

}  // namespace

}  // namespace texc
