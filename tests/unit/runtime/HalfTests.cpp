#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>

#include "runtime/Half.h"

using namespace texc;

namespace {
float fromBits(uint32_t b) { return std::bit_cast<float>(b); }
uint32_t bitsOf(float f) { return std::bit_cast<uint32_t>(f); }
// The next f32 above / below a positive finite value.
float up(float f) { return fromBits(bitsOf(f) + 1); }
float down(float f) { return fromBits(bitsOf(f) - 1); }
}  // namespace

TEST_CASE("f16 exact values convert both ways", "[half]") {
  struct Case {
    float value;
    uint16_t bits;
  };
  const Case cases[] = {
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
      {1.0f, 0x3c00},
      {-2.0f, 0xc000},
      {0.5f, 0x3800},
      {65504.0f, 0x7bff},
      {-65504.0f, 0xfbff},
      {0x1p-14f, 0x0400},
      {0x1p-24f, 0x0001},
      {0x3ffp-24f, 0x03ff},
      {0.333251953125f, 0x3555},
      {1.0009765625f, 0x3c01},
  };
  for (const Case& c : cases) {
    INFO("value " << c.value);
    CHECK(floatToHalf(c.value) == c.bits);
    CHECK(bitsOf(halfToFloat(c.bits)) == bitsOf(c.value));
  }
}

TEST_CASE("every f16 bit pattern survives f16 -> f32 -> f16", "[half]") {
  int nans = 0;
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    float f = halfToFloat(static_cast<uint16_t>(h));
    bool isNan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
    if (isNan) {
      ++nans;
      REQUIRE(std::isnan(f));
      REQUIRE(std::signbit(f) == ((h & 0x8000) != 0));
      // Quiet NaNs come back exactly; signalling ones are quietened but stay NaN.
      uint16_t back = floatToHalf(f);
      REQUIRE((back & 0x7c00) == 0x7c00);
      REQUIRE((back & 0x3ff) != 0);
      if (h & 0x200) REQUIRE(back == h);
    } else {
      REQUIRE(floatToHalf(f) == h);
    }
  }
  CHECK(nans == 2 * 1023);
}

TEST_CASE("f32 -> f16 rounds to nearest, ties to even, at every boundary", "[half]") {
  // Between each pair of adjacent positive finite f16 values the midpoint is exact in f32; it must
  // go to the even neighbour, and one f32 step either side to the nearer one.
  int checked = 0;
  for (uint16_t lo = 0; lo < 0x7bff; ++lo) {
    auto hi = static_cast<uint16_t>(lo + 1);
    float a = halfToFloat(lo), b = halfToFloat(hi);
    float mid = a + (b - a) / 2;
    REQUIRE(mid > a);
    REQUIRE(mid < b);
    uint16_t even = (lo & 1) ? hi : lo;
    REQUIRE(floatToHalf(mid) == even);
    REQUIRE(floatToHalf(down(mid)) == lo);
    REQUIRE(floatToHalf(up(mid)) == hi);
    REQUIRE(floatToHalf(-mid) == (even | 0x8000));
    ++checked;
  }
  CHECK(checked == 0x7bff);
}

TEST_CASE("f32 -> f16 named rounding cases", "[half]") {
  CHECK(floatToHalf(1.0f + 0x1p-11f) == 0x3c00);      // tie, down to even
  CHECK(floatToHalf(1.0f + 3 * 0x1p-11f) == 0x3c02);  // tie, up to even
  CHECK(floatToHalf(up(1.0f + 0x1p-11f)) == 0x3c01);  // just past the tie
  CHECK(floatToHalf(0x1p-25f) == 0x0000);             // half the smallest subnormal: to 0
  CHECK(floatToHalf(up(0x1p-25f)) == 0x0001);
  CHECK(floatToHalf(3 * 0x1p-25f) == 0x0002);  // subnormal tie, up to even
  CHECK(floatToHalf(0x1p-30f) == 0x0000);
  CHECK(floatToHalf(-0x1p-30f) == 0x8000);   // underflow keeps the sign
  CHECK(floatToHalf(0x7ffp-25f) == 0x0400);  // largest subnormal + half: carry to normal
  CHECK(floatToHalf(65519.0f) == 0x7bff);
  CHECK(floatToHalf(65520.0f) == 0x7c00);  // tie at the top rounds to inf
  CHECK(floatToHalf(1e10f) == 0x7c00);
  CHECK(floatToHalf(-1e10f) == 0xfc00);
  CHECK(floatToHalf(std::numeric_limits<float>::max()) == 0x7c00);
  CHECK(floatToHalf(std::numeric_limits<float>::denorm_min()) == 0x0000);
}

