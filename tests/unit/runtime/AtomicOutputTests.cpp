#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/Npy.h"
#include "tests/unit/runtime/RuntimeTestUtil.h"

using namespace texc;
using Catch::Matchers::Contains;
using texc::test::readBytes;
using texc::test::TempDir;
using texc::test::writeBytes;
using Strings = std::vector<std::string>;

namespace {
Tensor filled(float value, int64_t n) {
  Tensor t = makeTensor(ElemType::F32, {n});
  for (int64_t i = 0; i < n; ++i) t.data.as<float>()[i] = value + static_cast<float>(i);
  return t;
}
}  // namespace

TEST_CASE("outputs appear only on commit", "[atomic]") {
  TempDir dir;
  AtomicOutputSet set;
  set.add(dir / "a.npy", filled(1.0f, 3));
  set.add(dir / "b.npy", filled(10.0f, 2));
  // Before commit only hidden temporaries exist, next to their final paths.
  auto temps = set.temporaries();
  REQUIRE(temps.size() == 2);
  for (const auto& t : temps) {
    CHECK(t.parent_path() == dir.path());
    CHECK(t.filename().string().front() == '.');
    CHECK(std::filesystem::exists(t));
  }
  CHECK_THAT(temps[0].filename().string(), Contains(".a.npy.tmp-"));
  CHECK(!std::filesystem::exists(dir / "a.npy"));
  CHECK(!std::filesystem::exists(dir / "b.npy"));

  set.commit();
  CHECK(dir.list() == Strings{"a.npy", "b.npy"});
  Tensor a = readNpy(dir / "a.npy");
  CHECK(a.shape == std::vector<int64_t>{3});
  CHECK(a.data.as<float>()[2] == 3.0f);
  Tensor b = readNpy(dir / "b.npy");
  CHECK(b.data.as<float>()[1] == 11.0f);
  CHECK(set.temporaries().empty());
}

TEST_CASE("a set destroyed without commit leaves nothing behind", "[atomic]") {
  TempDir dir;
  {
    AtomicOutputSet set;
    set.add(dir / "a.npy", filled(1.0f, 3));
    set.add(dir / "b.npy", filled(2.0f, 3));
    CHECK(dir.list().size() == 2);
  }
  CHECK(dir.list().empty());
}

TEST_CASE("abort removes the temporaries and keeps existing outputs", "[atomic]") {
  TempDir dir;
  writeBytes(dir / "a.npy", "previous");
  AtomicOutputSet set;
  set.add(dir / "a.npy", filled(1.0f, 3));
  CHECK(dir.list().size() == 2);
  set.abort();
  CHECK(dir.list() == Strings{"a.npy"});
  CHECK(readBytes(dir / "a.npy") == "previous");
  // The set is reusable after an abort.
  set.add(dir / "a.npy", filled(5.0f, 1));
  set.commit();
  CHECK(readNpy(dir / "a.npy").data.as<float>()[0] == 5.0f);
}

TEST_CASE("a failed add removes every temporary and blocks commit", "[atomic]") {
  TempDir dir;
  writeBytes(dir / "a.npy", "previous");
  AtomicOutputSet set;
  set.add(dir / "a.npy", filled(1.0f, 3));
  auto unreachable = dir / "no-such-dir" / "b.npy";
  CHECK_THROWS_AS(set.add(unreachable, filled(2.0f, 3)), NpyError);
  CHECK(dir.list() == Strings{"a.npy"});
  CHECK_THROWS_WITH(set.add(dir / "c.npy", filled(3.0f, 1)),
                    Contains("not written because an earlier output failed"));
  CHECK_THROWS_WITH(set.commit(), Contains("an earlier output failed"));
  CHECK(dir.list() == Strings{"a.npy"});
  CHECK(readBytes(dir / "a.npy") == "previous");
}

TEST_CASE("commit replaces existing outputs", "[atomic]") {
  TempDir dir;
  writeBytes(dir / "a.npy", "previous");
  AtomicOutputSet set;
  set.add(dir / "a.npy", filled(7.0f, 2));
  set.commit();
  CHECK(dir.list() == Strings{"a.npy"});
  CHECK(readNpy(dir / "a.npy").data.as<float>()[1] == 8.0f);
}

TEST_CASE("a directory in the way fails the commit before anything is renamed", "[atomic]") {
  TempDir dir;
  std::filesystem::create_directory(dir / "b.npy");
  AtomicOutputSet set;
  set.add(dir / "a.npy", filled(1.0f, 3));
  set.add(dir / "b.npy", filled(2.0f, 3));
  CHECK_THROWS_WITH(set.commit(), Contains((dir / "b.npy").string()) && Contains("directory"));
  CHECK(dir.list() == Strings{"b.npy"});
  CHECK(std::filesystem::is_directory(dir / "b.npy"));
}

TEST_CASE("the same output path cannot be added twice", "[atomic]") {
  TempDir dir;
  AtomicOutputSet set;
  set.add(dir / "a.npy", filled(1.0f, 3));
  CHECK_THROWS_WITH(set.add(dir.path() / "." / "a.npy", filled(1.0f, 3)),
                    Contains("the same output path is written twice"));
}

TEST_CASE("ensureOutputDir creates, accepts and refuses directories", "[atomic]") {
  TempDir dir;
  auto nested = dir / "x" / "y" / "z";
  ensureOutputDir(nested);
  CHECK(std::filesystem::is_directory(nested));
  CHECK_NOTHROW(ensureOutputDir(nested));
  CHECK_NOTHROW(ensureOutputDir(""));

  writeBytes(dir / "file", "x");
  CHECK_THROWS_MATCHES(ensureOutputDir(dir / "file"), NpyError,
                       Catch::Matchers::Message("output directory '" + (dir / "file").string() +
                                                "' exists and is not a directory"));
  CHECK_THROWS_WITH(ensureOutputDir(dir / "file" / "sub"),
                    Contains("cannot create output directory '" + (dir / "file" / "sub").string()));
}
