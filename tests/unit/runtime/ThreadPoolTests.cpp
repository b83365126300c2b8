#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/ThreadPool.h"

using namespace texc;

namespace {

struct Chunk {
  int64_t lo, hi;
  std::thread::id thread;
};

// Runs one parallelFor and checks that its chunks tile [begin, end) exactly: contiguous,
// disjoint, non-empty, at most one per thread, each index visited once.
void checkCoverage(ThreadPool& pool, int64_t begin, int64_t end) {
  INFO("threads " << pool.numThreads() << ", range [" << begin << ", " << end << ")");
  int64_t n = std::max<int64_t>(0, end - begin);
  std::vector<std::atomic<int>> visits(static_cast<size_t>(n));
  std::mutex m;
  std::vector<Chunk> chunks;
  pool.parallelFor(begin, end, [&](int64_t lo, int64_t hi) {
    {
      std::lock_guard lock(m);
      chunks.push_back({lo, hi, std::this_thread::get_id()});
    }
    for (int64_t i = lo; i < hi; ++i) visits[static_cast<size_t>(i - begin)]++;
  });
  for (int64_t i = 0; i < n; ++i) REQUIRE(visits[static_cast<size_t>(i)] == 1);
  if (n == 0) {
    CHECK(chunks.empty());
    return;
  }
  std::sort(chunks.begin(), chunks.end(),
            [](const Chunk& a, const Chunk& b) { return a.lo < b.lo; });
  CHECK(chunks.size() == static_cast<size_t>(std::min<int64_t>(pool.numThreads(), n)));
  CHECK(chunks.front().lo == begin);
  CHECK(chunks.back().hi == end);
  std::set<std::thread::id> threads;
  for (size_t i = 0; i < chunks.size(); ++i) {
    CHECK(chunks[i].lo < chunks[i].hi);
    if (i) CHECK(chunks[i].lo == chunks[i - 1].hi);
    threads.insert(chunks[i].thread);
  }
  CHECK(threads.size() == chunks.size());
  // The calling thread takes part (the first chunk is its own).
  CHECK(chunks.front().thread == std::this_thread::get_id());
}

}  // namespace

TEST_CASE("parallelFor covers every index exactly once", "[threadpool]") {
  const std::vector<std::pair<int64_t, int64_t>> ranges = {
      {0, 0}, {5, 5}, {3, 2}, {0, 1}, {0, 2}, {0, 3}, {0, 7}, {-5, 100}, {0, 1000}, {10, 10007}};
  for (int threads : {1, 2, 3, 4, 8}) {
    ThreadPool pool(threads);
    REQUIRE(pool.numThreads() == threads);
    for (auto [begin, end] : ranges) checkCoverage(pool, begin, end);
  }
}

TEST_CASE("a one-thread pool runs inline on the caller", "[threadpool]") {
  ThreadPool pool(1);
  int calls = 0;
  const std::thread::id caller = std::this_thread::get_id();
  pool.parallelFor(0, 100, [&](int64_t lo, int64_t hi) {
    ++calls;
    CHECK(lo == 0);
    CHECK(hi == 100);
    CHECK(std::this_thread::get_id() == caller);
  });
  CHECK(calls == 1);
}

TEST_CASE("threads persist across calls", "[threadpool]") {
  ThreadPool pool(4);
  std::mutex m;
  std::set<std::thread::id> seen;
  std::atomic<int64_t> total{0};
  for (int rep = 0; rep < 500; ++rep) {
    pool.parallelFor(0, 64, [&](int64_t lo, int64_t hi) {
      {
        std::lock_guard lock(m);
        seen.insert(std::this_thread::get_id());
      }
      total += hi - lo;
    });
  }
  CHECK(total == 500 * 64);
  CHECK(seen.size() == 4);
}

