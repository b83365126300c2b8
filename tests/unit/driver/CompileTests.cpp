// `texc compile` and `texc passes` (spec section 6): every --emit kind, -o all or nothing (and
// never replacing a device), the pass instrumentation (--print-after-all, --print-after,
// --print-before, --dump-dir, --time-passes) against the pipeline that `texc passes` lists.
#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <sys/stat.h>

#include <set>

#include "tests/unit/driver/DriverTestUtil.h"

namespace texc::drivertest {

namespace {

// conv_pool.tex at a small size.
std::vector<std::string> convPool(std::initializer_list<std::string> more) {
  std::vector<std::string> args = {"compile", (kExamples / "conv_pool.tex").string(), "-D", "C=4", "-D", "K=4",
                                   "-D", "H=8", "-D", "W=8"};
  args.insert(args.end(), more);
  return args;
}

Result expectSuccess(const Sandbox& box, const std::vector<std::string>& args) {
  Result r = runTexc(box, args);
  INFO(r.describe());
  REQUIRE_FALSE(r.crashed);
  REQUIRE(r.status == 0);
  return r;
}

// The headers --print-after/--print-before write, in order: {"after", "sema"}, ...
std::vector<std::pair<std::string, std::string>> headers(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  const std::string open = "// ----- IR ";
  for (size_t at = text.find(open); at != std::string::npos; at = text.find(open, at + 1)) {
    if (at != 0 && text[at - 1] != '\n') continue;
    std::istringstream words(text.substr(at + open.size(), text.find('\n', at) - at - open.size()));
    std::string when, pass, dashes;
    words >> when >> pass >> dashes;
    if (dashes == "-----") out.push_back({when, pass});
  }
  return out;
}

// What follows the index-th header, up to the next header (or the end).
std::string bodyAfterHeader(const std::string& text, size_t index) {
  const std::string open = "// ----- IR ";
  size_t at = std::string::npos;
  size_t seen = 0;
  for (size_t p = text.find(open); p != std::string::npos; p = text.find(open, p + 1))
    if (p == 0 || text[p - 1] == '\n') {
      if (seen++ == index) {
        at = p;
        break;
      }
    }
  if (at == std::string::npos) return "";
  size_t start = text.find('\n', at) + 1;
  size_t end = text.find("\n" + open, start);
  return text.substr(start, end == std::string::npos ? std::string::npos : end + 1 - start);
}

}  // namespace

TEST_CASE("passes: lists the pipeline in order, one numbered line per pass", "[driver][compile]") {
  Sandbox box;
  Result r = expectSuccess(box, {"passes"});
  std::vector<std::string> passes = listedPasses(box);
  REQUIRE(passes.size() >= 10);
  CHECK(passes.front() == "parse");
  CHECK(passes[1] == "sema");
  CHECK(passes.back() == "optimize-llvm");
  for (const char* name : {"split-ops", "constant-fold", "simplify", "cse", "dce", "lower-to-loops", "codegen-llvm"}) {
    INFO(name);
    CHECK(std::find(passes.begin(), passes.end(), name) != passes.end());
  }
  // The CPU the code is for comes first, as a comment; then numbered 1..n, each line with a
  // description after the name.
  CHECK(r.out.rfind("# cpu ", 0) == 0);
  CHECK(contains(r.out.substr(0, r.out.find('\n')), "(host)"));
  std::istringstream lines(r.out);
  std::string line;
  int expected = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("# ", 0) == 0) continue;
    INFO(line);
    std::istringstream words(line);
    int number = 0;
    char dot = 0;
    std::string name, summary;
    words >> number >> dot >> name;
    std::getline(words, summary);
    CHECK(number == ++expected);
    CHECK(dot == '.');
    CHECK(summary.find_first_not_of(' ') != std::string::npos);
  }
  CHECK(expected == static_cast<int>(passes.size()));
}

