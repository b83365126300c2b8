// `texc run` refusals (spec section 6): each one exits with the right status, says clearly what
// is wrong (naming the input and the file, and for a mismatch both dtypes and shapes), and leaves
// nothing behind: no output, no temporary file, not even the output directory.
#include <catch2/catch.hpp>

#include "compiler/backend/cuda/CudaDriver.h"
#include "tests/unit/driver/DriverTestUtil.h"
#include "tests/support/Skip.h"

namespace texc::drivertest {

namespace {

// gelu.tex at a small size: x : f32[4, 8], b : f32[8], r : f32[4, 8].
const std::vector<std::string> kGelu = {"run", (kExamples / "gelu.tex").string(), "-D", "N=4", "-D", "D=8"};

std::vector<std::string> gelu(std::initializer_list<std::string> more) {
  std::vector<std::string> args = kGelu;
  args.insert(args.end(), more);
  return args;
}

// Runs texc and checks the refusal: not a crash, `status`, every string of `mentions` in the
// message on standard error, nothing on standard output, and the working directory (where the
// outputs would go) exactly as it was.
Result expectRefusal(const Sandbox& box, const std::vector<std::string>& args, int status,
                     const std::vector<std::string>& mentions) {
  Snapshot before = snapshot(box.work());
  Result r = runTexc(box, args);
  INFO(r.describe());
  CHECK_FALSE(r.crashed);
  CHECK(r.status == status);
  CHECK_FALSE(r.err.empty());
  for (const std::string& m : mentions) {
    INFO("the message should mention: " << m);
    CHECK(contains(r.err, m));
  }
  CHECK(r.out.empty());
  Snapshot after = snapshot(box.work());
  INFO("before: " << names(before) << "\nafter: " << names(after));
  CHECK(after == before);
  return r;
}

std::string goodX() { return npyBytes(ElemType::F32, {4, 8}, someValues(32, 1)); }

}  // namespace

TEST_CASE("run: a missing .npy file is exit 3, naming the input and the file", "[driver][run][refusal]") {
  Sandbox box;
  std::string path = (box.in() / "no-such-file.npy").string();
  expectRefusal(box, gelu({"--input", "x=" + path, "--random", "1", "--output-dir", "out"}), 3,
                {"'x'", path, "no such file"});
}

TEST_CASE("run: an input path that is a directory is exit 3", "[driver][run][refusal]") {
  Sandbox box;
  expectRefusal(box, gelu({"--input", "x=" + box.in().string(), "--random", "1", "--output-dir", "out"}), 3,
                {"'x'", box.in().string(), "directory"});
}

TEST_CASE("run: a file of garbage bytes is exit 3, naming the input and the file", "[driver][run][refusal]") {
  Sandbox box;
  fs::path path = box.input("garbage.npy", "this is not an array at all, just some text\n\x01\x02\x03");
  expectRefusal(box, gelu({"--input", "x=" + path.string(), "--random", "1", "--output-dir", "out"}), 3,
                {"'x'", path.string(), "not a .npy file"});
}

TEST_CASE("run: an empty file is exit 3", "[driver][run][refusal]") {
  Sandbox box;
  fs::path path = box.input("empty.npy", "");
  expectRefusal(box, gelu({"--input", "x=" + path.string(), "--random", "1"}), 3, {"'x'", path.string(), "empty"});
}

TEST_CASE("run: a truncated .npy header is exit 3, naming the input and the file", "[driver][run][refusal]") {
  Sandbox box;
  std::string bytes = goodX();
  REQUIRE(bytes.size() > 40);
  fs::path path = box.input("short-header.npy", bytes.substr(0, 30));  // magic, version, length, part of the dict
  expectRefusal(box, gelu({"--input", "x=" + path.string(), "--random", "1", "--output-dir", "out"}), 3,
                {"'x'", path.string(), "truncated"});
}

TEST_CASE("run: truncated data is exit 3, naming the input and the file", "[driver][run][refusal]") {
  Sandbox box;
  std::string bytes = goodX();
  fs::path path = box.input("short-data.npy", bytes.substr(0, bytes.size() - 4));  // one f32 short
  expectRefusal(box, gelu({"--input", "x=" + path.string(), "--random", "1", "--output-dir", "out"}), 3,
                {"'x'", path.string(), "truncated"});
}

TEST_CASE("run: a file of the wrong shape is exit 3 with both shapes and dtypes", "[driver][run][refusal]") {
  Sandbox box;
  fs::path path = box.input("wrong-shape.npy", npyBytes(ElemType::F32, {8, 4}));
  expectRefusal(box, gelu({"--input", "x=" + path.string(), "--random", "1", "--output-dir", "out"}), 3,
                {"'x'", path.string(), "f32[8, 4]", "f32[4, 8]"});
  // A rank mismatch too.
  fs::path rank = box.input("wrong-rank.npy", npyBytes(ElemType::F32, {32}));
  expectRefusal(box, gelu({"--input", "x=" + rank.string(), "--random", "1", "--output-dir", "out"}), 3,
                {"'x'", rank.string(), "f32[32]", "f32[4, 8]"});
}

TEST_CASE("run: a file of the wrong dtype is exit 3 with both shapes and dtypes", "[driver][run][refusal]") {
  Sandbox box;
  fs::path path = box.input("wrong-dtype.npy", npyBytes(ElemType::F64, {8}));
  expectRefusal(box, gelu({"--input", "b=" + path.string(), "--random", "1", "--output-dir", "out"}), 3,
                {"'b'", path.string(), "f64[8]", "f32[8]"});
}

TEST_CASE("run: the second of two inputs failing still writes nothing", "[driver][run][refusal]") {
  Sandbox box;
  fs::path x = box.input("x.npy", goodX());
  fs::path r = box.input("r.npy", npyBytes(ElemType::F32, {4, 7}));
  fs::path b = box.input("b.npy", npyBytes(ElemType::F32, {8}));
  expectRefusal(box, gelu({"--input", "x=" + x.string(), "--input", "b=" + b.string(), "--input", "r=" + r.string()}),
                3, {"'r'", r.string(), "f32[4, 7]", "f32[4, 8]"});
}

TEST_CASE("run: --input of a name the program does not have is exit 2", "[driver][run][refusal]") {
  Sandbox box;
  fs::path x = box.input("x.npy", goodX());
  expectRefusal(box, gelu({"--input", "nosuch=" + x.string(), "--random", "1"}), 2, {"nosuch"});
  // A computed tensor or an output is not an input either.
  expectRefusal(box, gelu({"--input", "out=" + x.string(), "--random", "1"}), 2, {"out"});
}

TEST_CASE("run: --input given twice for one name is exit 2", "[driver][run][refusal]") {
  Sandbox box;
  fs::path x = box.input("x.npy", goodX());
  expectRefusal(box, gelu({"--input", "x=" + x.string(), "--input", "x=" + x.string(), "--random", "1"}), 2, {"x"});
}

TEST_CASE("run: an input neither given nor --random is exit 2, naming it", "[driver][run][refusal]") {
  Sandbox box;
  expectRefusal(box, gelu({}), 2, {"'x'", "--random"});
  fs::path x = box.input("x.npy", goodX());
  fs::path r = box.input("r.npy", goodX());
  expectRefusal(box, gelu({"--input", "x=" + x.string(), "--input", "r=" + r.string(), "--output-dir", "out"}), 2,
                {"'b'", "--random"});
}

TEST_CASE("run: --input without '=' is exit 2", "[driver][run][refusal]") {
  Sandbox box;
  expectRefusal(box, gelu({"--input", "x", "--random", "1"}), 2, {"x", "NAME=PATH"});
  expectRefusal(box, gelu({"--input", "=a.npy", "--random", "1"}), 2, {"NAME=PATH"});
  expectRefusal(box, gelu({"--input", "x=", "--random", "1"}), 2, {"NAME=PATH"});
}

TEST_CASE("run: an output directory under a regular file is exit 3", "[driver][run][refusal]") {
  Sandbox box;
  writeBytes(box.work() / "afile", "not a directory\n");
  expectRefusal(box, gelu({"--random", "1", "--output-dir", "afile/sub"}), 3, {"afile/sub"});
  expectRefusal(box, gelu({"--random", "1", "--output-dir", "afile/sub/deeper"}), 3, {"afile/sub/deeper"});
}

TEST_CASE("run: an output directory that is a file is exit 3", "[driver][run][refusal]") {
  Sandbox box;
  writeBytes(box.work() / "afile", "not a directory\n");
  expectRefusal(box, gelu({"--random", "1", "--output-dir", "afile"}), 3, {"afile", "not a directory"});
}

TEST_CASE("run: an output directory that cannot be written is exit 3", "[driver][run][refusal]") {
  if (::geteuid() == 0) testsupport::skipTest("running as root: directory permissions are not enforced");
  Sandbox box;
  fs::create_directories(box.work() / "ro");
  fs::permissions(box.work() / "ro", fs::perms::owner_read | fs::perms::owner_exec);
  expectRefusal(box, gelu({"--random", "1", "--output-dir", "ro"}), 3, {"ro"});
  expectRefusal(box, gelu({"--random", "1", "--output-dir", "ro/sub"}), 3, {"ro/sub"});
}

TEST_CASE("run: an output path taken by a directory writes no output at all", "[driver][run][refusal]") {
  // avgpool_pad.tex has two outputs, mx and avg; avg.npy cannot be written, so mx.npy must not
  // be either, and an mx.npy already there keeps its old bytes.
  Sandbox box;
  fs::create_directories(box.work() / "out" / "avg.npy");
  writeBytes(box.work() / "out" / "mx.npy", "old bytes");
  std::vector<std::string> args = {"run", (kExamples / "avgpool_pad.tex").string(), "-D", "C=2", "-D", "H=8",
                                   "-D", "W=8", "--random", "3", "--output-dir", "out"};
  expectRefusal(box, args, 3, {"avg.npy"});
  CHECK(readBytes(box.work() / "out" / "mx.npy") == "old bytes");
}

TEST_CASE("run: a failure after the output directory was made removes it again", "[driver][run][refusal]") {
  // The output (2^55 bytes) is too large to allocate: that is found after --output-dir was created, which must
  // not be left behind. A directory that was there before stays.
  Sandbox box;
  fs::path huge = box.input("huge.tex", "let N = 9007199254740992\ninput x : f32[4]\noutput y[i < N] = x[0]\n");
  expectRefusal(box, {"run", huge.string(), "--random", "1", "--output-dir", "new/deeper"}, 3, {"'y'"});
  fs::create_directories(box.work() / "existing");
  expectRefusal(box, {"run", huge.string(), "--random", "1", "--output-dir", "existing/new"}, 3, {"'y'"});
  CHECK(fs::is_directory(box.work() / "existing"));
}

TEST_CASE("run: a program with errors is exit 1 with diagnostics on stderr", "[driver][run][refusal]") {
  Sandbox box;
  fs::path bad = box.input("bad.tex", "input x : f32[4]\noutput y = x + z\n");
  Result r = expectRefusal(box, {"run", bad.string(), "--random", "1", "--output-dir", "out"}, 1,
                           {bad.string() + ":2:16: error:", "'z'"});
  CHECK(contains(r.err, "^"));
}

TEST_CASE("run: a bad -D is exit 2", "[driver][run][refusal]") {
  Sandbox box;
  expectRefusal(box, gelu({"-D", "NOPE=3", "--random", "1"}), 2, {"NOPE"});
  expectRefusal(box, gelu({"-D", "N=abc", "--random", "1"}), 2, {"abc"});
  expectRefusal(box, gelu({"-D", "N=0", "--random", "1"}), 2, {"N"});
  expectRefusal(box, gelu({"-D", "N", "--random", "1"}), 2, {"NAME=VALUE"});
}

TEST_CASE("run: an unknown option is exit 2", "[driver][run][refusal]") {
  Sandbox box;
  expectRefusal(box, gelu({"--random", "1", "--no-such-option"}), 2, {"--no-such-option"});
  expectRefusal(box, {"frobnicate"}, 2, {"frobnicate"});
  expectRefusal(box, {}, 2, {});
}

TEST_CASE("run: bad option values are exit 2", "[driver][run][refusal]") {
  Sandbox box;
  expectRefusal(box, gelu({"--random", "1", "--threads", "-1"}), 2, {"--threads"});
  expectRefusal(box, gelu({"--random", "1", "--threads", "many"}), 2, {"--threads"});
  expectRefusal(box, gelu({"--random", "seed"}), 2, {"--random"});
  expectRefusal(box, gelu({"--random", "1", "-O", "7"}), 2, {"-O"});
  expectRefusal(box, gelu({"--random", "1", "--fuse=sometimes"}), 2, {"--fuse"});
}

TEST_CASE("run: --target cuda without a GPU is refused cleanly", "[driver][run][refusal]") {
  // Without a GPU (no libcuda, or no device) the driver must not crash: a run-time failure (3)
  // that names CUDA, and nothing written. tests/unit/cuda covers the CUDA target itself.
  bool gpu = true;
  try {
    CudaDevice::open();
  } catch (const CudaUnavailable&) {
    gpu = false;
  }
  if (gpu) testsupport::skipTest("this machine has a GPU, so --target cuda runs (tests/unit/cuda checks that)");
  Sandbox box;
  Snapshot before = snapshot(box.work());
  Result r = runTexc(box, gelu({"--random", "1", "--target", "cuda", "--output-dir", "out"}));
  INFO(r.describe());
  CHECK_FALSE(r.crashed);
  CHECK(r.status == 3);
  CHECK(contains(r.err, "cuda"));
  CHECK(snapshot(box.work()) == before);
  // Anything else is not a target at all.
  expectRefusal(box, gelu({"--random", "1", "--target", "tpu"}), 2, {"tpu"});
}

TEST_CASE("run: a missing program file is exit 2 and writes nothing", "[driver][run][refusal]") {
  Sandbox box;
  std::string path = (box.in() / "missing.tex").string();
  expectRefusal(box, {"run", path, "--random", "1"}, 2, {path});
}

}  // namespace texc::drivertest
