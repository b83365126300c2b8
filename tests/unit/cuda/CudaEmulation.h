// CudaEmulation.h: just enough of CUDA for texc's generated kernels to compile as C++ with the
// host compiler and run on the CPU (docs/cuda.md, "Testing without a GPU").
//
// A launch runs the blocks one after another. The threads of a block are fibers (ucontext) on
// the calling thread, one per CUDA thread, each with its own stack: `__syncthreads()` switches
// back to the scheduler, which runs every other live fiber of the block up to the same barrier
// before resuming any of them, so the barrier is real. `__shared__` variables (function statics
// here) are shared by the block's threads. A thread that returns takes no further part, as an
// exited CUDA thread no longer takes part in bar.sync. Warp shuffles exchange values through a
// per-block table around one barrier, so every thread of the block must call them together
// (texc's kernels do: their shuffles sit in block-uniform code). Fibers rather than OS threads:
// the same semantics at a fraction of the cost of waking 64-256 threads at every barrier.
//
// Adversarial launches (texc_emu_set_adversarial): the blocks run last to first, the threads of
// each barrier phase last to first, and every `__shared__` variable is filled with 0xFF bytes (a
// NaN in every float type) before each block, where an ordinary launch zeroes it. A kernel whose result changes under them depends
// on the order of its blocks or threads, or reads shared memory it did not write.
#pragma once

#include <math.h>
#include <ucontext.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <vector>

#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(...)
// Shared variables go to one named section, so that an adversarial launch can poison them all:
// the linker brackets the section with __start_/__stop_ symbols.
#define __shared__ static __attribute__((section("texc_shared")))
#define __align__(n) __attribute__((aligned(n)))
extern "C" char __start_texc_shared[] __attribute__((weak, visibility("hidden")));
extern "C" char __stop_texc_shared[] __attribute__((weak, visibility("hidden")));