TEST_CASE("compile: every --emit kind works on conv_pool", "[driver][compile]") {
  Sandbox box;
  struct Kind {
    const char* emit;
    std::vector<std::string> marks;  // each must appear in the output
  };
  const std::vector<Kind> kinds = {
      {"ast", {"input I", "conv[n, k, y < H, x < W]", "output pool"}},
      {"sema", {"let C = 4", "input I : f32[1, 4, 8, 8]"}},
      {"ir", {"input I : f32[1, 4, 8, 8]", "pool"}},
      {"loops", {"buffer I : f32[1, 4, 8, 8] input", "pool"}},
      {"llvm", {"define ", "ModuleID"}},
      {"asm", {".text", "ret"}},
  };
  for (const Kind& k : kinds) {
    Result r = expectSuccess(box, convPool({"--emit", k.emit}));
    INFO("--emit " << k.emit << "\n" << r.describe());
    for (const std::string& m : k.marks) {
      INFO("expected: " << m);
      CHECK(contains(r.out, m));
    }
  }
  // llvm is the default.
  CHECK(expectSuccess(box, convPool({})).out == expectSuccess(box, convPool({"--emit", "llvm"})).out);

  Result obj = expectSuccess(box, convPool({"--emit", "obj"}));
  REQUIRE(obj.out.size() > 64);
  CHECK(obj.out.substr(0, 4) == std::string("\x7f" "ELF"));

  // An unknown kind is a usage error.
  Result bad = runTexc(box, convPool({"--emit", "pdf"}));
  INFO(bad.describe());
  CHECK(bad.status == 2);
  CHECK(contains(bad.err, "pdf"));
}

TEST_CASE("compile: -O0 calls libm for math functions, -O3 does not", "[driver][compile]") {
  Sandbox box;
  std::string gelu = (kExamples / "gelu.tex").string();
  CHECK(contains(expectSuccess(box, {"compile", gelu, "-O0"}).out, "@tanhf"));
  CHECK_FALSE(contains(expectSuccess(box, {"compile", gelu, "-O3"}).out, "@tanhf"));
}

TEST_CASE("compile: -o PATH writes the file, and nothing when compilation fails", "[driver][compile]") {
  Sandbox box;
  Result toStdout = expectSuccess(box, convPool({"--emit", "loops"}));
  Result toFile = expectSuccess(box, convPool({"--emit", "loops", "-o", "conv.loops"}));
  CHECK(toFile.out.empty());
  CHECK(readBytes(box.work() / "conv.loops") == toStdout.out);
  // "-" is standard output.
  CHECK(expectSuccess(box, convPool({"--emit", "loops", "-o", "-"})).out == toStdout.out);

  // An object file too, byte for byte.
  expectSuccess(box, convPool({"--emit", "obj", "-o", "conv.o"}));
  CHECK(readBytes(box.work() / "conv.o") == expectSuccess(box, convPool({"--emit", "obj"})).out);

  // A program with errors: exit 1, no file, no temporary; an existing file keeps its bytes.
  fs::path bad = box.input("bad.tex", "input x : f32[4]\noutput y = x + undefined_name\n");
  writeBytes(box.work() / "kept.ll", "old");
  Snapshot before = snapshot(box.work());
  for (const std::string out : {"new.ll", "kept.ll"}) {
    Result r = runTexc(box, {"compile", bad.string(), "-o", out});
    INFO(r.describe());
    CHECK(r.status == 1);
    CHECK(contains(r.err, "error:"));
    CHECK(snapshot(box.work()) == before);
  }
  // A bad -D: exit 2, nothing written.
  Result usage = runTexc(box, convPool({"-D", "NOPE=1", "-o", "new.ll"}));
  INFO(usage.describe());
  CHECK(usage.status == 2);
  CHECK(snapshot(box.work()) == before);
}

TEST_CASE("compile: -o into a missing directory is exit 3 and leaves nothing", "[driver][compile]") {
  Sandbox box;
  Snapshot before = snapshot(box.work());
  Result r = runTexc(box, convPool({"-o", "no/such/dir/out.ll"}));
  INFO(r.describe());
  CHECK_FALSE(r.crashed);
  CHECK(r.status == 3);
  CHECK(contains(r.err, "no/such/dir/out.ll"));
  CHECK(snapshot(box.work()) == before);
}

