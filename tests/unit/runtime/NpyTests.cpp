#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "runtime/Half.h"
#include "runtime/Npy.h"
#include "tests/unit/runtime/RuntimeTestUtil.h"

using namespace texc;
using Catch::Matchers::Contains;
using texc::test::npyBytes;
using texc::test::rawBytes;
using texc::test::readBytes;
using texc::test::TempDir;
using texc::test::writeBytes;

namespace {

// A tensor whose every element is distinct, so a reordering or truncation would show.
Tensor patterned(ElemType type, std::vector<int64_t> shape) {
  Tensor t = makeTensor(type, std::move(shape));
  int64_t n = numElements(t);
  for (int64_t i = 0; i < n; ++i) {
    double v = static_cast<double>(i) * 0.5 - 3.25;
    switch (type) {
      case ElemType::F32:
        t.data.as<float>()[i] = static_cast<float>(v);
        break;
      case ElemType::F64:
        t.data.as<double>()[i] = v + 1e-12;
        break;
      case ElemType::F16:
        t.data.as<uint16_t>()[i] = floatToHalf(static_cast<float>(v));
        break;
      case ElemType::BF16:
        t.data.as<uint16_t>()[i] = floatToBf16(static_cast<float>(v));
        break;
    }
  }
  return t;
}

std::string dataBytes(const Tensor& t) {
  return std::string(reinterpret_cast<const char*>(t.data.data()), byteSize(t));
}

// The message readNpy throws for `bytes` stored at `dir/name`.
std::string refusal(const TempDir& dir, const std::string& name, const std::string& bytes) {
  auto p = dir / name;
  writeBytes(p, bytes);
  try {
    readNpy(p);
  } catch (const NpyError& e) {
    std::string msg = e.what();
    // The in-memory parser must refuse the same bytes the same way.
    try {
      parseNpy(bytes, p.string());
    } catch (const NpyError& e2) {
      CHECK(std::string(e2.what()) == msg);
      return msg;
    }
    FAIL("parseNpy accepted what readNpy refused: " << msg);
  }
  FAIL("readNpy accepted " << name);
  return "";
}

const std::string kF32Header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n";

}  // namespace

TEST_CASE("describe writes types as .tex sources do", "[npy]") {
  CHECK(describe(ElemType::F32, {3, 4}) == "f32[3, 4]");
  CHECK(describe(ElemType::BF16, {7}) == "bf16[7]");
  CHECK(describe(ElemType::F64, {}) == "f64");
  CHECK(describe(ElemType::F16, {2, 0, 1}) == "f16[2, 0, 1]");
}

