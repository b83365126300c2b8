// `--check` that can fail (spec section 6, exit 4): run --check, compare and tune hold every
// output to the per-element error bound of compiler/reference/ErrorBound.h. A wrong result is made
// with the test-only hook TEXC_TEST_DAMAGE_OUTPUT (docs/testing.md); TEXC_POISON=1 runs the
// kernels twice on NaN-filled memory and must not change any result.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "compiler/driver/Execution.h"
#include "frontend/Diagnostics.h"
#include "frontend/Parser.h"
#include "frontend/Sema.h"
#include "frontend/Source.h"
#include "tests/unit/driver/DriverTestUtil.h"

namespace texc::drivertest {
namespace {

// Sets an environment variable for the children of one test, and removes it again.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) { ::setenv(name, value.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

// The small sizes of each example, as the e2e suite runs it: its own `# e2e:` line, else its line
// in tests/e2e/examples.e2e.
std::vector<std::string> exampleDefines(const fs::path& example) {
  auto argsOf = [](const std::string& text) {
    std::istringstream in(text);
    std::vector<std::string> out;
    for (std::string w; in >> w;) out.push_back(w);
    return out;
  };
  std::istringstream file(readBytes(example));
  for (std::string line; std::getline(file, line);)
    if (line.rfind("# e2e:", 0) == 0) return argsOf(line.substr(6));
  std::istringstream manifest(readBytes(fs::path(TEXC_SOURCE_DIR) / "tests/e2e/examples.e2e"));
  const std::string key = example.filename().string() + ":";
  for (std::string line; std::getline(manifest, line);)
    if (line.rfind(key, 0) == 0) return argsOf(line.substr(key.size()));
  return {};
}

}  // namespace

TEST_CASE("run --check: a result beyond its error bound exits 4, names the worst element, still writes", "[driver][check]") {
  Sandbox box;
  const std::string program = box.input("mm.tex", kMatmul).string();
  const std::vector<std::string> args = {"run", program, "--random", "1", "--threads", "1", "--check", "--output-dir", "out"};

  Result good = expectStatus(box, args, 0);
  CHECK(contains(good.out, "C: max abs error "));
  CHECK(contains(good.out, "within the error bound"));
  const fs::path goodCopy = box.in() / "good-C.npy";
  fs::copy_file(box.work() / "out" / "C.npy", goodCopy);

  ScopedEnv damage("TEXC_TEST_DAMAGE_OUTPUT", "C");
  Result bad = expectStatus(box, args, 4);
  INFO(bad.describe());
  CHECK(contains(bad.out, "C: BEYOND the error bound: C[0, 0] = "));
  CHECK(contains(bad.out, ", reference "));
  CHECK(contains(bad.out, ", bound "));
  CHECK(contains(bad.out, "(1 of 720 elements beyond)"));
  CHECK(contains(bad.err, "texc: error: --check: output 'C' differs from the float64 reference beyond the error bound (outputs written)"));
  // The outputs are written (the damaged value included), and only element 0 changed.
  REQUIRE(fs::exists(box.work() / "out" / "C.npy"));
  std::vector<double> was = npyValues(readNpy(goodCopy));
  std::vector<double> now = npyValues(readNpy(box.work() / "out" / "C.npy"));
  REQUIRE(now.size() == was.size());
  CHECK(now[0] != was[0]);
  CHECK(std::equal(now.begin() + 1, now.end(), was.begin() + 1));

  // Without --check the hook damages silently: only the check can fail.
  expectStatus(box, {"run", program, "--random", "1", "--threads", "1", "--output-dir", "out2"}, 0);
  // A hook aimed at another variant leaves run alone.
  ScopedEnv other("TEXC_TEST_DAMAGE_OUTPUT", "C@fused");
  expectStatus(box, args, 0);
}

TEST_CASE("run --check: an output that overflows its dtype as the reference does is within", "[driver][check]") {
  Sandbox box;
  // exp(x * 100) over [-1, 1): f32 stores inf where the reference is up to 2.7e43 (IEEE, numpy);
  // exp(x * 100) / exp(x * 100) overflows inside and gives NaN against 1: still beyond.
  writeBytes(box.work() / "overflow.tex", "input x : f32[64]\noutput y = exp(x * 100)\n");
  writeBytes(box.work() / "inside.tex", "input x : f32[64]\noutput y = exp(x * 100) / exp(x * 100)\n");
  Result stored = runTexc(box, {"run", (box.work() / "overflow.tex").string(), "--random", "1", "--check", "--output-dir", "o1"});
  INFO(stored.describe());
  CHECK(stored.status == 0);
  CHECK(contains(stored.out + stored.err, "within the error bound"));
  Result inside = runTexc(box, {"run", (box.work() / "inside.tex").string(), "--random", "1", "--check", "--output-dir", "o2"});
  INFO(inside.describe());
  CHECK(inside.status == 4);
}

TEST_CASE("run --check exits 0 on every example, also on poisoned memory", "[driver][check]") {
  Sandbox box;
  size_t examples = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(kExamples)) {
    if (e.path().extension() != ".tex") continue;
    ++examples;
    std::vector<std::string> args = {"run", e.path().string(), "--random", "1", "--check", "--threads", "2"};
    for (const std::string& d : exampleDefines(e.path())) args.push_back(d);
    const std::string stem = e.path().stem().string();
    std::vector<std::string> plain = args, poisoned = args;
    plain.insert(plain.end(), {"--output-dir", stem});
    poisoned.insert(poisoned.end(), {"--output-dir", stem + "-poisoned"});
    Result r = expectStatus(box, plain, 0);
    INFO(r.describe());
    CHECK(contains(r.out, "within the error bound"));
    CHECK_FALSE(contains(r.out, "BEYOND"));
    {
      ScopedEnv poison("TEXC_POISON", "1");
      expectStatus(box, poisoned, 0);
    }
    // Poisoned memory and a second run change no bit of any output.
    for (const fs::directory_entry& out : fs::directory_iterator(box.work() / stem)) {
      INFO(out.path());
      CHECK(readBytes(out.path()) == readBytes(box.work() / (stem + "-poisoned") / out.path().filename()));
    }
  }
  CHECK(examples >= 7);
}