TEST_CASE("compile: -o /dev/stdout writes to standard output and leaves the device alone", "[driver][compile]") {
  Sandbox box;
  struct stat before {};
  REQUIRE(::lstat("/dev/stdout", &before) == 0);
  // Standard output is a regular file here (the test captures it to one): the case where
  // renaming a temporary over the path would replace /dev/stdout itself.
  Result r = expectSuccess(box, convPool({"--emit", "ir", "-o", "/dev/stdout"}));
  CHECK(contains(r.out, "input I : f32[1, 4, 8, 8]"));
  CHECK(r.out == expectSuccess(box, convPool({"--emit", "ir"})).out);
  struct stat after {};
  REQUIRE(::lstat("/dev/stdout", &after) == 0);
  CHECK(S_ISLNK(after.st_mode) == S_ISLNK(before.st_mode));
  CHECK(after.st_ino == before.st_ino);
  // /dev/null is a device: written in place, not replaced.
  struct stat null1 {};
  REQUIRE(::stat("/dev/null", &null1) == 0);
  expectSuccess(box, convPool({"--emit", "ir", "-o", "/dev/null"}));
  struct stat null2 {};
  REQUIRE(::stat("/dev/null", &null2) == 0);
  CHECK(S_ISCHR(null2.st_mode));
  CHECK(null2.st_ino == null1.st_ino);
  // No temporary was left beside either.
  for (const auto& entry : fs::directory_iterator("/dev")) {
    INFO(entry.path());
    CHECK_FALSE(contains(entry.path().filename().string(), ".tmp-"));
  }
}

TEST_CASE("compile: --print-after-all prints every pass of the pipeline, in order", "[driver][compile]") {
  Sandbox box;
  std::vector<std::string> passes = listedPasses(box);
  REQUIRE_FALSE(passes.empty());
  Result r = expectSuccess(box, convPool({"--print-after-all", "-o", "conv.ll"}));
  auto got = headers(r.err);
  REQUIRE(got.size() == passes.size());
  for (size_t i = 0; i < passes.size(); ++i) {
    INFO("pass " << i + 1);
    CHECK(got[i].first == "after");
    CHECK(got[i].second == passes[i]);
  }
  // The final IR printed is the module -o wrote.
  CHECK(bodyAfterHeader(r.err, passes.size() - 1) == readBytes(box.work() / "conv.ll"));

  // "(unchanged)" exactly for the passes that --time-passes reports unchanged (other than the
  // first, whose IR is always shown).
  Result timed = expectSuccess(box, convPool({"--time-passes", "-o", "conv2.ll"}));
  std::istringstream lines(timed.err);
  std::string line;
  std::vector<bool> unchanged;
  while (std::getline(lines, line))
    if (line.rfind("  ", 0) == 0 && !contains(line, "total")) unchanged.push_back(contains(line, "(unchanged)"));
  REQUIRE(unchanged.size() == passes.size());
  for (size_t i = 0; i < passes.size(); ++i) {
    std::string body = bodyAfterHeader(r.err, i);
    INFO("after " << passes[i] << ":\n" << body.substr(0, 300));
    bool printedUnchanged = body == "(unchanged)\n";
    CHECK(printedUnchanged == (unchanged[i] && i != 0));
  }
  // gelu's constant-fold changes nothing: at least one pass shows "(unchanged)".
  Result gelu = expectSuccess(box, {"compile", (kExamples / "gelu.tex").string(), "--print-after-all", "-o", "g.ll"});
  CHECK(contains(gelu.err, "(unchanged)\n"));
}

