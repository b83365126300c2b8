#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <thread>

#include "runtime/Timer.h"

using namespace texc;

TEST_CASE("median of odd, even, single and empty samples", "[timer]") {
  CHECK(median({3.0, 1.0, 2.0}) == 2.0);
  CHECK(median({5.0, 1.0, 4.0, 2.0}) == 3.0);
  CHECK(median({7.5}) == 7.5);
  CHECK(median({2.0, 2.0, 9.0, 2.0, 1.0}) == 2.0);
  CHECK(median({10.0, -10.0}) == 0.0);
  CHECK(std::isnan(median({})));
}

TEST_CASE("the stopwatch measures elapsed time and resets", "[timer]") {
  Stopwatch sw;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  double s = sw.seconds();
  CHECK(s >= 0.019);
  CHECK(s < 10.0);
  CHECK(sw.milliseconds() >= 19.0);
  sw.reset();
  CHECK(sw.seconds() < s);
}
