// tests/support/Skip.h: a skipped test ends its process with exit code 77 (ctest's
// SKIP_RETURN_CODE) and says why; in CI with the CUDA toolkit on disk, the NVRTC/ptxas tests fail
// instead of skipping. The probes are hidden test cases that this file's tests run in a child.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdlib>

#include "tests/support/Skip.h"
#include "tests/unit/driver/DriverTestUtil.h"

namespace texc::drivertest {
namespace {

TEST_CASE("skip probe: skipTest", "[.][skip-probe]") { testsupport::skipTest("the probe's reason"); }

TEST_CASE("skip probe: skipUnlessCudaRequired", "[.][skip-probe]") { testsupport::skipUnlessCudaRequired("NVRTC is not here"); }

struct Child {
  int status = -1;
  std::string output;
};

// Runs one test case of this executable with `env` ("NAME=value ...") in front.
Child runProbe(const Sandbox& box, const std::string& env, const std::string& testName) {
  fs::path self = fs::read_symlink("/proc/self/exe");
  fs::path log = box.cap() / "probe.log";
  std::string cmd = "env -u CI " + env + " '" + self.string() + "' '" + testName + "' --warn NoTests > '" + log.string() + "' 2>&1";
  int raw = std::system(cmd.c_str());
  Child c;
  c.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  c.output = readBytes(log);
  return c;
}

TEST_CASE("skip: a skipped test exits 77 and prints its reason", "[driver][skip]") {
  Sandbox box;
  Child c = runProbe(box, "", "skip probe: skipTest");
  INFO(c.output);
  CHECK(c.status == testsupport::kSkipExitCode);
  CHECK(c.output.find("SKIPPED: the probe's reason") != std::string::npos);
}

TEST_CASE("skip: the NVRTC tests skip outside CI and fail in CI when the toolkit is on disk", "[driver][skip]") {
  Sandbox box;
  // A toolkit folder holding libnvrtc: the library need not load to count as installed.
  fs::path toolkit = box.in() / "cuda";
  fs::create_directories(toolkit / "lib64");
  writeBytes(toolkit / "lib64" / "libnvrtc.so.12", "not a library");
  std::string home = "CUDA_HOME='" + toolkit.string() + "'";

  Child outside = runProbe(box, home, "skip probe: skipUnlessCudaRequired");
  INFO(outside.output);
  CHECK(outside.status == testsupport::kSkipExitCode);
  CHECK(outside.output.find("SKIPPED: NVRTC is not here") != std::string::npos);

  for (const char* off : {"CI=", "CI=0", "CI=false"}) {
    Child c = runProbe(box, home + " " + off, "skip probe: skipUnlessCudaRequired");
    INFO(off << "\n" << c.output);
    CHECK(c.status == testsupport::kSkipExitCode);
  }

  Child ci = runProbe(box, home + " CI=true", "skip probe: skipUnlessCudaRequired");
  INFO(ci.output);
  CHECK(ci.status != 0);
  CHECK(ci.status != testsupport::kSkipExitCode);
  // Catch wraps the message at 80 columns.
  CHECK(ci.output.find("CI is set and the CUDA toolkit is on this machine") != std::string::npos);
  CHECK(ci.output.find("but: NVRTC is not here") != std::string::npos);
}

}  // namespace
}  // namespace texc::drivertest
