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
  // The numbered lines ("NN. name ..."); the passes left out are named only in `#` lines.
  CHECK(contains(out, ". codegen-cuda "));
  CHECK_FALSE(contains(out, ". codegen-llvm "));
  CHECK_FALSE(contains(out, ". optimize-llvm "));
  std::string cpu = expectStatus(box, {"passes"}, 0).out;
  CHECK(contains(cpu, ". optimize-llvm "));
  CHECK_FALSE(contains(cpu, ". codegen-cuda "));
  CHECK(contains(expectStatus(box, {"passes", "--target", "gpu"}, 2).err, "gpu"));
}

namespace {

// The numbered lines of `texc passes`: the pass names, in order.
std::vector<std::string> numberedPasses(const std::string& out) {
  std::vector<std::string> names;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string number, name;
    if (words >> number >> name && number.back() == '.') names.push_back(name);
  }
  return names;
}

}  // namespace

TEST_CASE("passes: lists exactly the pipeline that runs, each pass with its condition", "[driver][compile][pipeline]") {
  Sandbox box;
  std::string cuda = expectStatus(box, {"passes", "--target", "cuda", "--cpu", "haswell"}, 0).out;
  std::vector<std::string> names = numberedPasses(cuda);
  std::string list;
  for (const std::string& n : names) list += n + " ";
  CHECK(list == "parse sema split-ops constant-fold simplify cse dce online-softmax dce reciprocal-of-sums fuse dce lower-to-loops implicit-gemm fuse-pool-into-gemm split-k split-keys fuse-row-passes plan-memory map-gpu sync-gpu-threads codegen-cuda ");
  // Each numbered line ends with its condition; the passes left out follow as comments, with why.
  CHECK(contains(cuda, " 1. parse            lex and parse the source into an AST (syntax errors stop here)  [runs: always]\n"));
  CHECK(contains(cuda, "codegen-cuda"));
  CHECK(contains(cuda, "[runs: cuda target]"));
  CHECK(contains(cuda, "# not in this pipeline: tile (--target cuda: "));
  CHECK(contains(cuda, "# not in this pipeline: codegen-llvm (--target cuda: "));
  CHECK(contains(cuda, "# not in this pipeline: schedule-loops (no --schedule FILE"));

  std::string cpu = expectStatus(box, {"passes", "--cpu", "haswell"}, 0).out;
  CHECK(cpu.rfind("# cpu haswell: ", 0) == 0);
  CHECK(contains(cpu, "[runs: cpu target, tiling on (--no-tile"));
  CHECK(contains(cpu, "# not in this pipeline: codegen-cuda (--target cpu: "));
  std::vector<std::string> cpuNames = numberedPasses(cpu);
  CHECK(std::find(cpuNames.begin(), cpuNames.end(), "tile") != cpuNames.end());

  // The pipeline switches choose the list.
  std::vector<std::string> untiled = numberedPasses(expectStatus(box, {"passes", "--no-tile", "--cpu", "haswell"}, 0).out);
  CHECK(untiled.size() + 2 == cpuNames.size());
  CHECK(std::find(untiled.begin(), untiled.end(), "tile") == untiled.end());
  CHECK(std::find(untiled.begin(), untiled.end(), "tile-online-softmax") == untiled.end());
  std::string unfused = expectStatus(box, {"passes", "--fuse", "none", "--no-plan", "--cpu", "haswell"}, 0).out;
  std::vector<std::string> unfusedNames = numberedPasses(unfused);
  CHECK(std::find(unfusedNames.begin(), unfusedNames.end(), "fuse") == unfusedNames.end());
  CHECK(contains(unfused, "# not in this pipeline: fuse (--fuse=none: "));
  CHECK(contains(unfused, "# not in this pipeline: plan-memory (--no-plan: "));
  fs::path sched = box.input("steps.sched", "loops C: split j 4\n");
  std::vector<std::string> scheduled =
      numberedPasses(expectStatus(box, {"passes", "--schedule", sched.string(), "--cpu", "haswell"}, 0).out);
  CHECK(std::find(scheduled.begin(), scheduled.end(), "schedule-loops") != scheduled.end());
  CHECK(scheduled.size() == cpuNames.size() + 1);
}

}  // namespace texc::drivertest
