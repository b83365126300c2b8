// bf16 matmuls on AMX tiles (tdpbf16ps), run for real where the host has them: tails in every
// dimension, k blocks, a bf16 output (partial sums in f32 scratch), an f32 one, A B^T (B's
// pack gathers pairs along k) and B^T B (A packed pair by pair), each within the error bound of
// `--check`. Elsewhere the test is skipped with its reason; the code itself is
// checked on any host by tests/lit/tile/matmul-bf16-amx.tex (--cpu sapphirerapids).
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "tests/support/Skip.h"
#include "tests/unit/driver/DriverTestUtil.h"

namespace texc::drivertest {

namespace {

// Whether /proc/cpuinfo lists AMX tiles with bf16 products.
bool hostHasAmxBf16() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) return line.find(" amx_tile") != std::string::npos && line.find(" amx_bf16") != std::string::npos;
  return false;
}

// Compiles `file` (its loops must be on AMX tiles), runs it with --check on 2 threads, and
// requires an error line within the bound for every output in `outputs`.
void checkAmxRun(const Sandbox& box, const fs::path& file, const std::string& seed, std::initializer_list<const char*> outputs) {
  Result loops = runTexc(box, {"compile", file.string(), "--emit", "loops", "-o", "-"});
  INFO(loops.describe());
  REQUIRE(loops.status == 0);
  CHECK(loops.out.find("32 k steps per tdpbf16ps") != std::string::npos);
  Result run = runTexc(box, {"run", file.string(), "--random", seed, "--check", "--threads", "2"});
  INFO(run.describe());
  REQUIRE_FALSE(run.crashed);
  CHECK(run.status == 0);
  for (const char* name : outputs) CHECK(run.out.find(std::string(name) + ": max abs error") != std::string::npos);
  CHECK(run.out.find("beyond") == std::string::npos);
}

}  // namespace

TEST_CASE("run: bf16 matmuls on AMX tiles, where the host has them, are within the error bound", "[driver][run][amx]") {
  if (!hostHasAmxBf16()) testsupport::skipTest("this host's CPU has no AMX tiles with bf16 products (amx_tile, amx_bf16)");
  struct Shape {
    int m, k, n;
  };
  // 1100: k blocks with a tail that is not a whole tile (and odd: a last pair ending in +0);
  // 45 and 17: less than one tile in every dimension.
  for (const Shape s : {Shape{70, 1100, 90}, Shape{33, 17, 45}, Shape{128, 2048, 96}}) {
    DYNAMIC_SECTION(s.m << "x" << s.k << "x" << s.n) {
      Sandbox box;
      const std::string text = fmt::format(
          "input A : bf16[{0}, {1}]\ninput B : bf16[{1}, {2}]\ninput Bt : bf16[{2}, {1}]\ninput u : f32\n"
          "output C[i, j] = sum(k: A[i, k] * B[k, j])\n"
          "output F[i, j] = sum(k: A[i, k] * B[k, j]) * u\n"
          "output T[i, j] = sum(k: A[i, k] * Bt[j, k])\n"
          "output U[i, j] = sum(k: B[k, i] * B[k, j])\n",
          s.m, s.k, s.n);
      checkAmxRun(box, box.input("amx.tex", text), "3", {"C", "F", "T", "U"});
    }
  }
}

TEST_CASE("run: bf16 convolutions on AMX tiles, where the host has them, are within the error bound", "[driver][run][amx]") {
  if (!hostHasAmxBf16()) testsupport::skipTest("this host's CPU has no AMX tiles with bf16 products (amx_tile, amx_bf16)");
  // Padded and strided, scale/bias and a max pool in the epilogue; C = 130: two k blocks of the
  // weights packed whole (1170 terms).
  Sandbox box;
  const fs::path file = box.input(
      "conv.tex",
      "input I : bf16[2, 130, 14, 15]\ninput Wt : bf16[40, 130, 3, 3]\ninput scale : bf16[40]\ninput bias : bf16[40]\n"
      "conv[n, k, y < 14, x < 15] = sum(c, r, s: I[n, c, y + r - 1, x + s - 1] * Wt[k, c, r, s])\n"
      "sb[n, k, y, x] = conv[n, k, y, x] * scale[k] + bias[k]\n"
      "output pool[n, k, y < 7, x < 7] = max(dy < 2, dx < 2: sb[n, k, 2 * y + dy, 2 * x + dx])\n"
      "output strided[n, k, y < 7, x < 8] = sum(c, r, s: I[n, c, 2 * y + r - 1, 2 * x + s - 1] * Wt[k, c, r, s])\n");
  checkAmxRun(box, file, "5", {"pool", "strided"});
}

}  // namespace texc::drivertest