TEST_CASE("workers find every job whether it comes while they spin or after they sleep", "[threadpool]") {
  // A worker waits for the next job spinning for about 100 microseconds, then on the condition
  // variable: jobs back to back reach the spinning workers, jobs after a pause the sleeping
  // ones, and a pool destroyed right after a job stops its spinning workers.
  ThreadPool pool(3);
  for (int rep = 0; rep < 2000; ++rep) checkCoverage(pool, 0, 3 + rep % 5);
  for (int rep = 0; rep < 5; ++rep) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    checkCoverage(pool, 0, 30);
  }
  for (int rep = 0; rep < 20; ++rep) {
    ThreadPool brief(2);
    checkCoverage(brief, 0, 10);
  }
}

TEST_CASE("a zero thread count means one per hardware thread", "[threadpool]") {
  ThreadPool pool(0);
  CHECK(pool.numThreads() == static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  checkCoverage(pool, 0, 333);
}

TEST_CASE("exceptions from a chunk reach the caller and the pool stays usable", "[threadpool]") {
  ThreadPool pool(4);
  CHECK_THROWS_WITH(pool.parallelFor(0, 100,
                                     [](int64_t lo, int64_t) {
                                       if (lo > 0) throw std::runtime_error("chunk failed");
                                     }),
                    "chunk failed");
  checkCoverage(pool, 0, 100);
}

TEST_CASE("a nested parallelFor runs inline", "[threadpool]") {
  ThreadPool pool(4);
  std::vector<std::atomic<int>> visits(40 * 30);
  // Catch assertions are not thread-safe, so workers only count; the checks run afterwards.
  std::atomic<int> innerCalls{0}, splitInner{0};
  pool.parallelFor(0, 40, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      pool.parallelFor(0, 30, [&](int64_t jlo, int64_t jhi) {
        ++innerCalls;
        if (jlo != 0 || jhi != 30) ++splitInner;
        for (int64_t j = jlo; j < jhi; ++j) visits[static_cast<size_t>(i * 30 + j)]++;
      });
    }
  });
  CHECK(innerCalls == 40);
  CHECK(splitInner == 0);
  for (auto& v : visits) REQUIRE(v == 1);
}

TEST_CASE("calls from several threads are served one at a time", "[threadpool]") {
  ThreadPool pool(3);
  std::atomic<int64_t> sum{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      for (int rep = 0; rep < 50; ++rep)
        pool.parallelFor(0, 1000, [&](int64_t lo, int64_t hi) {
          int64_t s = 0;
          for (int64_t i = lo; i < hi; ++i) s += i;
          sum += s;
        });
    });
  for (auto& t : callers) t.join();
  CHECK(sum == int64_t{4} * 50 * (999 * 1000 / 2));
}

namespace {
struct CtxSum {
  std::atomic<int64_t> sum{0};
  std::atomic<int> calls{0};
};
void addRange(void* ctx, int64_t lo, int64_t hi) {
  auto* c = static_cast<CtxSum*>(ctx);
  int64_t s = 0;
  for (int64_t i = lo; i < hi; ++i) s += i * i;
  c->sum += s;
  c->calls++;
}
}  // namespace

TEST_CASE("the C entry point runs on a pool or inline", "[threadpool]") {
  const int64_t expected = 99 * 100 * 199 / 6;  // sum of squares 0..99
  ThreadPool pool(4);
  CtxSum onPool;
  texc_parallel_for(&pool, 0, 100, &addRange, &onPool);
  CHECK(onPool.sum == expected);
  CHECK(onPool.calls == 4);

  CtxSum inlineRun;
  texc_parallel_for(nullptr, 0, 100, &addRange, &inlineRun);
  CHECK(inlineRun.sum == expected);
  CHECK(inlineRun.calls == 1);

  CtxSum empty;
  texc_parallel_for(&pool, 7, 7, &addRange, &empty);
  texc_parallel_for(nullptr, 9, 3, &addRange, &empty);
  CHECK(empty.calls == 0);
}
