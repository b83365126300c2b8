// StreamStores: stores that bypass the caches. A kernel that writes a tensor larger than the
// last-level cache, each element once, gains nothing from having the written lines in cache:
// they are evicted before anyone reads them. An ordinary store even costs a read, since the
// core fetches each line before it writes into it (the read-for-ownership), so `y = f(x)` moves
// three streams through memory, x in, y in, y out. A non-temporal store writes whole lines
// straight to memory: two streams.
//
// A store becomes `stream` when all of these hold (the kernel's `# stores:` line says which
// failed):
//   * its buffer is a tensor (not a local buffer), larger than the last-level cache, or at least a
//     quarter of it when the tensors the kernel reads and writes together exceed the cache (a
//     bf16 y = f(x) at 4096 x 4096 writes 32 MiB and moves 64); f16/bf16 stores stream too, their
//     32-byte vectors filling each line in two;
//   * it sits directly in the innermost loop, marked `vector`, that runs over the buffer's whole
//     last dimension with unit stride, and a row of that dimension is a multiple of 64 bytes, so
//     that every vector store is aligned and the stores fill whole lines;
//   * every loop around it indexes the buffer (each element is written once);
//   * nothing reads the buffer afterwards in the kernel, except the same row of it before the
//     store (softmax's last pass reads its row of y and overwrites it).
// Only the CPU backend reads the mark (CodeGenLLVM: !nontemporal, and an sfence at the end of
// each call).
//
// A streaming store whose value calls a transcendental function (exp, tanh, ...) is limited by
// the arithmetic, not by memory, and the core's out-of-order window, full of that arithmetic,
// holds too few loads to keep memory busy. Its loads of tensors of at least a quarter of the
// last-level cache (contiguous in the vector loop) are then prefetched kPrefetchBytes ahead, so that memory works
// in parallel with the arithmetic. Likewise a pass that re-reads from cache a row an earlier pass
// of the kernel read (softmax's exp after its max, layer norm's variance and normalising passes)
// leaves memory idle unless it asks for the next row meanwhile, which it does, compute-bound or
// not. On a CPU whose prefetches fill L1 (AMD before Zen 4) only the row's last pass does: an
// earlier pass's request would push out of L1 the row the later passes still read (layer norm
// 4096^2 on Zen 3, 1 thread: 6.06 ms with all three passes asking, 5.09 with the last two, 4.91
// with the last only). The `# stores:` line lists the prefetched tensors, the loops how far ahead.
#pragma once

#include <cstdint>

#include "compiler/loops/LoopIR.h"

namespace texc::loops {

// How far ahead of the vector loop the prefetched loads ask for their lines: 64 lines, about
// what one core keeps in flight to memory, for 4- and 8-byte elements; 16 lines for f16/bf16,
// whose loops spend twice the arithmetic per byte. Measured with GELU 2^24 on Zen 4 (1 thread):
// f32 9.4 ms at 4096 B, 9.9 at 1024; bf16 13.4 ms at 1024 B, 14.4 at 2048.
inline constexpr int64_t kPrefetchBytes = 4096;
inline constexpr int64_t kPrefetchBytesLowPrecision = 1024;

// Marks the streaming stores of every kernel of `p` and sets each kernel's `streaming` note for
// the buffers larger than `lastLevelCacheBytes` it writes; `prefetchFillsL1` as MachineInfo's
// (only a row's last pass asks for the next row). Returns the number of stores marked.
int markStreamingStores(LoopProgram& p, int64_t lastLevelCacheBytes, bool prefetchFillsL1);

}  // namespace texc::loops