TEST_CASE("compile: --print-after and --print-before print only the passes named", "[driver][compile]") {
  Sandbox box;
  std::vector<std::string> passes = listedPasses(box);
  size_t dceRuns = static_cast<size_t>(std::count(passes.begin(), passes.end(), "dce"));
  REQUIRE(dceRuns >= 1);

  Result after = expectSuccess(box, convPool({"--print-after=sema,dce", "-o", "a.ll"}));
  auto got = headers(after.err);
  REQUIRE(got.size() == 1 + dceRuns);
  CHECK(got[0] == std::pair<std::string, std::string>{"after", "sema"});
  for (size_t i = 1; i < got.size(); ++i) CHECK(got[i] == std::pair<std::string, std::string>{"after", "dce"});
  CHECK(contains(bodyAfterHeader(after.err, 0), "let C = 4"));  // the sema dump

  // The spaced form works too.
  Result spaced = expectSuccess(box, convPool({"--print-after", "sema,dce", "-o", "b.ll"}));
  CHECK(headers(spaced.err) == got);

  Result before = expectSuccess(box, convPool({"--print-before=cse", "-o", "c.ll"}));
  auto gotBefore = headers(before.err);
  REQUIRE(gotBefore.size() == 1);
  CHECK(gotBefore[0] == std::pair<std::string, std::string>{"before", "cse"});
  CHECK(contains(bodyAfterHeader(before.err, 0), "input I : f32[1, 4, 8, 8]"));

  // Both at once, in pipeline order.
  Result both = expectSuccess(box, convPool({"--print-before=cse", "--print-after=cse", "-o", "d.ll"}));
  auto gotBoth = headers(both.err);
  REQUIRE(gotBoth.size() == 2);
  CHECK(gotBoth[0] == std::pair<std::string, std::string>{"before", "cse"});
  CHECK(gotBoth[1] == std::pair<std::string, std::string>{"after", "cse"});
  // Prints go to standard error, never into the emitted output.
  CHECK_FALSE(contains(readBytes(box.work() / "d.ll"), "// ----- IR"));
}

TEST_CASE("compile: an unknown pass name is exit 2 with the list of passes", "[driver][compile]") {
  Sandbox box;
  std::vector<std::string> passes = listedPasses(box);
  for (const std::string option : {"--print-after=no-such-pass", "--print-before=sema,no-such-pass"}) {
    Snapshot before = snapshot(box.work());
    Result r = runTexc(box, convPool({option, "-o", "x.ll"}));
    INFO(r.describe());
    CHECK_FALSE(r.crashed);
    CHECK(r.status == 2);
    CHECK(contains(r.err, "no-such-pass"));
    for (const std::string& p : passes) {
      INFO("the message should list " << p);
      CHECK(contains(r.err, p));
    }
    CHECK(snapshot(box.work()) == before);
  }
}

TEST_CASE("compile: --print-after a pass that is not in this pipeline is exit 2 and prints nothing", "[driver][compile][pipeline]") {
  Sandbox box;
  struct Case {
    std::vector<std::string> more;
    std::string message;
  };
  const Case cases[] = {
      {{"--target", "cuda", "--print-after=tile", "-o", "x.cu"}, "pass 'tile' is not in this pipeline (--target cuda): "},
      {{"--no-tile", "--print-after=sema,tile", "-o", "x.ll"}, "pass 'tile' is not in this pipeline (--no-tile): "},
      {{"--fuse", "none", "--print-before=fuse", "-o", "x.ll"}, "pass 'fuse' is not in this pipeline (--fuse=none): "},
      {{"--print-after=schedule-loops", "-o", "x.ll"}, "pass 'schedule-loops' is not in this pipeline (no --schedule FILE"},
  };
  for (const Case& c : cases) {
    Snapshot before = snapshot(box.work());
    std::vector<std::string> args = convPool({"--cpu", "haswell"});
    args.insert(args.end(), c.more.begin(), c.more.end());
    Result r = runTexc(box, args);
    INFO(r.describe());
    CHECK_FALSE(r.crashed);
    CHECK(r.status == 2);
    CHECK(contains(r.err, c.message));
    CHECK_FALSE(contains(r.err, "// ----- IR"));  // no partial output
    CHECK(snapshot(box.work()) == before);
  }
  // In the pipeline, the same pass prints as before.
  Result ok = expectSuccess(box, convPool({"--cpu", "haswell", "--print-after=tile", "-o", "y.ll"}));
  CHECK(contains(ok.err, "// ----- IR after tile -----"));
}

