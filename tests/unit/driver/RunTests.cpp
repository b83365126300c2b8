// `texc run` when it succeeds (spec section 6): every output written as DIR/NAME.npy with the
// program's values, DIR created if missing (default "."), --random reproducible, --check's error
// lines, --threads, and the start-to-exit time of a small run in Release builds.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>
#include <thread>

#include "tests/unit/driver/DriverTestUtil.h"
#include "tests/support/Skip.h"

namespace texc::drivertest {

namespace {

std::vector<std::string> cat(std::vector<std::string> a, std::initializer_list<std::string> b) {
  a.insert(a.end(), b);
  return a;
}

std::vector<std::string> geluRun(int n, int d) {
  return {"run", (kExamples / "gelu.tex").string(), "-D", "N=" + std::to_string(n), "-D", "D=" + std::to_string(d)};
}

std::set<std::string> keys(const Snapshot& s) {
  std::set<std::string> out;
  for (const auto& [name, bytes] : s) out.insert(name);
  return out;
}

Result expectSuccess(const Sandbox& box, const std::vector<std::string>& args) {
  Result r = runTexc(box, args);
  INFO(r.describe());
  REQUIRE_FALSE(r.crashed);
  REQUIRE(r.status == 0);
  return r;
}

double geluRef(double x, double b, double r) {
  double h = x + b;
  return 0.5 * h * (1 + std::tanh(0.7978845608 * (h + 0.044715 * h * h * h))) + r;
}

// The documented --random stream: splitmix64 seeded with SEED * 0x100000001B3 + (the input's
// position among the inputs), each value (next() >> 11) * 2^-52 - 1.
std::vector<double> documentedRandom(uint64_t seed, uint64_t inputIndex, size_t count) {
  uint64_t state = seed * 0x100000001B3ull + inputIndex;
  std::vector<double> out(count);
  for (double& v : out) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    v = static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0;
  }
  return out;
}

}  // namespace

TEST_CASE("run: the output goes to ./NAME.npy by default, with the program's values", "[driver][run]") {
  Sandbox box;
  std::vector<double> x = someValues(32, 1), b = someValues(8, 2), r = someValues(32, 3);
  fs::path xp = box.input("x.npy", npyBytes(ElemType::F32, {4, 8}, x));
  fs::path bp = box.input("b.npy", npyBytes(ElemType::F32, {8}, b));
  fs::path rp = box.input("r.npy", npyBytes(ElemType::F32, {4, 8}, r));
  expectSuccess(box, cat(geluRun(4, 8), {"--input", "x=" + xp.string(), "--input", "b=" + bp.string(), "--input",
                                         "r=" + rp.string()}));
  CHECK(keys(snapshot(box.work())) == std::set<std::string>{"out.npy"});

  Tensor out = readNpy(box.work() / "out.npy");
  CHECK(out.type == ElemType::F32);
  CHECK(out.shape == std::vector<int64_t>{4, 8});
  std::vector<double> got = npyValues(out);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 8; ++j) {
      // The inputs as the program saw them: rounded to f32.
      double want = geluRef(static_cast<float>(x[i * 8 + j]), static_cast<float>(b[j]), static_cast<float>(r[i * 8 + j]));
      INFO("out[" << i << ", " << j << "]");
      CHECK(got[i * 8 + j] == Approx(want).margin(1e-5));
    }
}

TEST_CASE("run: --output-dir is created if missing, parents too", "[driver][run]") {
  Sandbox box;
  expectSuccess(box, cat(geluRun(4, 8), {"--random", "1", "--output-dir", "a/b/c"}));
  CHECK(keys(snapshot(box.work())) == std::set<std::string>{"a", "a/b", "a/b/c", "a/b/c/out.npy"});
  CHECK(readNpy(box.work() / "a/b/c/out.npy").shape == std::vector<int64_t>{4, 8});

  // An absolute path, and a directory that already exists.
  fs::path abs = box.work() / "abs";
  expectSuccess(box, cat(geluRun(4, 8), {"--random", "1", "--output-dir", abs.string()}));
  expectSuccess(box, cat(geluRun(4, 8), {"--random", "1", "--output-dir", abs.string()}));
  CHECK(keys(snapshot(abs)) == std::set<std::string>{"out.npy"});
}

