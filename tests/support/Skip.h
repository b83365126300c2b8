// Skipped tests that CTest counts as skipped. Catch2 v2 has no skip, and ctest registers each
// TEST_CASE as its own test (tests/CMakeLists.txt), so a test that cannot run here prints why and
// ends its process with kSkipExitCode, which every registered test declares as SKIP_RETURN_CODE.
// Run through ctest (or one test case at a time): a skip ends the whole test process.
#pragma once

#include <string>

namespace texc::testsupport {

constexpr int kSkipExitCode = 77;

// Prints "SKIPPED: reason" and exits with kSkipExitCode.
[[noreturn]] void skipTest(const std::string& reason);

// Whether the environment variable CI is set (not empty, "0" or "false").
bool runningInCI();

// Whether a CUDA toolkit's NVRTC library is on disk ($CUDA_HOME, $CUDA_PATH, /usr/local/cuda, the
// system library folders), whether or not it loads.
bool cudaToolkitOnDisk();

// For tests that need NVRTC or ptxas: skips with `reason`, except in CI on a machine with the
// toolkit, where the test must run, so the missing piece is a failure.
[[noreturn]] void skipUnlessCudaRequired(const std::string& reason);

}  // namespace texc::testsupport