TEST_CASE("every dtype and shape round-trips through a file", "[npy]") {
  TempDir dir;
  const std::vector<std::vector<int64_t>> shapes = {{},     {0},       {1},       {5},
                                                    {3, 4}, {1, 1, 1}, {2, 0, 3}, {2, 3, 4}};
  int files = 0;
  for (ElemType type : {ElemType::F32, ElemType::F64, ElemType::F16, ElemType::BF16}) {
    for (const auto& shape : shapes) {
      INFO(describe(type, shape));
      Tensor t = patterned(type, shape);
      auto p = dir / ("t" + std::to_string(files++) + ".npy");
      writeNpy(p, t);
      std::string bytes = readBytes(p);
      // Data starts at a multiple of 64 and the header ends in a newline, as numpy writes.
      REQUIRE(bytes.size() >= 10);
      CHECK(bytes[6] == 1);
      size_t headerLen = static_cast<unsigned char>(bytes[8]) |
                         (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
      CHECK((10 + headerLen) % 64 == 0);
      CHECK(bytes[10 + headerLen - 1] == '\n');
      CHECK(bytes.size() == 10 + headerLen + byteSize(t));
      CHECK(bytes == encodeNpy(t));

      Tensor back = readNpy(p);
      CHECK(back.type == type);
      CHECK(back.shape == shape);
      CHECK(back.data.size() == byteSize(t));
      CHECK(dataBytes(back) == dataBytes(t));
    }
  }
  CHECK(files == 32);
}

TEST_CASE("the written header is numpy's", "[npy]") {
  Tensor t = patterned(ElemType::F32, {3, 4});
  std::string bytes = encodeNpy(t);
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }";
  REQUIRE(bytes.size() == 128 + 48);
  CHECK(bytes.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
  CHECK(bytes[8] == 118);
  CHECK(bytes[9] == 0);
  CHECK(bytes.substr(10, dict.size()) == dict);
  CHECK(bytes.substr(10 + dict.size(), 118 - dict.size() - 1) == std::string(58, ' '));
  CHECK(bytes[127] == '\n');
  CHECK(bytes.substr(128) == dataBytes(t));

  CHECK_THAT(encodeNpy(patterned(ElemType::F64, {})),
             Contains("'descr': '<f8'") && Contains("'shape': ()"));
  CHECK_THAT(encodeNpy(patterned(ElemType::F16, {5})),
             Contains("'descr': '<f2'") && Contains("'shape': (5,)"));
  CHECK_THAT(encodeNpy(patterned(ElemType::BF16, {1, 2})),
             Contains("'descr': '<V2'") && Contains("'shape': (1, 2)"));
}

TEST_CASE("a header too long for version 1.0 is written as 2.0", "[npy]") {
  TempDir dir;
  // 30000 extents of 1 need about 90000 header bytes, past the u16 length of version 1.0.
  Tensor t = makeTensor(ElemType::F32, std::vector<int64_t>(30000, 1));
  t.data.as<float>()[0] = 42.0f;
  auto p = dir / "wide.npy";
  writeNpy(p, t);
  std::string bytes = readBytes(p);
  CHECK(bytes[6] == 2);
  CHECK(bytes[7] == 0);
  size_t headerLen = 0;
  for (int i = 0; i < 4; ++i)
    headerLen |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
  CHECK(headerLen > 0xffff);
  CHECK((12 + headerLen) % 64 == 0);
  Tensor back = readNpy(p);
  CHECK(back.shape.size() == 30000);
  CHECK(back.data.as<float>()[0] == 42.0f);
}

TEST_CASE("hand-built version 1.0, 2.0 and 3.0 files are read", "[npy]") {
  TempDir dir;
  SECTION("1.0 with an unpadded header") {
    auto p = dir / "v1.npy";
    writeBytes(p, npyBytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }\n",
                           rawBytes<double>({1.5, -2.25})));
    Tensor t = readNpy(p);
    CHECK(t.type == ElemType::F64);
    CHECK(t.shape == std::vector<int64_t>{2});
    CHECK(t.data.as<double>()[0] == 1.5);
    CHECK(t.data.as<double>()[1] == -2.25);
  }
  SECTION("2.0 has a four-byte header length") {
    auto p = dir / "v2.npy";
    writeBytes(p, npyBytes(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1), }   \n",
                           rawBytes<float>({3.0f, 4.0f})));
    Tensor t = readNpy(p);
    CHECK(t.type == ElemType::F32);
    CHECK(t.shape == std::vector<int64_t>{2, 1});
    CHECK(t.data.as<float>()[0] == 3.0f);
    CHECK(t.data.as<float>()[1] == 4.0f);
  }
  SECTION("3.0 is 2.0 with a UTF-8 header") {
    auto p = dir / "v3.npy";
    writeBytes(p, npyBytes(3, "{'descr': '<f2', 'fortran_order': False, 'shape': (), }\n",
                           rawBytes<uint16_t>({0x3c00})));
    Tensor t = readNpy(p);
    CHECK(t.type == ElemType::F16);
    CHECK(t.shape.empty());
    CHECK(t.data.as<uint16_t>()[0] == 0x3c00);
  }
  SECTION("bf16 as the raw void dtype, either byte-order mark") {
    for (std::string descr : {"<V2", "|V2"}) {
      auto p = dir / "bf16.npy";
      writeBytes(
          p, npyBytes(1, "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (3,), }\n",
                      rawBytes<uint16_t>({0x3f80, 0xc000, 0x7f80})));
      Tensor t = readNpy(p);
      CHECK(t.type == ElemType::BF16);
      CHECK(bf16ToFloat(t.data.as<uint16_t>()[0]) == 1.0f);
      CHECK(bf16ToFloat(t.data.as<uint16_t>()[1]) == -2.0f);
      CHECK(std::isinf(bf16ToFloat(t.data.as<uint16_t>()[2])));
    }
  }
}

