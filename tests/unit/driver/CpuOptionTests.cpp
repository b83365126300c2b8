// --cpu NAME (docs/cli.md): code for any CPU can be emitted on any host; running it where the host
// lacks its features is a usage error that names them and writes nothing; an unknown CPU is a
// usage error on every command that takes the option; `passes` and `explain` say which CPU.
#include <catch2/catch.hpp>

#include "tests/unit/driver/DriverTestUtil.h"

namespace texc::drivertest {

namespace {

const std::string kGelu = (kExamples / "gelu.tex").string();
const std::vector<std::string> kSmall = {"-D", "N=16", "-D", "D=64"};

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

}  // namespace

TEST_CASE("option --cpu: assembly for AVX2 and for AVX-512, whatever the host", "[driver][cpu]") {
  Sandbox box;
  std::string avx2 = expectStatus(box, with({"compile", kGelu, "--emit", "asm", "--cpu", "haswell"}, kSmall), 0).out;
  CHECK(contains(avx2, "ymm"));
  CHECK_FALSE(contains(avx2, "zmm"));
  std::string avx512 = expectStatus(box, with({"compile", kGelu, "--emit", "asm", "--cpu", "skylake-avx512"}, kSmall), 0).out;
  CHECK(contains(avx512, "zmm"));
  // The object file too: emitting needs no feature of the host.
  Result obj = expectStatus(box, with({"compile", kGelu, "--emit", "obj", "--cpu", "znver3", "-o", "k.o"}, kSmall), 0);
  CHECK(fs::file_size(box.work() / "k.o") > 0);
}

TEST_CASE("option --cpu: an unknown CPU is a usage error on every command that takes it", "[driver][cpu]") {
  Sandbox box;
  Snapshot before = snapshot(box.work());
  for (const char* command : {"compile", "run", "compare", "explain", "tune"}) {
    INFO(command);
    Result r = expectStatus(box, with({command, kGelu, "--cpu", "pentium-9000"}, kSmall), 2);
    CHECK(contains(r.err, "--cpu pentium-9000: not a CPU that LLVM knows"));
  }
  CHECK(contains(expectStatus(box, {"passes", "--cpu", "pentium-9000"}, 2).err, "not a CPU that LLVM knows"));
  CHECK(snapshot(box.work()) == before);
}

TEST_CASE("option --cpu: running code for a CPU the host cannot run is exit 2, naming the features", "[driver][cpu]") {
  // No host has both AMD's SSE4a (znver3) and Intel's AMX (sapphirerapids): one of the two runs
  // must be refused, whichever machine this is.
  Sandbox box;
  int refused = 0;
  for (const char* cpu : {"znver3", "sapphirerapids"}) {
    INFO(cpu);
    Snapshot before = snapshot(box.work());
    Result r = runTexc(box, with({"run", kGelu, "--random", "1", "--cpu", cpu}, kSmall));
    INFO(r.describe());
    REQUIRE_FALSE(r.crashed);
    if (r.status == 2) {
      ++refused;
      CHECK(contains(r.err, std::string("--cpu ") + cpu + ": this host ("));
      CHECK((contains(r.err, "sse4a") || contains(r.err, "amx")));
      CHECK(snapshot(box.work()) == before);  // nothing written
      // compare and tune refuse it the same way; compile emits it.
      CHECK(contains(expectStatus(box, with({"compare", kGelu, "--cpu", cpu, "--repeat", "1"}, kSmall), 2).err, "lacks"));
      expectStatus(box, with({"compile", kGelu, "--cpu", cpu, "--emit", "asm", "-o", std::string(cpu) + ".s"}, kSmall), 0);
    } else {
      CHECK(r.status == 0);
      CHECK(fs::exists(box.work() / "out.npy"));
    }
  }
  CHECK(refused >= 1);
}

TEST_CASE("option --cpu: passes and explain name the CPU the code is for", "[driver][cpu]") {
  Sandbox box;
  std::string wide = expectStatus(box, {"passes", "--cpu", "skylake-avx512"}, 0).out;
  CHECK(wide.rfind("# cpu skylake-avx512: avx512, 32 x 512-bit vector registers", 0) == 0);
  std::string narrow = expectStatus(box, {"passes", "--cpu", "haswell"}, 0).out;
  CHECK(narrow.rfind("# cpu haswell: avx2, 16 x 256-bit vector registers; L1d 32 KiB, L2 256 KiB", 0) == 0);
  std::string explained = expectStatus(box, with({"explain", kGelu, "--cpu", "haswell", "--hw", "h100"}, kSmall), 0).out;
  CHECK(contains(explained, "cpu: haswell: avx2"));
}

}  // namespace texc::drivertest

namespace texc::drivertest {

TEST_CASE("passes: --target cuda lists the CUDA pipeline, ending in codegen-cuda", "[driver][compile]") {
  Sandbox box;
  std::string out = expectStatus(box, {"passes", "--target", "cuda"}, 0).out;
  CHECK(out.rfind("# target cuda", 0) == 0);
  CHECK(contains(out, "codegen-cuda"));
  CHECK_FALSE(contains(out, "codegen-llvm"));
  CHECK_FALSE(contains(out, "optimize-llvm"));
  std::string cpu = expectStatus(box, {"passes"}, 0).out;
  CHECK(contains(cpu, "optimize-llvm"));
  CHECK_FALSE(contains(cpu, "codegen-cuda"));
  CHECK(contains(expectStatus(box, {"passes", "--target", "gpu"}, 2).err, "gpu"));
}

}  // namespace texc::drivertest
