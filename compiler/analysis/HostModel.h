// The host CPU as a roofline model: copy bandwidth and FMA peak measured by texc itself (one
// thread), cached so later runs do not measure again, and measured again once the cache is a
// day old (a figure measured while the machine was busy must not stay forever). A run that
// measures more bandwidth than the cache holds raises it. `--hw` may give the figures instead.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "compiler/analysis/Cost.h"

namespace texc {

// What the cache file ($XDG_CACHE_HOME/texc/host-model, or ~/.cache/texc/host-model) holds.
struct HostModelRecord {
  double bandwidthGBs = 0;    // bytes read + written per second, 1 thread
  double peakGflops = 0;      // fp32, 1 thread
  int64_t measuredAt = 0;     // Unix seconds of the full measurement: the cache's age
  int64_t bandwidthAt = 0;    // Unix seconds of the bandwidth figure (later when a run raised it)
  std::string bandwidthHow;   // how the bandwidth figure was measured
  std::string peakHow;        // how the peak was measured
};

// How a full measurement measures each figure (also written to the cache).
inline constexpr const char* kHostCopyMethod = "1 thread, best of 5 copies of 64 MiB";
inline constexpr const char* kHostPeakMethod = "1 thread, best of 3 runs of 12 vector FMA chains";
// The cache is measured again when older than this.
inline constexpr int64_t kHostModelMaxAgeSeconds = 24 * 60 * 60;

// The cache's text: a header line naming the format, then one `key value` line per field.
std::string formatHostModelRecord(const HostModelRecord& r);
// The record in `text`, or nothing when it is not this format (an older cache, a corrupt or
// truncated file, a figure that is not a positive number).
std::optional<HostModelRecord> parseHostModelRecord(const std::string& text);
// Whether the record must be measured again at Unix time `now`: older than a day, or measured
// in the future (the clock was changed).
bool hostModelStale(const HostModelRecord& r, int64_t now);
// `unixSeconds` as "2026-12-03 14:05 UTC".
std::string formatUtc(int64_t unixSeconds);
// The model's `source` line: when and how each figure was measured, and where it is cached.
std::string describeHostModel(const HostModelRecord& r, bool justNow, const std::string& cachePath);

// Reads the cache, or measures (about 0.5 s) and writes it when the cache is missing, of another
// format, corrupt or stale at `now`. `remeasure` ignores the cache.
HardwareModel hostHardwareModel(bool remeasure = false);
HardwareModel hostHardwareModelAt(int64_t now, bool remeasure = false);

// A run measured `gbs` of bandwidth on 1 thread (`how` says how): when that is more than the
// cache holds, the cache's bandwidth becomes `gbs`. Returns whether the cache changed.
bool recordHostBandwidth(double gbs, const std::string& how);

// A `--hw` value: host, h100, h200, or figures `bw=GB/s,peak=GFLOP/s` with an optional
// `,launch=US` (launch overhead per kernel, microseconds). Returns "" when valid, else why not.
std::string checkHardwareSpec(const std::string& text);
// The model for a valid `--hw` value (host measures or reads the cache).
HardwareModel hardwareModelFor(const std::string& text);

}  // namespace texc