TEST_CASE("compile: --dump-dir writes one numbered file per pass and the final .ll", "[driver][compile]") {
  Sandbox box;
  std::vector<std::string> passes = listedPasses(box);
  Result r = expectSuccess(box, convPool({"--dump-dir", "dumps/nested", "-o", "conv.ll"}));
  fs::path dir = box.work() / "dumps/nested";
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir)) files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  std::string listing;
  for (const std::string& f : files) listing += f + " ";
  INFO("files: " << listing);
  REQUIRE(files.size() == passes.size() + 1);
  CHECK(std::find(files.begin(), files.end(), "final.ll") != files.end());
  std::vector<std::string> numbered;
  for (const std::string& f : files)
    if (f != "final.ll") numbered.push_back(f);
  REQUIRE(numbered.size() == passes.size());
  for (size_t i = 0; i < passes.size(); ++i) {
    std::string prefix = fmt::format("{:02d}-{}.", i + 1, passes[i]);
    INFO(numbered[i] << " should start with " << prefix);
    CHECK(numbered[i].rfind(prefix, 0) == 0);
    CHECK_FALSE(readBytes(dir / numbered[i]).empty());
  }
  CHECK(numbered.front() == "01-parse.tex");
  CHECK(numbered.back() == fmt::format("{:02d}-optimize-llvm.ll", passes.size()));
  // The final .ll is what -o wrote, and what the last pass left.
  std::string finalLl = readBytes(dir / "final.ll");
  CHECK(finalLl == readBytes(box.work() / "conv.ll"));
  CHECK(finalLl == readBytes(dir / numbered.back()));

  // Stopping early dumps only the passes that ran, and no .ll.
  expectSuccess(box, convPool({"--emit", "sema", "--dump-dir", "early"}));
  std::set<std::string> early;
  for (const auto& entry : fs::directory_iterator(box.work() / "early")) early.insert(entry.path().filename().string());
  CHECK(early == std::set<std::string>{"01-parse.tex", "02-sema.sema.txt"});
}

TEST_CASE("compile: --dump-dir that cannot be created is exit 3", "[driver][compile]") {
  Sandbox box;
  writeBytes(box.work() / "afile", "x");
  Result r = runTexc(box, convPool({"--dump-dir", "afile/dumps", "-o", "conv.ll"}));
  INFO(r.describe());
  CHECK_FALSE(r.crashed);
  CHECK(r.status == 3);
  CHECK(contains(r.err, "afile/dumps"));
  CHECK_FALSE(fs::exists(box.work() / "conv.ll"));
}

TEST_CASE("compile and run: --dump-dir is all or nothing, a command that fails leaves no dump", "[driver][compile]") {
  Sandbox box;
  // A program error (exit 1) after parse has run: DIR is not created.
  writeBytes(box.work() / "bad.tex", "input x : f32[4]\noutput y = x + undefined_name\n");
  Result bad = runTexc(box, {"compile", (box.work() / "bad.tex").string(), "--dump-dir", "bad-dumps", "-o", "bad.ll"});
  INFO(bad.describe());
  CHECK(bad.status == 1);
  CHECK_FALSE(fs::exists(box.work() / "bad-dumps"));
  CHECK_FALSE(fs::exists(box.work() / "bad.ll"));

  // run fails (exit 2: an input neither given nor --random) after the whole pipeline: an existing
  // DIR keeps what it held and gets nothing new.
  fs::create_directories(box.work() / "kept");
  writeBytes(box.work() / "kept" / "01-parse.tex", "older");
  Result noInput = runTexc(box, {"run", (kExamples / "gelu.tex").string(), "-D", "N=4", "-D", "D=8", "--dump-dir", "kept"});
  INFO(noInput.describe());
  CHECK(noInput.status == 2);
  std::vector<std::string> kept;
  for (const auto& entry : fs::directory_iterator(box.work() / "kept")) kept.push_back(entry.path().filename().string());
  CHECK(kept == std::vector<std::string>{"01-parse.tex"});
  CHECK(readBytes(box.work() / "kept" / "01-parse.tex") == "older");

  // The same run with its inputs succeeds and replaces the file (no staging leftovers in DIR).
  expectSuccess(box, {"run", (kExamples / "gelu.tex").string(), "-D", "N=4", "-D", "D=8", "--random", "1", "--dump-dir", "kept",
                      "--output-dir", "out"});
  CHECK(readBytes(box.work() / "kept" / "01-parse.tex") != "older");
  for (const auto& entry : fs::directory_iterator(box.work() / "kept")) {
    INFO(entry.path().filename().string());
    CHECK(entry.path().filename().string()[0] != '.');
  }
}