TEST_CASE("run: an existing output file is replaced", "[driver][run]") {
  Sandbox box;
  writeBytes(box.work() / "out.npy", "stale");
  expectSuccess(box, cat(geluRun(4, 8), {"--random", "1"}));
  CHECK(readNpy(box.work() / "out.npy").shape == std::vector<int64_t>{4, 8});
  CHECK(keys(snapshot(box.work())) == std::set<std::string>{"out.npy"});
}

TEST_CASE("run: every output of a multi-output program is written, with its values", "[driver][run]") {
  Sandbox box;
  const int C = 2, H = 8, W = 8;
  std::vector<double> x = someValues(C * H * W, 9);
  fs::path xp = box.input("x.npy", npyBytes(ElemType::F32, {C, H, W}, x));
  expectSuccess(box, {"run", (kExamples / "avgpool_pad.tex").string(), "-D", "C=2", "-D", "H=8", "-D", "W=8",
                      "--input", "x=" + xp.string(), "--output-dir", "out"});
  CHECK(keys(snapshot(box.work() / "out")) == std::set<std::string>{"avg.npy", "mx.npy"});

  Tensor mx = readNpy(box.work() / "out/mx.npy");
  Tensor avg = readNpy(box.work() / "out/avg.npy");
  REQUIRE(mx.shape == std::vector<int64_t>{C, H / 2, W / 2});
  REQUIRE(avg.shape == std::vector<int64_t>{C, H / 2, W / 2});
  std::vector<double> gotMax = npyValues(mx), gotAvg = npyValues(avg);
  for (int c = 0; c < C; ++c)
    for (int y = 0; y < H / 2; ++y)
      for (int z = 0; z < W / 2; ++z) {
        double best = -INFINITY, sum = 0;
        int count = 0;
        for (int dy = 0; dy < 3; ++dy)
          for (int dz = 0; dz < 3; ++dz) {
            int yy = 2 * y + dy - 1, zz = 2 * z + dz - 1;
            if (yy < 0 || yy >= H || zz < 0 || zz >= W) continue;
            double v = static_cast<float>(x[(c * H + yy) * W + zz]);
            best = std::max(best, v);
            sum += v;
            ++count;
          }
        size_t i = static_cast<size_t>((c * (H / 2) + y) * (W / 2) + z);
        INFO("[" << c << ", " << y << ", " << z << "]");
        CHECK(gotMax[i] == best);
        CHECK(gotAvg[i] == Approx(sum / count).margin(1e-6));
      }
}

TEST_CASE("run: --random SEED is reproducible and follows the documented stream", "[driver][run]") {
  Sandbox box;
  // Outputs that copy the inputs show the values --random gave them.
  fs::path prog = box.input("copy.tex",
                            "let N = 1000\n"
                            "input x : f32[N]\n"
                            "input w : f32[N]\n"
                            "input d : f64[N]\n"
                            "output a = x\n"
                            "output c = w\n"
                            "output e = d\n");
  expectSuccess(box, {"run", prog.string(), "--random", "42", "--output-dir", "s42"});
  expectSuccess(box, {"run", prog.string(), "--random", "42", "--output-dir", "s42again"});
  expectSuccess(box, {"run", prog.string(), "--random", "43", "--output-dir", "s43"});
  for (const char* name : {"a.npy", "c.npy", "e.npy"}) {
    INFO(name);
    std::string first = readBytes(box.work() / "s42" / name);
    CHECK(first == readBytes(box.work() / "s42again" / name));
    CHECK(first != readBytes(box.work() / "s43" / name));
  }

  std::vector<double> a = npyValues(readNpy(box.work() / "s42/a.npy"));
  std::vector<double> c = npyValues(readNpy(box.work() / "s42/c.npy"));
  std::vector<double> e = npyValues(readNpy(box.work() / "s42/e.npy"));
  CHECK(a != c);  // two inputs of one type and shape get different values
  for (const std::vector<double>* v : {&a, &c, &e}) {
    double lo = *std::min_element(v->begin(), v->end()), hi = *std::max_element(v->begin(), v->end());
    double mean = 0;
    for (double t : *v) mean += t / static_cast<double>(v->size());
    CHECK(lo >= -1.0);
    CHECK(hi <= 1.0);  // < 1 before rounding to f32, which may round up to 1
    CHECK(lo < -0.95);
    CHECK(hi > 0.95);
    CHECK(std::abs(mean) < 0.1);
  }
  // The f64 input holds the documented stream exactly; the f32 ones its rounding to f32.
  CHECK(e == documentedRandom(42, 2, 1000));
  std::vector<double> x = documentedRandom(42, 0, 1000);
  for (double& t : x) t = static_cast<float>(t);
  CHECK(a == x);
}

