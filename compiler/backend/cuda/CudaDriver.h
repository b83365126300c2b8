// The CUDA driver API, loaded at run time with dlopen (libcuda.so.1): one device, its primary
// context, modules loaded from PTX, launches, copies, events. No CUDA header is needed to build.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace texc {

// No GPU can be used: libcuda is absent, cuInit failed, or there is no device. what() says which.
struct CudaUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A driver call failed; what() names the call and the driver's message.
struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class CudaDevice {
 public:
  // Device 0 with its primary context current on this thread; throws CudaUnavailable.
  static std::unique_ptr<CudaDevice> open();
  ~CudaDevice();
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  std::string name() const { return name_; }
  std::string arch() const;  // "sm_90"

  // Device memory.
  uint64_t alloc(size_t bytes);
  void free(uint64_t ptr);
  void copyToDevice(uint64_t dst, const void* src, size_t bytes);
  void copyToHost(void* dst, uint64_t src, size_t bytes);
  void synchronize();

  // Modules and launches. Handles are opaque pointers owned by the driver.
  void* loadModule(const std::string& ptx);
  void* function(void* module, const std::string& name);
  void launch(void* function, int64_t blocks, int threads, const std::vector<uint64_t>& args);

  // Events: record both around some launches, then the elapsed milliseconds.
  void* createEvent();
  void record(void* event);
  float elapsedMs(void* start, void* end);
  void destroyEvent(void* event);

  struct Api;  // the dlopen'ed entry points (CudaDriver.cpp)

 private:
  CudaDevice() = default;
  void check(int rc, const char* call) const;
  const Api* api_ = nullptr;
  int device_ = 0;
  void* context_ = nullptr;
  int major_ = 0, minor_ = 0;
  std::string name_;
  std::vector<void*> modules_;
};

}  // namespace texc
