// A small fixed pool of threads for data-parallel loops. Kernels split their outermost loop
// with parallelFor; JIT-compiled code reaches the same pool through texc_parallel_for.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace texc {

class ThreadPool {
 public:
  using Body = std::function<void(int64_t lo, int64_t hi)>;

  // `numThreads` counts the calling thread, so N starts N - 1 workers; 0 (or less) means one per
  // hardware thread. With N = 1 no thread is started and every loop runs inline.
  explicit ThreadPool(int numThreads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int numThreads() const { return numThreads_; }

  // Calls body(lo, hi) on contiguous, disjoint chunks that together cover [begin, end), at most
  // one chunk per thread, the calling thread taking the first; returns when all are done. An
  // exception thrown by a chunk is rethrown here (the first one, after every chunk finished).
  // A call made from inside a body runs inline, so nesting cannot deadlock; calls from several
  // outside threads are served one at a time.
  void parallelFor(int64_t begin, int64_t end, const Body& body);

 private:
  void workerLoop(int index);
  void runChunk(int index);

  int numThreads_ = 1;
  std::vector<std::thread> workers_;
  std::mutex callMutex_;  // serializes parallelFor calls from different threads
  std::mutex mutex_;      // guards everything below
  std::condition_variable wake_;
  std::condition_variable done_;
  // Bumped once per parallelFor (under mutex_) so workers see each job exactly once; atomic so
  // that a worker may watch it without the lock while it spins before sleeping.
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<int> pending_{0};  // worker chunks of the current job not yet finished
  const Body* body_ = nullptr;
  int64_t begin_ = 0;
  uint64_t length_ = 0;
  int chunks_ = 0;
  std::exception_ptr error_;
};

}  // namespace texc

// For JIT-compiled code: runs fn(ctx, lo, hi) over [begin, end) on `pool` (a texc::ThreadPool*),
// or inline in one call when `pool` is null.
extern "C" void texc_parallel_for(void* pool, int64_t begin, int64_t end,
                                  void (*fn)(void* ctx, int64_t lo, int64_t hi), void* ctx);