TEST_CASE("run: --random fills only the inputs not given", "[driver][run]") {
  Sandbox box;
  std::vector<double> x = someValues(32, 5);
  fs::path xp = box.input("x.npy", npyBytes(ElemType::F32, {4, 8}, x));
  fs::path prog = box.input("two.tex", "input x : f32[4, 8]\ninput y : f32[4, 8]\noutput a = x\noutput b = y\n");
  expectSuccess(box, {"run", prog.string(), "--input", "x=" + xp.string(), "--random", "7"});
  std::vector<double> a = npyValues(readNpy(box.work() / "a.npy"));
  for (size_t i = 0; i < x.size(); ++i) CHECK(a[i] == static_cast<float>(x[i]));
  std::vector<double> y = documentedRandom(7, 1, 32);
  for (double& t : y) t = static_cast<float>(t);
  CHECK(npyValues(readNpy(box.work() / "b.npy")) == y);
}

TEST_CASE("run: --check prints the max abs and max rel error of every output", "[driver][run]") {
  Sandbox box;
  Result r = expectSuccess(box, {"run", (kExamples / "avgpool_pad.tex").string(), "-D", "C=2", "-D", "H=8", "-D",
                                 "W=8", "--random", "5", "--check", "--output-dir", "out"});
  INFO(r.describe());
  for (const std::string name : {"mx", "avg"}) {
    size_t at = r.out.find(name + ": max abs error ");
    REQUIRE(at != std::string::npos);
    std::string line = r.out.substr(at, r.out.find('\n', at) - at);
    INFO(line);
    CHECK(contains(line, "max rel error "));
    double absErr = std::strtod(line.c_str() + line.find("max abs error ") + 14, nullptr);
    double relErr = std::strtod(line.c_str() + line.find("max rel error ") + 14, nullptr);
    CHECK(absErr >= 0);
    CHECK(absErr < 1e-5);
    CHECK(relErr >= 0);
    CHECK(relErr < 1e-4);
  }
  CHECK(countOf(r.out, "max abs error") == 2);
  // --check changes nothing about the outputs.
  CHECK(keys(snapshot(box.work() / "out")) == std::set<std::string>{"avg.npy", "mx.npy"});
}

TEST_CASE("run: --threads 1 and 2 give the same outputs and use that many threads", "[driver][run]") {
  Sandbox box;
  std::vector<std::string> base = cat(geluRun(64, 64), {"--random", "11", "--time-passes"});
  Result one = expectSuccess(box, cat(base, {"--threads", "1", "--output-dir", "t1"}));
  Result two = expectSuccess(box, cat(base, {"--threads", "2", "--output-dir", "t2"}));
  Result all = expectSuccess(box, cat(base, {"--output-dir", "t0"}));
  CHECK(contains(one.err, ", 1 threads)"));
  CHECK(contains(two.err, ", 2 threads)"));
  std::string bytes = readBytes(box.work() / "t1/out.npy");
  CHECK(bytes == readBytes(box.work() / "t2/out.npy"));
  CHECK(bytes == readBytes(box.work() / "t0/out.npy"));
}

TEST_CASE("run: -O0 and --fuse=none compute the same outputs as the defaults", "[driver][run]") {
  Sandbox box;
  std::vector<std::string> base = cat(geluRun(8, 16), {"--random", "2"});
  expectSuccess(box, cat(base, {"--output-dir", "def"}));
  expectSuccess(box, cat(base, {"-O0", "--output-dir", "o0"}));
  expectSuccess(box, cat(base, {"--fuse=none", "--output-dir", "nofuse"}));
  std::vector<double> want = npyValues(readNpy(box.work() / "def/out.npy"));
  for (const char* dir : {"o0", "nofuse"}) {
    std::vector<double> got = npyValues(readNpy(box.work() / dir / "out.npy"));
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).margin(1e-5));
  }
}

