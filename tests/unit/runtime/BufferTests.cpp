#include <catch2/catch.hpp>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <utility>

#include "runtime/Buffer.h"

using namespace texc;

TEST_CASE("element types have their sizes and names", "[buffer]") {
  CHECK(elemBytes(ElemType::F32) == 4);
  CHECK(elemBytes(ElemType::F64) == 8);
  CHECK(elemBytes(ElemType::F16) == 2);
  CHECK(elemBytes(ElemType::BF16) == 2);
  CHECK(elemName(ElemType::F32) == "f32");
  CHECK(elemName(ElemType::F64) == "f64");
  CHECK(elemName(ElemType::F16) == "f16");
  CHECK(elemName(ElemType::BF16) == "bf16");
}

TEST_CASE("buffers are 64-byte aligned, zero-filled and sized as asked", "[buffer]") {
  for (size_t size : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{1000}}) {
    INFO("size " << size);
    Buffer b(size);
    REQUIRE(b.data() != nullptr);
    CHECK(reinterpret_cast<uintptr_t>(b.data()) % 64 == 0);
    CHECK(b.size() == size);
    CHECK(b.empty() == (size == 0));
    for (size_t i = 0; i < size; ++i) REQUIRE(b.data()[i] == std::byte{0});
  }
}

TEST_CASE("large buffers are whole huge pages, 2 MiB aligned and zero-filled", "[buffer]") {
  for (size_t size : {Buffer::kHugePagesFrom - 64, Buffer::kHugePagesFrom, Buffer::kHugePagesFrom + 1, size_t{9} << 20}) {
    INFO("size " << size);
    Buffer b(size);
    REQUIRE(b.data() != nullptr);
    const auto address = reinterpret_cast<uintptr_t>(b.data());
    CHECK(address % (size >= Buffer::kHugePagesFrom ? Buffer::kHugePageBytes : Buffer::kAlignment) == 0);
    CHECK(b.size() == size);
    size_t nonzero = 0;
    for (size_t i = 0; i < size; ++i) nonzero += b.data()[i] != std::byte{0};
    CHECK(nonzero == 0);
    // The last line of the rounded allocation is writable.
    b.data()[(size + 63) / 64 * 64 - 1] = std::byte{1};
  }
  // A size near the top of size_t, which rounding up to whole pages would wrap, is refused.
  CHECK_THROWS_AS(Buffer::uninitialized(SIZE_MAX - 4096), std::bad_alloc);
}

TEST_CASE("a default buffer is empty and null", "[buffer]") {
  Buffer b;
  CHECK(b.size() == 0);
  CHECK(b.data() == nullptr);
}

TEST_CASE("buffers move their storage", "[buffer]") {
  Buffer a(16);
  a.as<float>()[3] = 2.5f;
  std::byte* p = a.data();
  Buffer b(std::move(a));
  CHECK(b.data() == p);
  CHECK(b.size() == 16);
  CHECK(b.as<float>()[3] == 2.5f);
  CHECK(a.data() == nullptr);  // NOLINT(bugprone-use-after-move): moved-from state is specified
  CHECK(a.size() == 0);

  Buffer c(8);
  c = std::move(b);
  CHECK(c.data() == p);
  CHECK(c.size() == 16);
  CHECK(b.data() == nullptr);
}

TEST_CASE("copyTensor makes an equal tensor with storage of its own", "[buffer]") {
  texc::Tensor a = texc::makeTensor(texc::ElemType::F32, {2, 3});
  float* pa = reinterpret_cast<float*>(a.data.data());
  for (int i = 0; i < 6; ++i) pa[i] = 0.5f * static_cast<float>(i) - 1.0f;
  texc::Tensor b = texc::copyTensor(a);
  CHECK(b.type == a.type);
  CHECK(b.shape == a.shape);
  REQUIRE(b.data.size() == a.data.size());
  CHECK(b.data.data() != a.data.data());
  const float* pb = reinterpret_cast<const float*>(b.data.data());
  for (int i = 0; i < 6; ++i) CHECK(pb[i] == pa[i]);
  pa[0] = 42.0f;  // the copy does not follow the original
  CHECK(pb[0] == -1.0f);
}

TEST_CASE("element counts and byte sizes of shapes", "[buffer]") {
  CHECK(numElements(std::vector<int64_t>{}) == 1);
  CHECK(numElements(std::vector<int64_t>{0}) == 0);
  CHECK(numElements(std::vector<int64_t>{1}) == 1);
  CHECK(numElements(std::vector<int64_t>{3, 4}) == 12);
  CHECK(numElements(std::vector<int64_t>{2, 0, 5}) == 0);
  CHECK(byteSize(ElemType::F64, {3, 4}) == 96);
  CHECK(byteSize(ElemType::BF16, {}) == 2);
  CHECK_THROWS_AS(numElements(std::vector<int64_t>{-1, 2}), std::length_error);
  CHECK_THROWS_AS(numElements(std::vector<int64_t>{int64_t{1} << 40, int64_t{1} << 40}),
                  std::length_error);
  CHECK_THROWS_AS(byteSize(ElemType::F64, {int64_t{1} << 62}), std::length_error);
}

TEST_CASE("makeTensor allocates a zeroed tensor of the right size", "[buffer]") {
  Tensor t = makeTensor(ElemType::F16, {2, 3});
  CHECK(t.type == ElemType::F16);
  CHECK(t.shape == std::vector<int64_t>{2, 3});
  CHECK(t.data.size() == 12);
  CHECK(numElements(t) == 6);
  CHECK(byteSize(t) == 12);
  for (int i = 0; i < 6; ++i) CHECK(t.data.as<uint16_t>()[i] == 0);

  Tensor s = makeTensor(ElemType::F64, {});
  CHECK(s.data.size() == 8);
  Tensor e = makeTensor(ElemType::F32, {4, 0});
  CHECK(e.data.size() == 0);
  CHECK(e.data.data() != nullptr);
}

TEST_CASE("an uninitialized buffer is 64-byte aligned and sized as asked, and writable to its last line", "[buffer]") {
  for (size_t size : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{1000}, size_t{1} << 22}) {
    INFO(size);
    Buffer b = Buffer::uninitialized(size);
    REQUIRE(b.data() != nullptr);
    CHECK(reinterpret_cast<std::uintptr_t>(b.data()) % Buffer::kAlignment == 0);
    CHECK(b.size() == size);
    // The whole rounded allocation is usable (vector loops may touch the last line).
    size_t rounded = size == 0 ? 64 : (size + 63) / 64 * 64;
    for (size_t i = 0; i < rounded; ++i) b.data()[i] = std::byte{0x5a};
    CHECK(b.data()[rounded - 1] == std::byte{0x5a});
  }
  CHECK_THROWS_AS(Buffer::uninitialized(SIZE_MAX), std::bad_alloc);
}