TEST_CASE("f16 infinities and NaNs", "[half]") {
  CHECK(floatToHalf(std::numeric_limits<float>::infinity()) == 0x7c00);
  CHECK(floatToHalf(-std::numeric_limits<float>::infinity()) == 0xfc00);
  CHECK(std::isinf(halfToFloat(0x7c00)));
  CHECK(halfToFloat(0xfc00) < 0);
  uint16_t qnan = floatToHalf(std::numeric_limits<float>::quiet_NaN());
  CHECK((qnan & 0x7e00) == 0x7e00);
  // A signalling NaN whose payload lives only in the low bits must not turn into inf.
  uint16_t snan = floatToHalf(fromBits(0x7f800001));
  CHECK((snan & 0x7c00) == 0x7c00);
  CHECK((snan & 0x3ff) != 0);
  CHECK(floatToHalf(fromBits(0xffc00000)) == 0xfe00);
  CHECK(std::isnan(halfToFloat(0x7e00)));
  CHECK(std::isnan(halfToFloat(0x7c01)));
}

TEST_CASE("bf16 exact values and round trips", "[half]") {
  CHECK(floatToBf16(1.0f) == 0x3f80);
  CHECK(floatToBf16(-2.0f) == 0xc000);
  CHECK(floatToBf16(0.0f) == 0x0000);
  CHECK(floatToBf16(-0.0f) == 0x8000);
  CHECK(bf16ToFloat(0x3f80) == 1.0f);
  CHECK(bf16ToFloat(0x4049) == 3.140625f);
  int nans = 0;
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    float f = bf16ToFloat(static_cast<uint16_t>(h));
    REQUIRE(bitsOf(f) == h << 16);
    if (std::isnan(f)) {
      ++nans;
      REQUIRE(std::isnan(bf16ToFloat(floatToBf16(f))));
    } else {
      REQUIRE(floatToBf16(f) == h);
    }
  }
  CHECK(nans == 2 * 127);
}

TEST_CASE("f32 -> bf16 rounds to nearest even and handles inf, NaN and denormals", "[half]") {
  CHECK(floatToBf16(fromBits(0x3f808000)) == 0x3f80);  // tie, down to even
  CHECK(floatToBf16(fromBits(0x3f818000)) == 0x3f82);  // tie, up to even
  CHECK(floatToBf16(fromBits(0x3f808001)) == 0x3f81);
  CHECK(floatToBf16(fromBits(0x3f807fff)) == 0x3f80);
  CHECK(floatToBf16(fromBits(0xbf818000)) == 0xbf82);
  CHECK(floatToBf16(std::numeric_limits<float>::max()) == 0x7f80);  // rounds up to inf
  CHECK(floatToBf16(fromBits(0x7f7f7fff)) == 0x7f7f);
  CHECK(floatToBf16(std::numeric_limits<float>::infinity()) == 0x7f80);
  CHECK(floatToBf16(-std::numeric_limits<float>::infinity()) == 0xff80);
  // f32 denormals: bf16 shares the exponent range, so they round like any other value.
  CHECK(floatToBf16(fromBits(0x00018000)) == 0x0002);
  CHECK(floatToBf16(fromBits(0x00008000)) == 0x0000);
  CHECK(floatToBf16(fromBits(0x00008001)) == 0x0001);
  // NaNs whose payload is only in the dropped bits stay NaN and keep their sign.
  uint16_t n = floatToBf16(fromBits(0x7f800001));
  CHECK((n & 0x7f80) == 0x7f80);
  CHECK((n & 0x7f) != 0);
  uint16_t m = floatToBf16(fromBits(0xff800001));
  CHECK((m & 0x8000) != 0);
  CHECK(std::isnan(bf16ToFloat(m)));
}

TEST_CASE("the C entry points match the C++ conversions", "[half]") {
  CHECK(texc_f32_to_f16(1.5f) == 0x3e00);
  CHECK(texc_f16_to_f32(0x3e00) == 1.5f);
  CHECK(texc_f32_to_bf16(1.5f) == 0x3fc0);
  CHECK(texc_bf16_to_f32(0x3fc0) == 1.5f);
}