TEST_CASE("run: a small gelu takes under 150 ms from start to exit (Release)", "[driver][run][timing]") {
#if !defined(NDEBUG) || defined(__SANITIZE_ADDRESS__)
  testsupport::skipTest("the start-to-exit time of texc run is only measured in Release builds without sanitizers");
#else
  Sandbox box;
  std::vector<std::string> args = {"run", (kExamples / "gelu.tex").string(), "-D", "N=64", "-D", "D=64", "--random", "1"};
  std::vector<double> wall, cpu;
  for (int i = 0; i < 5; ++i) {
    Result r = runTexc(box, args);
    INFO(r.describe());
    REQUIRE(r.status == 0);
    wall.push_back(r.ms);
    cpu.push_back(r.cpuMs);
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  double load[1] = {0};
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  bool loaded = ::getloadavg(load, 1) == 1 && load[0] > cores;
  WARN("texc run examples/gelu.tex -D N=64 -D D=64 --random 1: median " << wall[2] << " ms from start to exit over 5 runs (min "
                                                                        << wall[0] << ", max " << wall[4] << "); CPU time median "
                                                                        << cpu[2] << " ms; load average " << load[0] << " on "
                                                                        << cores << " cores");
  if (wall[2] >= 150.0 && loaded) {
    // Other processes took the cores: the wall clock measures them, not texc. Hold the CPU
    // time to the bound instead, and say so.
    WARN("the machine is loaded (load average above the core count): the 150 ms bound is checked on CPU time only");
    CHECK(cpu[2] < 150.0);
  } else {
    CHECK(wall[2] < 150.0);
  }
#endif
}

}  // namespace texc::drivertest

namespace texc::drivertest {

TEST_CASE("run --profile: each kernel's share and its hottest loop, instruction by instruction", "[driver][run][profile]") {
  Sandbox box;
  // Half a second of CPU time or more: over 100 samples at Linux's 250 Hz tick, 50 at 100 Hz.
  // The code for haswell (pinned: the report is read instruction by instruction), which every
  // host of these tests runs.
  Result r = expectSuccess(box, {"run", (kExamples / "matmul.tex").string(), "-D", "M=256", "-D", "K=256", "-D", "N=256", "--random", "1",
                                 "--threads", "1", "--repeat", "1500", "--cpu", "haswell", "--profile"});
  INFO(r.err);
  CHECK(contains(r.err, "time: median"));
  CHECK(contains(r.err, "samples over"));
  CHECK(contains(r.err, "% of the samples in a loop of texc_k0_C ("));
  CHECK(contains(r.err, "of them multiply-adds), +0x"));
  CHECK(contains(r.err, "outside the JIT's code"));
  CHECK((contains(r.err, "fmadd") || contains(r.err, "mulps")));
  // The samples by statement of the loop IR: the tile's k loop first, its line the one each of
  // the hot loop's multiply-adds is tagged with.
  const size_t byStatement = r.err.find("by statement of the loop IR");
  REQUIRE(byStatement != std::string::npos);
  const std::string first = r.err.substr(r.err.find('\n', byStatement) + 1, r.err.find('\n', r.err.find('\n', byStatement) + 1) - r.err.find('\n', byStatement) - 1);
  INFO(first);
  CHECK(contains(first, "sum(k"));
  const size_t tag = first.find(" L");
  REQUIRE(tag != std::string::npos);
  const std::string line = first.substr(tag + 1, first.find(' ', tag + 1) - tag - 1);
  bool tagged = false;  // an instruction line "  0.9%  +bac    L13   vfmadd231ps ..."
  std::istringstream report(r.err);
  for (std::string l; std::getline(report, l);) tagged = tagged || (contains(l, " " + line + " ") && contains(l, "vfmadd"));
  CHECK(tagged);
}

TEST_CASE("run --profile: without --repeat, or on the GPU, is a usage error", "[driver][run][profile]") {
  Sandbox box;
  Result noRepeat = expectStatus(box, {"run", (kExamples / "matmul.tex").string(), "--random", "1", "--profile"}, 2);
  CHECK(contains(noRepeat.err, "--profile samples the timed runs: give --repeat N"));
  Result gpu = expectStatus(box, {"run", (kExamples / "matmul.tex").string(), "--random", "1", "--repeat", "2", "--profile", "--target", "cuda"}, 2);
  CHECK(contains(gpu.err, "--profile samples the CPU's code: not with --target cuda"));
  CHECK(snapshot(box.work()).empty());
}

}  // namespace texc::drivertest
