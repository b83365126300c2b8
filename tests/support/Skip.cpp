#include "tests/support/Skip.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace texc::testsupport {

namespace fs = std::filesystem;

void skipTest(const std::string& reason) {
  std::printf("SKIPPED: %s\n", reason.c_str());
  std::fflush(stdout);
  // _Exit: no static destructors or Catch reporter epilogue run after the test was abandoned.
  std::_Exit(kSkipExitCode);
}

bool runningInCI() {
  const char* ci = std::getenv("CI");
  if (!ci) return false;
  std::string v = ci;
  return !v.empty() && v != "0" && v != "false";
}

bool cudaToolkitOnDisk() {
  std::vector<fs::path> dirs;
  for (const char* env : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* home = std::getenv(env); home && *home) {
      dirs.push_back(fs::path(home) / "lib64");
      dirs.push_back(fs::path(home) / "lib");
    }
  for (const char* d : {"/usr/local/cuda/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"}) dirs.push_back(d);
  std::error_code ec;
  for (const fs::path& d : dirs)
    for (fs::directory_iterator it(d, ec), end; !ec && it != end; it.increment(ec))
      if (it->path().filename().string().rfind("libnvrtc.so", 0) == 0) return true;
  return false;
}

void skipUnlessCudaRequired(const std::string& reason) {
  if (runningInCI() && cudaToolkitOnDisk())
    FAIL("CI is set and the CUDA toolkit is on this machine, so this test must run, but: " << reason);
  skipTest(reason);
}

}  // namespace texc::testsupport