TEST_CASE("header dicts are parsed with any spacing, order and quoting", "[npy]") {
  struct Case {
    std::string header;
    std::vector<int64_t> shape;
  };
  const Case cases[] = {
      {"{'descr':'<f4','fortran_order':False,'shape':(2,)}", {2}},
      {"{'shape': (1, 2), 'descr': '<f4', 'fortran_order': False}\n", {1, 2}},
      {"  {  \"fortran_order\" : False ,\t\"shape\" : ( 2 , 1 , ) , \"descr\" : \"<f4\" , }  \n",
       {2, 1}},
      {"{'descr': '<f4',\n 'fortran_order': False,\n 'shape': (2L,),\n}\n", {2}},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [2], }\n", {2}},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 2, 1), }" + std::string(40, ' ') +
           "\n",
       {1, 1, 2, 1}},
  };
  for (const Case& c : cases) {
    INFO(c.header);
    Tensor t = parseNpy(npyBytes(1, c.header, rawBytes<float>({7.0f, 8.0f})), "mem.npy");
    CHECK(t.type == ElemType::F32);
    CHECK(t.shape == c.shape);
    CHECK(t.data.as<float>()[1] == 8.0f);
  }
}

TEST_CASE("missing files and directories are refused", "[npy]") {
  TempDir dir;
  auto missing = dir / "nope.npy";
  CHECK_THROWS_MATCHES(readNpy(missing), NpyError,
                       Catch::Matchers::Message(missing.string() + ": cannot read: no such file"));
  CHECK_THROWS_WITH(readNpy(dir.path()), Contains(dir.path().string()) && Contains("directory"));
}

TEST_CASE("files that are not .npy are refused", "[npy]") {
  TempDir dir;
  CHECK_THAT(refusal(dir, "empty.npy", ""),
             Contains("empty.npy: not a .npy file") && Contains("empty"));
  CHECK_THAT(refusal(dir, "garbage.npy", "this is certainly not numpy data\n"),
             Contains("garbage.npy: not a .npy file") && Contains("magic"));
  CHECK_THAT(refusal(dir, "short.npy", "\x93NU"), Contains("short.npy: not a .npy file"));
  CHECK_THAT(refusal(dir, "csv.npy", "1,2,3\n4,5,6\n"), Contains("not a .npy file"));
}

TEST_CASE("unsupported format versions are refused", "[npy]") {
  TempDir dir;
  std::string v4 = npyBytes(2, kF32Header, rawBytes<float>({1, 2}));
  v4[6] = 4;
  CHECK_THAT(refusal(dir, "v4.npy", v4), Contains("v4.npy: unsupported .npy format version 4.0") &&
                                             Contains("1.0, 2.0 and 3.0"));
  std::string v11 = npyBytes(1, kF32Header, rawBytes<float>({1, 2}));
  v11[7] = 1;
  CHECK_THAT(refusal(dir, "v11.npy", v11), Contains("unsupported .npy format version 1.1"));
}

TEST_CASE("truncated headers are refused", "[npy]") {
  TempDir dir;
  std::string full = npyBytes(1, kF32Header, rawBytes<float>({1, 2}));
  CHECK_THAT(refusal(dir, "a.npy", full.substr(0, 7)), Contains("a.npy: truncated .npy header"));
  CHECK_THAT(refusal(dir, "b.npy", full.substr(0, 9)), Contains("b.npy: truncated .npy header"));
  CHECK_THAT(refusal(dir, "c.npy", full.substr(0, 30)),
             Contains("c.npy: truncated .npy header") &&
                 Contains(std::to_string(kF32Header.size()) + " bytes but 20 follow"));
  std::string v2 = npyBytes(2, kF32Header, "");
  CHECK_THAT(refusal(dir, "d.npy", v2.substr(0, 11)), Contains("truncated .npy header"));
}

