// Names for the JIT's code in Linux `perf`.
//
// `perf record` samples addresses; in JIT code they belong to no file on disk, and `perf report`
// shows them as unknown unless the process lists its JIT functions in /tmp/perf-PID.map (perf's
// own convention: one "START SIZE NAME" line per function, in hex). With the environment variable
// TEXC_PERF_MAP set (to anything but 0 or the empty string), every function the JIT links (each
// kernel, texc_k0_y, ...) gets its line, so that `perf report` and `perf top` put texc's time
// under its kernels' names (docs/cli.md, "Environment").
#pragma once

#include <string>

namespace llvm::orc {
class LLJIT;
}  // namespace llvm::orc

namespace texc {

// The map's path when TEXC_PERF_MAP asks for one (/tmp/perf-PID.map), else empty.
std::string perfMapPath();

// Makes `jit` append a line to `path` for every function it links from now on. Throws when the
// JIT links with a layer that does not show its functions (not JITLink's ObjectLinkingLayer).
void addPerfMap(llvm::orc::LLJIT& jit, const std::string& path);

}  // namespace texc