TEST_CASE("compile: --time-passes prints a timing table", "[driver][compile]") {
  Sandbox box;
  std::vector<std::string> passes = listedPasses(box);
  Result r = expectSuccess(box, convPool({"--time-passes", "-o", "conv.ll"}));
  CHECK(contains(r.err, "pass timings"));
  std::istringstream lines(r.err);
  std::string line;
  size_t rows = 0;
  bool total = false;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string name, unit;
    double ms = -1;
    if (!(words >> name >> ms >> unit) || unit != "ms") continue;
    INFO(line);
    CHECK(ms >= 0);
    if (name == "total") {
      total = true;
    } else {
      REQUIRE(rows < passes.size());
      CHECK(name == passes[rows]);
      ++rows;
    }
  }
  CHECK(rows == passes.size());
  CHECK(total);
  // On texc run it adds the JIT and the run itself.
  Result run = expectSuccess(box, {"run", (kExamples / "gelu.tex").string(), "-D", "N=4", "-D", "D=8", "--random", "1",
                                   "--time-passes"});
  CHECK(contains(run.err, "pass timings"));
  CHECK(contains(run.err, "jit"));
  CHECK(contains(run.err, "kernels"));
}

TEST_CASE("compile: --target cuda writes the CUDA C to -o, no GPU needed", "[driver][compile]") {
  // The CUDA target's own tests are in tests/unit/cuda.
  Sandbox box;
  Result r = runTexc(box, convPool({"--target", "cuda", "-o", "x.cu"}));
  INFO(r.describe());
  CHECK(r.status == 0);
  CHECK(contains(readBytes(box.work() / "x.cu"), "extern \"C\" __global__"));
}

// The tile pass's switches: --no-tile keeps the lowered nest, --schedule overrides the rule, and a
// bad schedule file is a usage error that writes nothing.
TEST_CASE("compile: --no-tile and --schedule FILE", "[driver][compile][tile]") {
  Sandbox box;
  std::string matmul = (kExamples / "matmul.tex").string();
  // The rule's tile: 6x16 (12 of 16 ymm registers) for AVX2, 6x64 (24 of 32 zmm) for AVX-512.
  std::string tiled = expectSuccess(box, {"compile", matmul, "--emit", "loops", "--cpu", "haswell"}).out;
  CHECK(contains(tiled, "tile 6x16"));
  CHECK(contains(tiled, "# schedule: "));
  std::string wide = expectSuccess(box, {"compile", matmul, "--emit", "loops", "--cpu", "skylake-avx512"}).out;
  CHECK(contains(wide, "tile 6x64"));
  std::string untiled = expectSuccess(box, {"compile", matmul, "--emit", "loops", "--no-tile", "--cpu", "haswell"}).out;
  CHECK_FALSE(contains(untiled, "tile "));
  CHECK(contains(untiled, "acc0 += (A[i, k] * B[k, j])"));

  fs::path sched = box.input("step4.sched", "# register blocking without packing\nmr = 4\nnr = 24\npack = off\npack_a = off\n");
  std::string custom =
      expectSuccess(box, {"compile", matmul, "--emit", "loops", "--schedule", sched.string(), "--cpu", "haswell"}).out;
  CHECK(contains(custom, "tile 4x24"));
  CHECK_FALSE(contains(custom, "pack s"));
  fs::path off = box.input("off.sched", "tile = off\n");
  CHECK(expectSuccess(box, {"compile", matmul, "--emit", "loops", "--schedule", off.string(), "--cpu", "haswell"}).out == untiled);

  fs::path bad = box.input("bad.sched", "mr = 6\nmx = 3\n");
  Snapshot before = snapshot(box.work());
  Result r = runTexc(box, {"compile", matmul, "--schedule", bad.string(), "-o", "out.ll"});
  INFO(r.describe());
  CHECK(r.status == 2);
  CHECK(contains(r.err, "line 2: unknown key 'mx'"));
  CHECK(snapshot(box.work()) == before);
  Result missing = runTexc(box, {"run", matmul, "--random", "1", "--schedule", (box.in() / "nope.sched").string()});
  CHECK(missing.status == 2);
  CHECK(contains(missing.err, "cannot read"));
}