TEST_CASE("malformed headers are refused", "[npy]") {
  TempDir dir;
  auto data = rawBytes<float>({1, 2});
  struct Case {
    std::string header;
    std::string expect;
  };
  const Case cases[] = {
      {"not a dict\n", "expected the header to start with '{'"},
      {"{'descr': '<f4', 'fortran_order': False}\n", "missing key 'shape'"},
      {"{'descr': '<f4', 'shape': (2,)}\n", "missing key 'fortran_order'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}\n",
       "unexpected key 'extra'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}\n",
       "key 'descr' appears twice"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': 2}\n", "'shape' is 2, not a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}\n", "negative extent -2"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': ('2',)}\n", "is not an integer"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}\n", "not True or False"},
      {"{'descr' '<f4', 'fortran_order': False, 'shape': (2,)}\n",
       "expected ':' after key 'descr'"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}\n", "expected ',' or '}'"},
      {"{'descr': '<f4", "unterminated string"},
      {"{descr: '<f4', 'fortran_order': False, 'shape': (2,)}\n", "expected a quoted key"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", "expected ',' or '}'"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}\n", "expected ',' or '}'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk\n",
       "unexpected text after the closing '}'"},
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}\n", "expected a value"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}\n",
       "integer too large"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': "
       "((((((((((((((((((((2,),),),),),),),),),),),),),),),),),),),)}\n",
       "nested too deeply"},
      {"", "expected the header to start with '{'"},
  };
  int i = 0;
  for (const Case& c : cases) {
    INFO(c.header);
    std::string name = "m" + std::to_string(i++) + ".npy";
    CHECK_THAT(refusal(dir, name, npyBytes(1, c.header, data)),
               Contains(name + ": malformed .npy header") && Contains(c.expect));
  }
}

TEST_CASE("a header with a NUL inside is refused, not cut short", "[npy]") {
  std::string header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}\0\n", 57);
  CHECK_THROWS_WITH(parseNpy(npyBytes(1, header, rawBytes<float>({1, 2})), "nul.npy"),
                    Contains("nul.npy: malformed .npy header") && Contains("\\x00"));
}

TEST_CASE("unsupported and big-endian dtypes are refused by name", "[npy]") {
  TempDir dir;
  auto withDescr = [](const std::string& descr) {
    return npyBytes(1, "{'descr': " + descr + ", 'fortran_order': False, 'shape': (2,), }\n",
                    rawBytes<float>({1, 2}));
  };
  CHECK_THAT(
      refusal(dir, "be.npy", withDescr("'>f4'")),
      Contains("be.npy: big-endian dtype '>f4' is not supported") && Contains("astype('<f4')"));
  CHECK_THAT(refusal(dir, "be8.npy", withDescr("'>f8'")), Contains("big-endian dtype '>f8'"));
  CHECK_THAT(refusal(dir, "i4.npy", withDescr("'<i4'")),
             Contains("i4.npy: unsupported dtype '<i4'") && Contains("'<f4', '<f8', '<f2'"));
  CHECK_THAT(refusal(dir, "u1.npy", withDescr("'|u1'")), Contains("unsupported dtype '|u1'"));
  CHECK_THAT(refusal(dir, "v4.npy", withDescr("'<V4'")), Contains("unsupported dtype '<V4'"));
  CHECK_THAT(refusal(dir, "rec.npy", withDescr("[('a', '<f4')]")),
             Contains("unsupported dtype [('a', '<f4')]") && Contains("structured"));
}

TEST_CASE("Fortran-order arrays are refused", "[npy]") {
  TempDir dir;
  std::string bytes = npyBytes(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 1), }\n",
                               rawBytes<float>({1, 2}));
  CHECK(refusal(dir, "f.npy", bytes) ==
        (dir / "f.npy").string() +
            ": Fortran-order arrays are not supported; save with np.ascontiguousarray");
}

TEST_CASE("truncated and overlong data are refused with both sizes", "[npy]") {
  TempDir dir;
  const std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }\n";
  std::vector<float> twelve(12, 1.0f);
  CHECK_THAT(
      refusal(dir, "short.npy", npyBytes(1, header, rawBytes(twelve).substr(0, 40))),
      Contains("short.npy: data is truncated: f32[3, 4] needs 48 bytes but the file holds 40"));
  CHECK_THAT(refusal(dir, "none.npy", npyBytes(1, header, "")),
             Contains("data is truncated: f32[3, 4] needs 48 bytes but the file holds 0"));
  CHECK_THAT(refusal(dir, "long.npy", npyBytes(1, header, rawBytes(twelve) + "xyz")),
             Contains("long.npy: 3 unexpected bytes after the data: f32[3, 4] needs 48 bytes but "
                      "the file holds 51"));
  CHECK_THAT(refusal(dir, "scalar.npy",
                     npyBytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }\n",
                              rawBytes<double>({1.0, 2.0}))),
             Contains("8 unexpected bytes after the data: f64 needs 8 bytes"));
  // A corrupt shape claiming petabytes is refused from the file size, before any allocation.
  CHECK_THAT(
      refusal(dir, "huge.npy",
              npyBytes(
                  1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000, 1000000), }\n",
                  "abc")),
      Contains("data is truncated"));
  CHECK_THAT(
      refusal(
          dir, "overflow.npy",
          npyBytes(
              1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 4), }\n",
              "")),
      Contains("overflow.npy: shape (4611686018427387904, 4) is too large"));
}