TEST_CASE("compare: the variant beyond its error bound is named and the command exits 4", "[driver][check][compare]") {
  Sandbox box;
  const std::string program = box.input("mm.tex", kMatmul).string();
  const std::vector<std::string> args = {"compare", program, "--repeat", "1", "--threads", "1"};

  Result good = expectStatus(box, args, 0);
  CHECK(contains(good.out, "error bound"));
  CHECK(countOf(good.out, " within\n") == 5);  // the last column of every row
  CHECK_FALSE(contains(good.out, "BEYOND"));

  ScopedEnv damage("TEXC_TEST_DAMAGE_OUTPUT", "C@fused");
  Result bad = expectStatus(box, args, 4);
  INFO(bad.describe());
  CHECK(contains(bad.out, "variant fused: BEYOND the error bound: C[0, 0] = "));
  CHECK(countOf(bad.out, "BEYOND the error bound") == 1);
  CHECK(countOf(bad.out, "BEYOND") == 2);  // the table's column and the line
  CHECK(contains(bad.err, "texc: error: results of fused differ from the float64 reference beyond the error bound"));

  Result json = expectStatus(box, {"compare", program, "--repeat", "1", "--threads", "1", "--json"}, 4);
  CHECK(countOf(json.out, "\"within_bound\": true") == 4);
  CHECK(contains(json.out, "\"name\": \"fused\", "));
  CHECK(countOf(json.out, "\"within_bound\": false") == 1);
  CHECK(contains(json.err, "variant fused: BEYOND the error bound"));
}

TEST_CASE("tune: a candidate beyond the error bound is discarded and said so, and a wrong rule exits 4", "[driver][check][tune]") {
  Sandbox box;
  ScopedEnv cache("XDG_CACHE_HOME", (box.in() / "cache").string());
  const std::string program = box.input("mm.tex", kMatmul).string();
  {
    ScopedEnv damage("TEXC_TEST_DAMAGE_OUTPUT", "C@order = columns");
    Result r = expectStatus(box, {"tune", program, "--threads", "1", "--repeat", "1", "--force", "-o", "t.sched"}, 0);
    INFO(r.describe());
    CHECK(contains(r.err, "tune: discarded "));
    CHECK(contains(r.err, "order = columns: its results differ from the float64 reference beyond the error bound: C[0, 0] = "));
    CHECK(contains(r.out, "# discarded "));
    CHECK(contains(r.out, "discarded"));
    std::string best = r.out.substr(r.out.find("# best: "));
    CHECK_FALSE(contains(best.substr(0, best.find('\n')), "order = columns"));
  }
  {
    ScopedEnv damage("TEXC_TEST_DAMAGE_OUTPUT", "C");
    Result r = expectStatus(box, {"tune", program, "--threads", "1", "--repeat", "1", "--force", "-o", "u.sched"}, 4);
    CHECK(contains(r.err, "texc: error: tune: the rule differs from the float64 reference beyond the error bound: C[0, 0] = "));
    CHECK_FALSE(fs::exists(box.work() / "u.sched"));
  }
}

TEST_CASE("ProgramMemory: poisoned, outputs and intermediates start as NaN, and a later run sees what the earlier left",
          "[driver][check][poison]") {
  SourceFile file("p.tex", "input x : f32[40]\ninput w : f64[3]\nt = x * 2\noutput y = t + 1\noutput z = w * 3\n");
  DiagnosticEngine diags(&file);
  Module module = parse(file, diags);
  std::optional<Program> p = analyze(module, diags);
  INFO(diags.render());
  REQUIRE(p.has_value());
  const int x = p->findTensor("x"), t = p->findTensor("t"), y = p->findTensor("y"), z = p->findTensor("z");
  REQUIRE((x >= 0 && t >= 0 && y >= 0 && z >= 0));

  std::vector<Tensor> tensors(p->tensors.size());
  tensors[x] = makeTensor(ElemType::F32, {40});
  tensors[p->findTensor("w")] = makeTensor(ElemType::F64, {3});
  ProgramMemory plain(*p, nullptr, tensors);
  CHECK_FALSE(plain.poisoned());
  CHECK(loadElement(tensors[y], 0) == 0);

  ProgramMemory poisoned(*p, nullptr, tensors, /*poison=*/true);
  CHECK(poisoned.poisoned());
  for (int id : {y, z})
    for (int64_t i = 0; i < numElements(tensors[id]); ++i) CHECK(std::isnan(loadElement(tensors[id], i)));
  void** ptrs = poisoned.prepareRun();  // no plan: the intermediate t is a fresh buffer, poisoned
  for (int i = 0; i < 40; ++i) CHECK(std::isnan(static_cast<float*>(ptrs[t])[i]));
  static_cast<float*>(ptrs[y])[3] = 1.5f;  // what a run leaves stays for the next one
  poisoned.finishRun();
  poisoned.prepareRun();
  CHECK(loadElement(tensors[y], 3) == 1.5);
  CHECK(std::isnan(loadElement(tensors[y], 2)));
  poisoned.finishRun();

  ScopedEnv env("TEXC_POISON", "1");
  CHECK(poisonRequested());
  CHECK(ProgramMemory(*p, nullptr, tensors).poisoned());
}

}  // namespace texc::drivertest
