// NVRTC, loaded at run time with dlopen, so texc builds and runs without the CUDA toolkit.
//
// The library is searched in $CUDA_HOME/lib64, $CUDA_HOME/lib, /usr/local/cuda/lib64, then on the
// loader path (libnvrtc.so, libnvrtc.so.13, libnvrtc.so.12). Sources compile to PTX for a virtual
// architecture (sm_90 -> compute_90); the PTX is cached by a hash of the source, the options and
// the NVRTC version under $XDG_CACHE_HOME/texc/ptx (or ~/.cache/texc/ptx). Compile errors come
// back with the generated source lines they point at.
#pragma once

#include <stdexcept>
#include <string>

namespace texc {

// NVRTC could not be loaded; what() lists the places searched.
struct NvrtcUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The generated source did not compile; what() is the log with each cited line shown.
struct CudaCompileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct PtxOptions {
  std::string arch = "sm_90";  // sm_XX (or compute_XX)
  bool useCache = true;
};

struct PtxResult {
  std::string ptx;
  double compileMs = 0;  // NVRTC's time; 0 when the PTX came from the cache
  bool fromCache = false;
  std::string nvrtcVersion;  // "13.0"
};

// Loads NVRTC (once); false with the reason when it is absent.
bool nvrtcAvailable(std::string* why = nullptr);

// Compiles `source` (named `name` in messages) to PTX. Throws NvrtcUnavailable, CudaCompileError,
// or std::invalid_argument for a malformed arch.
PtxResult compileToPtx(const std::string& source, const std::string& name, const PtxOptions& options = {});

// "sm_90" / "compute_90" / "90" -> 90; -1 when malformed.
int parseArch(const std::string& arch);

// The log of a failed compile with every "name(LINE): ..." line followed by that source line.
std::string annotateLog(const std::string& log, const std::string& source);

}  // namespace texc