struct float4 {
  float x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
template <typename T>
T __ldg(const T* p) {
  return *p;
}

struct texc_emu_dim3 {
  unsigned x = 0, y = 1, z = 1;
};

namespace texc_emu {
inline texc_emu_dim3 threadIdx_;
inline texc_emu_dim3 blockIdx_;
inline texc_emu_dim3 blockDim_;
inline texc_emu_dim3 gridDim_;

constexpr unsigned kMaxThreads = 1024;
constexpr size_t kStackBytes = 256 * 1024;

struct Fiber {
  ucontext_t context;
  std::vector<char> stack;
  bool done = false;
  unsigned parity = 0;  // which exchange table this thread's next shuffle uses
};

inline ucontext_t scheduler_;
inline std::vector<Fiber> fibers_;
inline bool inBlock_ = false;
inline void (*kernel_)(void* const*) = nullptr;
inline void* const* args_ = nullptr;
inline uint64_t slots_[2][kMaxThreads];
inline bool adversarial_ = false;

// The position of the n-th block or thread to run out of `count`.
inline unsigned nth(unsigned n, unsigned count) { return adversarial_ ? count - 1 - n : n; }

// Real shared memory starts undefined in every block: here it starts as zeros, or as NaN in an
// adversarial launch, so that a read of shared memory no thread wrote changes the result.
inline void resetShared() {
  if (__start_texc_shared && __stop_texc_shared > __start_texc_shared)
    std::memset(__start_texc_shared, adversarial_ ? 0xFF : 0, static_cast<size_t>(__stop_texc_shared - __start_texc_shared));
}

inline void fiberMain() {
  kernel_(args_);
  fibers_[threadIdx_.x].done = true;
  // Returning ends the fiber; uc_link resumes the scheduler.
}

inline void barrier() {
  if (!inBlock_) {
    std::fprintf(stderr, "CudaEmulation: __syncthreads or a shuffle in a kernel launched as not cooperative\n");
    std::abort();
  }
  swapcontext(&fibers_[threadIdx_.x].context, &scheduler_);
}

// One barrier between the writes and the reads; the two tables alternate, so a fast thread's next
// write cannot meet a slow thread's read (both sides of the next barrier separate them).
template <typename T>
T exchange(T v, unsigned src) {
  static_assert(sizeof(T) <= sizeof(uint64_t));
  unsigned me = threadIdx_.x;
  unsigned p = fibers_[me].parity;
  fibers_[me].parity ^= 1u;
  std::memcpy(&slots_[p][me], &v, sizeof(T));
  barrier();
  T r;
  std::memcpy(&r, &slots_[p][src < blockDim_.x ? src : me], sizeof(T));
  return r;
}
}  // namespace texc_emu

#define threadIdx texc_emu::threadIdx_
#define blockIdx texc_emu::blockIdx_
#define blockDim texc_emu::blockDim_
#define gridDim texc_emu::gridDim_

inline void __syncthreads() { texc_emu::barrier(); }

// cp.async (texc's texc_cp_async, texc_cp_async16, texc_cp_async_commit, texc_cp_async_wait<N>): each thread's
// copies are held back until a wait that needs them, as the hardware may hold them: a commit
// closes the thread's open group, and wait<N> performs every committed group but the N most
// recent. A kernel reading a staged buffer before its wait and barrier reads what was there
// before (zeros, or NaN in an adversarial launch) and fails its test.
namespace texc_emu {
struct PendingCopy {
  void* to;
  const void* from;  // null: fill with zeros
  size_t bytes;
};
inline std::vector<PendingCopy> openCopies_[kMaxThreads];
inline std::deque<std::vector<PendingCopy>> committedCopies_[kMaxThreads];
}  // namespace texc_emu
template <typename T>
void texc_cp_async(T* smem, const T* gmem, bool valid) {
  texc_emu::openCopies_[texc_emu::threadIdx_.x].push_back({smem, valid ? gmem : nullptr, sizeof(T)});
}
inline void texc_cp_async16(void* smem, const void* gmem, bool valid) {
  // The hardware faults (misaligned address) on a 16-byte copy whose ends are not 16-byte aligned.
  if (reinterpret_cast<uintptr_t>(smem) % 16 != 0 || (valid && reinterpret_cast<uintptr_t>(gmem) % 16 != 0)) {
    std::fprintf(stderr, "texc emulation: a 16-byte cp.async between misaligned addresses (shared %p, global %p)\n", smem, gmem);
    std::abort();
  }
  texc_emu::openCopies_[texc_emu::threadIdx_.x].push_back({smem, valid ? gmem : nullptr, 16});
}
inline void texc_cp_async_commit() {
  const unsigned t = texc_emu::threadIdx_.x;
  texc_emu::committedCopies_[t].push_back(std::move(texc_emu::openCopies_[t]));
  texc_emu::openCopies_[t].clear();
}
template <int N>
void texc_cp_async_wait() {
  std::deque<std::vector<texc_emu::PendingCopy>>& groups = texc_emu::committedCopies_[texc_emu::threadIdx_.x];
  while (groups.size() > static_cast<size_t>(N)) {
    for (const texc_emu::PendingCopy& c : groups.front()) {
      if (c.from) std::memcpy(c.to, c.from, c.bytes);
      else std::memset(c.to, 0, c.bytes);
    }
    groups.pop_front();
  }
}

// The bit casts texc's CUDA C spells infinities and NaNs with.
inline float __uint_as_float(unsigned x) {
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}
inline double __longlong_as_double(long long x) {
  double d;
  std::memcpy(&d, &x, sizeof d);
  return d;
}

template <typename T>
T __shfl_xor_sync(unsigned, T v, int laneMask) {
  unsigned me = threadIdx.x;
  return texc_emu::exchange(v, (me & ~31u) | ((me & 31u) ^ static_cast<unsigned>(laneMask)));
}

template <typename T>
T __shfl_down_sync(unsigned, T v, int delta) {
  unsigned me = threadIdx.x;
  return texc_emu::exchange(v, (me & 31u) + static_cast<unsigned>(delta) < 32 ? me + delta : me);
}

// Tensor cores: d += a b on one mma.m16n8k16 fragment per warp (row.col, f32 accumulators), with
// the PTX ISA's fragment layout: lane l = 4g + t holds A(g, 2t..2t+1) in a0, A(g + 8, ..) in a1,
// A(g, 2t+8..) in a2, A(g + 8, 2t+8..) in a3, B(2t..2t+1, g) in b0, B(2t+8.., g) in b1, each
// pair low half first, and D(g, 2t..2t+1), D(g + 8, 2t..2t+1) in d. Every thread of the block
// calls it together (as with the shuffles): the fragments go through a table around a barrier,
// then each lane computes its four results from its warp's, summing k in order in f32.
namespace texc_emu {
inline uint32_t mmaTable_[kMaxThreads][6];
inline float half16(uint32_t h, bool bf16) {
  if (bf16) return __uint_as_float(h << 16);
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  float v = e == 0 ? ldexpf(static_cast<float>(m), -24)
            : e == 31 ? (m ? __uint_as_float(0x7fffffffu) : __uint_as_float(0x7f800000u))
                      : ldexpf(static_cast<float>(m | 0x400u), static_cast<int>(e) - 25);
  return (h >> 15) ? -v : v;
}
// One warp's mma: every lane publishes its fragment registers, then computes its four results
// D(g, 2t..2t+1), D(g + 8, 2t..2t+1) from the warp's, `a(lane-table row, r, k)` and
// `b(table row, k, n)` reading A and B elements, summing k < `depth` in order in f32.
template <class A, class B>
void warpMma(float* d, const uint32_t (&frag)[6], unsigned depth, A a, B b) {
  unsigned me = threadIdx_.x, warp = me & ~31u;
  std::memcpy(mmaTable_[me], frag, sizeof frag);
  barrier();
  unsigned g = (me & 31u) / 4, t = (me & 31u) % 4;
  for (unsigned e = 0; e < 4; ++e) {
    unsigned r = g + 8 * (e / 2), n = 2 * t + e % 2;
    float s = d[e];
    for (unsigned k = 0; k < depth; ++k) s += a(mmaTable_ + warp, r, k) * b(mmaTable_ + warp, k, n);
    d[e] = s;
  }
  barrier();  // every lane has read the table before the next call writes it
}
using WarpTable = uint32_t (*)[6];
inline void mma(float* d, const uint32_t (&frag)[6], bool bf16) {
  warpMma(
      d, frag, 16,
      [bf16](WarpTable w, unsigned r, unsigned k) {
        uint32_t x = w[(r % 8) * 4 + (k % 8) / 2][(r >= 8 ? 1 : 0) + (k >= 8 ? 2 : 0)];
        return half16(k % 2 ? x >> 16 : x & 0xffffu, bf16);
      },
      [bf16](WarpTable w, unsigned k, unsigned n) {
        uint32_t x = w[n * 4 + (k % 8) / 2][4 + (k >= 8 ? 1 : 0)];
        return half16(k % 2 ? x >> 16 : x & 0xffffu, bf16);
      });
}
// mma.m16n8k8 with TF32 operands (row.col, f32 accumulators): lane l = 4g + t holds A(g, t) in
// a0, A(g + 8, t) in a1, A(g, t + 4) in a2, A(g + 8, t + 4) in a3, B(t, g) in b0, B(t + 4, g)
// in b1 (each the f32 bits of a TF32 value), and D as for m16n8k16; k summed in order in f32
// (the products of TF32 values are exact in f32).
inline void mmaTf32(float* d, const uint32_t (&frag)[6]) {
  warpMma(
      d, frag, 8,
      [](WarpTable w, unsigned r, unsigned k) { return __uint_as_float(w[(r % 8) * 4 + k % 4][(r >= 8 ? 1 : 0) + (k >= 4 ? 2 : 0)]); },
      [](WarpTable w, unsigned k, unsigned n) { return __uint_as_float(w[n * 4 + k % 4][4 + (k >= 4 ? 1 : 0)]); });
}
}  // namespace texc_emu

// cvt.rna.tf32.f32: to nearest with ties away from zero, 13 low bits dropped; infinities and
// NaN unchanged.
inline unsigned texc_tf32(float x) {
  unsigned u;
  std::memcpy(&u, &x, sizeof u);
  return (u & 0x7f800000u) == 0x7f800000u ? u : (u + 0x1000u) & 0xffffe000u;
}
inline void texc_mma_tf32(float* d, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
  texc_emu::mmaTf32(d, {a0, a1, a2, a3, b0, b1});
}

inline void texc_mma_bf16(float* d, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
  texc_emu::mma(d, {a0, a1, a2, a3, b0, b1}, true);
}
inline void texc_mma_f16(float* d, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
  texc_emu::mma(d, {a0, a1, a2, a3, b0, b1}, false);
}

// Later launches are adversarial (see the top of the file) when `on`.
extern "C" void texc_emu_set_adversarial(bool on) { texc_emu::adversarial_ = on; }

// Runs `kernel(args)` over `blocks` blocks of `threads` threads. A kernel whose threads never
// meet (no __syncthreads, no shuffles: `cooperative` false) runs its threads one after another
// without fibers.
extern "C" void texc_emu_launch(void (*kernel)(void* const*), void* const* args, unsigned blocks, unsigned threads, bool cooperative) {
  using namespace texc_emu;
  if (threads == 0 || threads > kMaxThreads) std::abort();
  gridDim_.x = blocks;
  blockDim_.x = threads;
  if (!cooperative) {
    for (unsigned b = 0; b < blocks; ++b) {
      resetShared();
      for (unsigned t = 0; t < threads; ++t) {
        blockIdx_.x = nth(b, blocks);
        threadIdx_.x = nth(t, threads);
        kernel(args);
      }
    }
    return;
  }
  kernel_ = kernel;
  args_ = args;
  if (fibers_.size() < threads) fibers_.resize(threads);
  inBlock_ = true;
  for (unsigned b = 0; b < blocks; ++b) {
    blockIdx_.x = nth(b, blocks);
    resetShared();
    for (unsigned t = 0; t < threads; ++t) {  // a copy never waited for lands nowhere
      openCopies_[t].clear();
      committedCopies_[t].clear();
    }
    for (unsigned t = 0; t < threads; ++t) {
      Fiber& f = fibers_[t];
      if (f.stack.empty()) f.stack.resize(kStackBytes);
      getcontext(&f.context);
      f.context.uc_stack.ss_sp = f.stack.data();
      f.context.uc_stack.ss_size = f.stack.size();
      f.context.uc_link = &scheduler_;
      makecontext(&f.context, fiberMain, 0);
      f.done = false;
      f.parity = 0;
    }
    // One round per barrier phase: every live thread runs to its next barrier (or its end).
    for (bool live = true; live;) {
      live = false;
      for (unsigned n = 0; n < threads; ++n) {
        unsigned t = nth(n, threads);
        if (fibers_[t].done) continue;
        threadIdx_.x = t;
        swapcontext(&scheduler_, &fibers_[t].context);
        live = live || !fibers_[t].done;
      }
    }
  }
  inBlock_ = false;
}
