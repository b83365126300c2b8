#include "runtime/ThreadPool.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace texc {

namespace {
// Set on pool workers and on a caller while it runs its chunk: a parallelFor issued there runs
// inline instead of waiting on threads that are busy running the outer loop.
thread_local bool tInsideParallelFor = false;

struct InsideScope {
  bool saved = tInsideParallelFor;
  InsideScope() { tInsideParallelFor = true; }
  ~InsideScope() { tInsideParallelFor = saved; }
};

// Waits up to kSpin for `ready()` without sleeping: a worker for the next job, the caller for
// the workers' chunks. A thread woken through the condition variable instead starts tens of
// microseconds late on a virtual machine, which is several percent of a kernel of a
// millisecond (conv + pool at 56 x 56 on 2 threads). Bounded, so that an idle pool sleeps.
constexpr std::chrono::microseconds kSpin{100};

template <class Ready>
bool spinUntil(Ready ready) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    if (std::chrono::steady_clock::now() >= until) return ready();
  }
}
}  // namespace

ThreadPool::ThreadPool(int numThreads) {
  if (numThreads <= 0)
    numThreads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  numThreads_ = numThreads;
  workers_.reserve(static_cast<size_t>(numThreads - 1));
  for (int i = 1; i < numThreads; ++i) workers_.emplace_back([this, i] { workerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::runChunk(int index) {
  // Chunk sizes differ by at most one; the math is unsigned so huge ranges cannot overflow.
  uint64_t k = static_cast<uint64_t>(chunks_);
  uint64_t i = static_cast<uint64_t>(index);
  uint64_t base = length_ / k, extra = length_ % k;
  uint64_t first = i * base + std::min(i, extra);
  uint64_t count = base + (i < extra ? 1 : 0);
  auto lo = static_cast<int64_t>(static_cast<uint64_t>(begin_) + first);
  auto hi = static_cast<int64_t>(static_cast<uint64_t>(begin_) + first + count);
  try {
    (*body_)(lo, hi);
  } catch (...) {
    std::lock_guard lock(mutex_);
    if (!error_) error_ = std::current_exception();
  }
}

void ThreadPool::workerLoop(int index) {
  tInsideParallelFor = true;
  uint64_t seen = 0;
  while (true) {
    spinUntil([&] { return stopping_.load(std::memory_order_relaxed) || generation_.load(std::memory_order_acquire) != seen; });
    std::unique_lock lock(mutex_);
    wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
    if (stopping_) return;
    seen = generation_;
    // A job with fewer chunks than threads leaves this worker out; it is not counted in pending_.
    if (index >= chunks_) continue;
    lock.unlock();
    runChunk(index);
    // The last chunk notifies under the lock, so that a caller between its check and its wait
    // cannot miss it.
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard done(mutex_);
      done_.notify_one();
    }
  }
}

void ThreadPool::parallelFor(int64_t begin, int64_t end, const Body& body) {
  if (end <= begin) return;
  uint64_t length = static_cast<uint64_t>(end) - static_cast<uint64_t>(begin);
  int chunks = static_cast<int>(std::min<uint64_t>(static_cast<uint64_t>(numThreads_), length));
  if (chunks <= 1 || tInsideParallelFor) {
    InsideScope inside;
    body(begin, end);
    return;
  }
  std::lock_guard call(callMutex_);
  {
    std::lock_guard lock(mutex_);
    body_ = &body;
    begin_ = begin;
    length_ = length;
    chunks_ = chunks;
    pending_ = chunks - 1;
    error_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  {
    InsideScope inside;
    runChunk(0);
  }
  std::exception_ptr error;
  spinUntil([&] { return pending_.load(std::memory_order_acquire) == 0; });
  {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return pending_ == 0; });
    body_ = nullptr;
    error = std::exchange(error_, nullptr);
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace texc

extern "C" void texc_parallel_for(void* pool, int64_t begin, int64_t end,
                                  void (*fn)(void* ctx, int64_t lo, int64_t hi), void* ctx) {
  if (end <= begin) return;
  if (!pool) {
    fn(ctx, begin, end);
    return;
  }
  static_cast<texc::ThreadPool*>(pool)->parallelFor(
      begin, end, [fn, ctx](int64_t lo, int64_t hi) { fn(ctx, lo, hi); });
}
