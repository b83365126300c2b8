// The memory plan through the command line: --emit plan and --print-after=plan-memory, --no-plan
// on run (same outputs bit for bit, with --repeat reusing the arena), the plan section of
// texc explain, and the planned and unplanned variants of texc compare (table and --json).
#include <catch2/catch.hpp>

#include <regex>
#include <string>

#include "tests/unit/driver/DriverTestUtil.h"

namespace texc::drivertest {
namespace {

Result expectSuccess(const Sandbox& box, const std::vector<std::string>& args) {
  Result r = runTexc(box, args);
  INFO(r.describe());
  REQUIRE_FALSE(r.crashed);
  REQUIRE(r.status == 0);
  return r;
}

std::vector<std::string> gelu(const char* command, std::initializer_list<std::string> more) {
  std::vector<std::string> args = {command, (kExamples / "gelu.tex").string(), "-D", "N=16", "-D", "D=40", "--fuse=none"};
  args.insert(args.end(), more);
  return args;
}

TEST_CASE("plan on the command line: --emit plan, --print-after=plan-memory and --no-plan", "[driver][memplan]") {
  Sandbox box;
  Result plan = expectSuccess(box, gelu("compile", {"--emit", "plan"}));
  CHECK(contains(plan.out, "memory plan: 10 temps in 3 blocks (7 written in place)"));
  CHECK(contains(plan.out, "most temps live at once: 4 (3 counting a temp written in place and its input as one)"));
  CHECK(contains(plan.out, "timeline (kernels across, temps down"));
  CHECK(contains(plan.out, "%y.3    2560  k3..k4       2    5120  %y.2 (in place)"));

  Result printed = expectSuccess(box, gelu("compile", {"--print-after=plan-memory", "-o", "/dev/null"}));
  CHECK(contains(printed.err, "// ----- IR after plan-memory -----\n" + plan.out));

  Result none = expectSuccess(box, gelu("compile", {"--emit", "plan", "--no-plan"}));
  CHECK(none.out == "(no memory plan: --no-plan, one buffer per intermediate)\n");
}

TEST_CASE("plan on the command line: run gives the same bytes with and without the plan", "[driver][memplan]") {
  Sandbox box;
  for (const char* opt : {"-O3", "-O0"}) {
    INFO(opt);
    std::string dir = std::string("planned") + opt;
    expectSuccess(box, gelu("run", {opt, "--random", "3", "--threads", "2", "--repeat", "3", "--output-dir", dir}));
    expectSuccess(box, gelu("run", {opt, "--random", "3", "--threads", "2", "--repeat", "3", "--no-plan", "--output-dir", dir + "-np"}));
    std::string bytes = readBytes(box.work() / dir / "out.npy");
    CHECK(bytes.size() > 16 * 40 * 4);
    CHECK(bytes == readBytes(box.work() / (dir + "-np") / "out.npy"));
  }
}

TEST_CASE("plan on the command line: explain prints the plan", "[driver][memplan]") {
  Sandbox box;
  // Materialized attention keeps three temps: the scores, the probabilities and their row sums (a
  // kernel of its own, so that P V is tiled); the row sums reuse the scores' block.
  Result fused = expectSuccess(box, {"explain", (kExamples / "attention.tex").string(), "-D", "N=8", "-D", "Dh=4", "--hw", "h100",
                                     "--disable-pass=online-softmax"});
  CHECK(contains(fused.out, "== memory plan (--fuse=all) ==\nmemory plan: 3 temps in 2 blocks"));
  // With online-softmax (the default) none, and the materialized program is shown beside it.
  Result online = expectSuccess(box, {"explain", (kExamples / "attention.tex").string(), "-D", "N=8", "-D", "Dh=4", "--hw", "h100"});
  CHECK(contains(online.out, "== memory plan (--fuse=all) ==\nmemory plan: 0 temps in 0 blocks"));
  CHECK(contains(online.out, "materialized (--disable-pass=online-softmax): 3 temps in 2 blocks"));
  CHECK(contains(online.out, "\nmaterialized "));
  CHECK(contains(online.out, "== online softmax ==\nO: rewritten: one pass over j (8 keys)"));
  CHECK(contains(fused.out, "unfused (--fuse=none): "));
  Result unfused = expectSuccess(box, gelu("explain", {"--hw", "h100"}));
  CHECK(contains(unfused.out, "== memory plan (--fuse=none) ==\nmemory plan: 10 temps in 3 blocks"));
  CHECK(contains(unfused.out, "W  #  #  #  #  R"));
}

TEST_CASE("plan on the command line: compare runs planned and unplanned variants", "[driver][memplan]") {
  Sandbox box;
  Result table = expectSuccess(box, gelu("compare", {"--repeat", "2", "--threads", "1"}));
  for (const char* name : {"unfused-unplanned ", "unfused ", "elementwise ", "fused-unplanned ", "fused "}) {
    INFO(name);
    CHECK(contains(table.out, std::string("\n") + name));
  }
  CHECK(contains(table.out, "temp memory"));
  CHECK(contains(table.out, "RSS growth"));
  CHECK(contains(table.out, "FLOP/B"));  // spec section 6: arithmetic intensity beside bytes and FLOPs

  Result json = expectSuccess(box, gelu("compare", {"--repeat", "1", "--threads", "1", "--json"}));
  CHECK(contains(json.out, "{\"name\": \"unfused-unplanned\", \"kernels\": 11,"));
  CHECK(contains(json.out, "\"planned\": false, \"intermediate_bytes\": 25600, "));  // 10 temps of 2560 bytes
  CHECK(contains(json.out, "{\"name\": \"unfused\", \"kernels\": 11,"));
  CHECK(contains(json.out, "\"planned\": true, \"intermediate_bytes\": 7680, "));  // 3 blocks
  CHECK(contains(json.out, "{\"name\": \"fused-unplanned\", \"kernels\": 1,"));
  CHECK(contains(json.out, "{\"name\": \"fused\", \"kernels\": 1,"));
  // gelu calls tanh, which has a fast form: the sixth variant is fused with --math=fast.
  CHECK(contains(json.out, "{\"name\": \"fused --math=fast\", \"kernels\": 1,"));
  CHECK(countOf(json.out, "\"rss_growth_bytes\": ") == 6);
  CHECK(countOf(json.out, "\"max_rel_error\": ") == 6);
  // Each variant's arithmetic intensity is its FLOPs over its bytes.
  const std::regex variantFigures(R"re("bytes_moved": ([0-9]+), "flops": ([0-9]+), "arithmetic_intensity": ([0-9.e+-]+),)re");
  int figures = 0;
  for (auto m = std::sregex_iterator(json.out.begin(), json.out.end(), variantFigures); m != std::sregex_iterator(); ++m, ++figures) {
    const double bytes = std::stod((*m)[1]), flops = std::stod((*m)[2]), intensity = std::stod((*m)[3]);
    REQUIRE(bytes > 0);
    CHECK(intensity == Approx(flops / bytes).epsilon(1e-5));
  }
  CHECK(figures == 6);
  CHECK(contains(table.out, "--math=fast: fused is "));

  // With --math=fast chosen for every variant, no separate fast row; nor for a program without
  // exp, log, tanh, sigmoid or erf.
  Result fast = expectSuccess(box, gelu("compare", {"--repeat", "1", "--threads", "1", "--json", "--math=fast"}));
  CHECK(countOf(fast.out, "\"max_rel_error\": ") == 5);

  // compare's variants set --fuse themselves: the --fuse=none these runs were given is accepted
  // with a note (and the fused variants above are still 1 kernel); without it, no note.
  CHECK(contains(table.err, "note: compare runs every --fuse level as a variant of its own"));
  Result plain = expectSuccess(box, {"compare", (kExamples / "gelu.tex").string(), "-D", "N=16", "-D", "D=40", "--repeat", "1", "--threads", "1"});
  CHECK_FALSE(contains(plain.err, "--fuse"));
}

// Where online-softmax rewrote something, compare adds `materialized` (--disable-pass=online-softmax):
// attention as four kernels with its N x N temps, against one kernel with none; no such row for a
// program without a softmax-weighted sum (gelu above has five variants and its --math=fast one).
TEST_CASE("compare: attention gets the variant materialized, with its kernels and temp memory", "[driver][compare]") {
  Sandbox box;
  std::vector<std::string> args = {"compare", (kExamples / "attention.tex").string(), "-D", "N=32", "-D", "Dh=8",
                                   "--repeat", "1", "--threads", "1"};
  Result table = expectSuccess(box, args);
  CHECK(contains(table.out, "\nmaterialized "));
  CHECK(contains(table.out, "online softmax: fused is "));
  CHECK(contains(table.out, "x faster than materialized (--disable-pass=online-softmax), with 0 B of temp memory against "));
  args.push_back("--json");
  Result json = expectSuccess(box, args);
  CHECK(contains(json.out, "{\"name\": \"fused\", \"kernels\": 1,"));
  CHECK(contains(json.out, "{\"name\": \"materialized\", \"kernels\": 4,"));
  CHECK(countOf(json.out, "\"within_bound\": true") == 7);  // and fused --math=fast (exp)
}

TEST_CASE("compare: the kernels column counts the kernels that run (a pool fused into a tiled conv is one)", "[driver][compare]") {
  Sandbox box;
  // examples/conv_pool.tex at 8 x 8 pixels: the tiled conv's pixel blocks of 16 are row pairs.
  std::vector<std::string> args = {"compare", (kExamples / "conv_pool.tex").string(), "-D", "C=3", "-D", "K=5",
                                   "-D", "H=8", "-D", "W=8", "--repeat", "1", "--threads", "1", "--json"};
  Result json = expectSuccess(box, args);
  CHECK(contains(json.out, "{\"name\": \"unfused\", \"kernels\": 4,"));
  CHECK(contains(json.out, "{\"name\": \"elementwise\", \"kernels\": 2,"));
  CHECK(contains(json.out, "{\"name\": \"fused\", \"kernels\": 1,"));
}

}  // namespace
}  // namespace texc::drivertest