// --conv: the lecture's three ways of computing a convolution, each printed in the loop IR, each
// matching the reference; a mode that does not exist is a usage error that writes nothing.
TEST_CASE("compile and run: --conv=implicit|im2col|direct", "[driver][compile][tile]") {
  Sandbox box;
  std::string conv = (kExamples / "conv_pool.tex").string();
  std::vector<std::string> small = {"-D", "C=5", "-D", "K=7", "-D", "H=11", "-D", "W=13"};
  auto loopsOf = [&](const std::string& mode) {
    std::vector<std::string> args = {"compile", conv, "--emit", "loops", "--conv", mode, "--cpu", "haswell"};
    args.insert(args.end(), small.begin(), small.end());
    return expectSuccess(box, args).out;
  };
  std::string implicit = loopsOf("implicit"), im2col = loopsOf("im2col"), direct = loopsOf("direct");
  CHECK(contains(implicit, "implicit GEMM"));
  CHECK(contains(im2col, "im2col (--conv=im2col): the patch matrix 45x144"));
  CHECK_FALSE(contains(direct, "tile "));
  auto kernelCount = [](const std::string& text) {
    size_t n = 0;
    for (size_t at = text.find("\nkernel "); at != std::string::npos; at = text.find("\nkernel ", at + 1)) ++n;
    return n;
  };
  CHECK(kernelCount(direct) == 1);    // conv, scale/bias and pool in one untiled nest
  CHECK(kernelCount(implicit) == 2);  // the tiled conv with its scale/bias, then the pool
  CHECK(implicit == loopsOf("implicit"));
  fs::path sched = box.input("im2col.sched", "conv = im2col\n");
  std::vector<std::string> viaFile = {"compile", conv, "--emit", "loops", "--schedule", sched.string(), "--cpu", "haswell"};
  viaFile.insert(viaFile.end(), small.begin(), small.end());
  CHECK(expectSuccess(box, viaFile).out == im2col);
  for (const char* mode : {"implicit", "im2col", "direct"}) {
    std::vector<std::string> args = {"run", conv, "--random", "3", "--check", "--conv", mode, "--output-dir", (box.work() / mode).string()};
    args.insert(args.end(), small.begin(), small.end());
    Result r = expectSuccess(box, args);
    CHECK(contains(r.out, "pool: max abs error"));
  }

  Snapshot before = snapshot(box.work());
  Result bad = runTexc(box, {"compile", conv, "--conv", "winograd", "-o", "out.ll"});
  INFO(bad.describe());
  CHECK(bad.status == 2);
  CHECK(contains(bad.err, "--conv winograd: expected implicit, im2col or direct"));
  CHECK(snapshot(box.work()) == before);
}

}  // namespace texc::drivertest