TEST_CASE("a .npy file streamed through a pipe is read", "[npy]") {
  TempDir dir;
  auto fifo = dir / "pipe.npy";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  SECTION("complete") {
    std::string bytes = npyBytes(1, kF32Header, rawBytes<float>({5.0f, 6.0f}));
    std::thread writer([&] { writeBytes(fifo, bytes); });
    Tensor t = readNpy(fifo);
    writer.join();
    CHECK(t.shape == std::vector<int64_t>{2});
    CHECK(t.data.as<float>()[0] == 5.0f);
    CHECK(t.data.as<float>()[1] == 6.0f);
  }
  SECTION("with trailing bytes") {
    std::string bytes = npyBytes(1, kF32Header, rawBytes<float>({5.0f, 6.0f}) + "!!");
    std::thread writer([&] { writeBytes(fifo, bytes); });
    CHECK_THROWS_WITH(readNpy(fifo), Contains("2 unexpected bytes after the data: f32[2] needs 8 "
                                              "bytes but the file holds 10"));
    writer.join();
  }
  SECTION("truncated") {
    std::string bytes = npyBytes(1, kF32Header, "abc");
    std::thread writer([&] { writeBytes(fifo, bytes); });
    CHECK_THROWS_WITH(readNpy(fifo),
                      Contains("data is truncated: f32[2] needs 8 bytes but the file holds 3"));
    writer.join();
  }
}

TEST_CASE("checkMatches names both types and shapes", "[npy]") {
  Tensor t = makeTensor(ElemType::F64, {3, 4});
  CHECK_NOTHROW(checkMatches(t, ElemType::F64, {3, 4}, "x", "a.npy"));
  CHECK_THROWS_MATCHES(
      checkMatches(t, ElemType::F32, {4, 3}, "x", "a.npy"), NpyError,
      Catch::Matchers::Message("input 'x': file a.npy holds f64[3, 4] but the program declares "
                               "f32[4, 3]"));
  CHECK_THROWS_WITH(checkMatches(t, ElemType::F64, {12}, "w", "dir/w.npy"),
                    "input 'w': file dir/w.npy holds f64[3, 4] but the program declares f64[12]");
  Tensor s = makeTensor(ElemType::F32, {});
  CHECK_THROWS_WITH(checkMatches(s, ElemType::F32, {1}, "s", "s.npy"),
                    "input 's': file s.npy holds f32 but the program declares f32[1]");
}

TEST_CASE("write failures throw NpyError naming the path", "[npy]") {
  TempDir dir;
  Tensor t = patterned(ElemType::F32, {2});
  auto p = dir / "missing-dir" / "out.npy";
  CHECK_THROWS_MATCHES(
      writeNpy(p, t), NpyError,
      Catch::Matchers::Message(p.string() + ": cannot write: No such file or directory"));
  CHECK_THROWS_WITH(writeNpy(dir.path(), t), Contains(dir.path().string() + ": cannot write"));

  Tensor bad;
  bad.type = ElemType::F64;
  bad.shape = {4};
  bad.data = Buffer(8);
  CHECK_THROWS_WITH(writeNpy(dir / "bad.npy", bad),
                    Contains("cannot write f64[4]: its buffer holds 8 bytes, not 32"));
  CHECK(dir.list().empty());
}

TEST_CASE("writeNpy replaces an existing file", "[npy]") {
  TempDir dir;
  auto p = dir / "x.npy";
  writeBytes(p, std::string(1000, 'z'));
  writeNpy(p, patterned(ElemType::F64, {2}));
  Tensor back = readNpy(p);
  CHECK(back.type == ElemType::F64);
  CHECK(back.data.as<double>()[1] == -2.75 + 1e-12);
}
