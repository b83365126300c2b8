// texc tune: the candidates it times, the schedule file it writes (to the cache and with -o),
// that a second tune reads the cache, that the file it wrote is a valid --schedule, and its usage
// errors. Nothing here depends on which candidate wins: the timings are the machine's.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "tests/unit/driver/DriverTestUtil.h"

namespace texc::drivertest {
namespace {

std::vector<fs::path> filesIn(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec))
    if (e.is_regular_file()) out.push_back(e.path());
  return out;
}

}  // namespace

TEST_CASE("tune: times candidates around the rule, writes the best to the cache, reads it back", "[driver][tune]") {
  Sandbox box;
  const fs::path cache = box.in() / "cache";
  ::setenv("XDG_CACHE_HOME", cache.c_str(), 1);
  std::string program = box.input("mm.tex", kMatmul).string();

  Result first = expectStatus(box, {"tune", program, "--threads", "1", "--repeat", "1"}, 0);
  CHECK(contains(first.out, "# tiled kernels: k0_C\n"));
  CHECK(contains(first.out, "the rule"));
  CHECK(contains(first.out, "  mr = "));  // register tiles (which ones depends on the vector registers)
  CHECK(contains(first.out, ", nr = "));
  CHECK(contains(first.out, "kc = "));
  CHECK(contains(first.out, "order = rows"));
  CHECK(contains(first.out, "# best: "));
  std::vector<fs::path> written = filesIn(cache / "texc" / "tune");
  REQUIRE(written.size() == 1);
  CHECK(written[0].extension() == ".sched");
  CHECK(contains(first.out, "written to " + written[0].string()));
  const std::string text = readBytes(written[0]);

  // Same program, threads and host: the cache answers, and -o gets a copy.
  Result second = expectStatus(box, {"tune", program, "--threads", "1", "-o", "copy.sched"}, 0);
  CHECK(contains(second.out, "cached: " + written[0].string()));
  CHECK(readBytes(box.work() / "copy.sched") == text);
  // Another size is another program.
  expectStatus(box, {"tune", program, "-D", "N=40", "--threads", "1", "--repeat", "1"}, 0);
  CHECK(filesIn(cache / "texc" / "tune").size() == 2);

  // The file is a schedule: run takes it and computes the reference's values.
  Result run = expectStatus(box, {"run", program, "--random", "3", "--check", "--threads", "1", "--schedule", written[0].string(),
                                  "--output-dir", "out"},
                            0);
  CHECK(contains(run.err + run.out, "C: max abs error"));
  ::unsetenv("XDG_CACHE_HOME");
}

TEST_CASE("tune: nothing to tune, and its usage errors", "[driver][tune]") {
  Sandbox box;
  ::setenv("XDG_CACHE_HOME", (box.in() / "cache").c_str(), 1);
  std::string program = box.input("mm.tex", kMatmul).string();
  std::string elementwise = box.input("ew.tex", "input x : f32[64]\noutput y[i] = x[i] * 2\n").string();
  Result none = expectStatus(box, {"tune", elementwise, "--repeat", "1"}, 0);
  CHECK(contains(none.out, "nothing to tune: no contraction is tiled"));
  CHECK(filesIn(box.in() / "cache").empty());

  std::string sched = box.input("s.sched", "mr = 4\n").string();
  CHECK(contains(expectStatus(box, {"tune", program, "--schedule", sched}, 2).err, "tune starts from the rule: --schedule is not taken"));
  CHECK(contains(expectStatus(box, {"tune", program, "--no-tile"}, 2).err, "--no-tile leaves nothing to tune"));
  CHECK(contains(expectStatus(box, {"tune", program, "--repeat", "0"}, 2).err, "--repeat must be >= 1"));
  expectStatus(box, {"tune", box.input("bad.tex", "output y = nope\n").string()}, 1);
  CHECK(filesIn(box.in() / "cache").empty());
  ::unsetenv("XDG_CACHE_HOME");
}

}  // namespace texc::drivertest
