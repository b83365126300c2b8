// Loop transformations through the command line: a schedule file's `loops` lines change what
// --emit loops and --print-after=schedule-loops show (without them the pass is not in the
// pipeline, and printing after it is exit 2), run gives the reference's values with
// them, and every step that cannot be applied is a usage error (exit 2) naming the schedule
// line, with no output written.
#include <catch2/catch.hpp>

#include "tests/unit/driver/DriverTestUtil.h"

namespace texc::drivertest {
namespace {

const char* const kProgram =
    "input X : f32[13, 10]\n"
    "input b : f32[10]\n"
    "output Y[i, j] = X[i, j] * 2 + b[j]\n"
    "output s[i] = sum(j: X[i, j])\n";

}  // namespace

TEST_CASE("schedule-loops on the command line: --emit loops, --print-after and run", "[driver][transforms]") {
  Sandbox box;
  std::string program = box.input("p.tex", kProgram).string();
  std::string sched = box.input("s.sched", "# columns in blocks of 4, rows unrolled by 3\n"
                                           "loops Y: split j 4; reorder j.o i j.i; unroll j.i 3\n"
                                           "loops s: split i 4; parallel i.o\n")
                          .string();
  Result loops = expectStatus(box, {"compile", program, "--schedule", sched, "--emit", "loops"}, 0);
  CHECK(contains(loops.out,
                 "kernel k0_Y (f32, parallel over 3)\n"
                 "  for j.o < 3 parallel\n"
                 "    for i < 13\n"
                 "      for j.i < 1 vector\n"
                 "        if 0 <= (4 * j.o + 3 * j.i) < 10  # otherwise the term is skipped\n"));
  CHECK(contains(loops.out, "kernel k1_s (f32, parallel over 4)\n  for i.o < 4 parallel\n    for i.i < 4 vector\n"));

  Result printed = expectStatus(box, {"compile", program, "--schedule", sched, "--print-after=schedule-loops", "-o", "/dev/null"}, 0);
  CHECK(contains(printed.err, "// ----- IR after schedule-loops -----\n"));
  CHECK(contains(printed.err, "  for j.o < 3 parallel\n"));
  // Without loops lines the pass is not in the pipeline: printing after it is a usage error.
  Result plain = expectStatus(box, {"compile", program, "--print-after=schedule-loops", "-o", "/dev/null"}, 2);
  CHECK(contains(plain.err, "pass 'schedule-loops' is not in this pipeline (no --schedule FILE with `loops` lines)"));
  CHECK_FALSE(contains(plain.err, "// ----- IR"));

  Result run = expectStatus(box, {"run", program, "--schedule", sched, "--random", "1", "--threads", "2", "--check"}, 0);
  CHECK(contains(run.out, "Y: max abs error"));
  CHECK(snapshot(box.work()).count("Y.npy") == 1);
  CHECK(snapshot(box.work()).count("s.npy") == 1);
}

// The memory plan runs after the transformations and still lets b2 overwrite a in place: the
// split substitutes the same index into the load of a and the store of b2.
TEST_CASE("schedule-loops on the command line: a transformed kernel is still written in place", "[driver][transforms]") {
  Sandbox box;
  std::string program = box.input("ip.tex", "input X : f32[13, 10]\na = X * 2\nb2 = a + 1\noutput Y = b2 * 3\n").string();
  std::string sched = box.input("ip.sched", "loops b2: split i1 4; reorder i1.o i0 i1.i\n").string();
  Result plan = expectStatus(box, {"compile", program, "--fuse=none", "--schedule", sched, "--emit", "plan"}, 0);
  CHECK(contains(plan.out, "memory plan: 2 temps in 1 block (1 written in place)"));
  CHECK(contains(plan.out, "%a (in place)"));
  Result run = expectStatus(box, {"run", program, "--fuse=none", "--schedule", sched, "--random", "1", "--check"}, 0);
  CHECK(contains(run.out, "Y: max abs error"));
}

TEST_CASE("schedule-loops on the command line: a step that cannot be applied is a usage error", "[driver][transforms]") {
  Sandbox box;
  std::string program = box.input("p.tex", kProgram).string();
  struct Case {
    const char* schedule;
    const char* message;
  };
  const Case cases[] = {
      {"loops Z: split j 4\n", "line 1: loops Z: no kernel writes 'Z' (kernels write: Y, s)"},
      {"\nloops Y: split q 4\n", "line 2: loops Y: split q 4: kernel k0_Y has no loop over 'q' (its loops: i, j)"},
      {"loops s: reorder j i\n",
       "line 1: loops s: reorder j i: the loops are not a perfect nest: the body of loop i holds 3 statements"},
      {"loops Y: parallel j\n",
       "line 1: loops Y: parallel j: only a loop at the kernel's top level can be parallel (the runtime calls the kernel "
       "once per chunk of that loop); reorder it outermost first"},
      {"loops Y: unroll i 4\n",
       "line 1: loops Y: unroll i 4: i is the parallel loop and 4 does not divide its extent 13 (the tail would run in "
       "every thread's chunk); split it and unroll the inner loop"},
      {"loops Y: split j\n", "line 1: loops Y: 'split j': expected 'split VAR FACTOR' with a factor >= 1"},
  };
  for (const Case& c : cases) {
    INFO(c.schedule);
    std::string sched = box.input("bad.sched", c.schedule).string();
    Snapshot before = snapshot(box.work());
    Result r = expectStatus(box, {"run", program, "--schedule", sched, "--random", "1", "--output-dir", "out"}, 2);
    CHECK(r.err == "texc: error: schedule file '" + sched + "': " + c.message + "\n");
    CHECK(names(snapshot(box.work())) == names(before));  // nothing written
    Result compile = expectStatus(box, {"compile", program, "--schedule", sched, "-o", "out.ll"}, 2);
    CHECK(!fs::exists(box.work() / "out.ll"));
  }
  std::string sched = box.input("cuda.sched", "loops Y: split j 4\n").string();
  Result cuda = expectStatus(box, {"compile", program, "--schedule", sched, "--target", "cuda", "--emit", "cuda"}, 2);
  CHECK(contains(cuda.err, "line 1: loop transformations apply to the cpu target only"));
}

}  // namespace texc::drivertest
