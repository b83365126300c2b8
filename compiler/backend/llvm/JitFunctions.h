// The functions the JIT links, with their addresses: for `texc run --profile` (Profile.h) and for
// Linux `perf`.
//
// `perf record` samples addresses; in JIT code they belong to no file on disk, and `perf report`
// shows them as unknown unless the process lists its JIT functions in /tmp/perf-PID.map (perf's
// own convention: one "START SIZE NAME" line per function, in hex). With the environment variable
// TEXC_PERF_MAP set (to anything but 0 or the empty string), every function the JIT links (each
// kernel, texc_k0_y, ...) gets its line there too (docs/cli.md, "Environment").
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace llvm::orc {
class LLJIT;
}  // namespace llvm::orc

namespace texc {

// One row of a function's line table: the code from `start` on (up to the next row) was made
// for line `line` of the loop IR's listing (0: no line).
struct LineRow {
  uintptr_t start = 0;
  int line = 0;
};

struct JitFunction {
  std::string name;
  uintptr_t start = 0;
  size_t size = 0;  // bytes of code
  // Its line table, by address, when the code carried one (CodeGenOptions::stmtLines): the JIT
  // keeps the object's DWARF sections and reads them once the addresses are final.
  std::vector<LineRow> lines;
};

// The list a JIT fills as it links (from its compile threads, hence the lock).
class JitFunctionList {
 public:
  void add(std::vector<JitFunction> linked);
  std::vector<JitFunction> all() const;

 private:
  mutable std::mutex mutex_;
  std::vector<JitFunction> functions_;
};

// The perf map's path when TEXC_PERF_MAP asks for one (/tmp/perf-PID.map), else empty.
std::string perfMapPath();

// Makes `jit` add every function it links from now on to `list`, and append its line to
// `perfMap` unless that is empty. Returns false, doing nothing, when the JIT links with a layer
// that does not show its functions (not JITLink's ObjectLinkingLayer).
bool listJitFunctions(llvm::orc::LLJIT& jit, JitFunctionList& list, const std::string& perfMap);

}  // namespace texc
