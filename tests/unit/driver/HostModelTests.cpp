// The host model behind explain/compare (compiler/analysis/HostModel.h): its cache format, the
// one-day staleness rule, a run raising the bandwidth, the printed source line, and --hw with
// figures.
#include <catch2/catch.hpp>
#include <ctime>

#include "compiler/analysis/HostModel.h"
#include "tests/unit/driver/DriverTestUtil.h"

namespace texc::drivertest {
namespace {

HostModelRecord sampleRecord(int64_t at) {
  HostModelRecord r;
  r.bandwidthGBs = 7.2;
  r.peakGflops = 103.7;
  r.measuredAt = r.bandwidthAt = at;
  r.bandwidthHow = kHostCopyMethod;
  r.peakHow = kHostPeakMethod;
  return r;
}

int64_t now() { return static_cast<int64_t>(std::time(nullptr)); }

// Points the cache at a folder of the sandbox for the test's lifetime (texc children inherit it).
struct CacheHome {
  fs::path dir;
  explicit CacheHome(const Sandbox& box) : dir(box.in() / "cache") { ::setenv("XDG_CACHE_HOME", dir.c_str(), 1); }
  ~CacheHome() { ::unsetenv("XDG_CACHE_HOME"); }
  fs::path file() const { return dir / "texc" / "host-model"; }
  void write(const std::string& text) const {
    fs::create_directories(file().parent_path());
    writeBytes(file(), text);
  }
};

std::vector<std::string> explainGelu(const std::string& hw) {
  return {"explain", (kExamples / "gelu.tex").string(), "-D", "N=8", "-D", "D=16", "--hw", hw};
}

TEST_CASE("host model: the cache text round-trips, other formats and damage are rejected", "[driver][hostmodel]") {
  HostModelRecord r = sampleRecord(1796300000);
  r.bandwidthAt = 1796303600;
  r.bandwidthHow = "1 thread, achieved by texc compare (fused variant of gelu.tex, 256.0 MiB moved)";
  std::string text = formatHostModelRecord(r);
  CHECK(text.rfind("texc host model, format 2\n", 0) == 0);
  std::optional<HostModelRecord> back = parseHostModelRecord(text);
  REQUIRE(back);
  CHECK(back->bandwidthGBs == r.bandwidthGBs);
  CHECK(back->peakGflops == r.peakGflops);
  CHECK(back->measuredAt == r.measuredAt);
  CHECK(back->bandwidthAt == r.bandwidthAt);
  CHECK(back->bandwidthHow == r.bandwidthHow);
  CHECK(back->peakHow == r.peakHow);

  std::string good = formatHostModelRecord(sampleRecord(1796300000));
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  for (const std::string& bad : {
           std::string(""),
           std::string("7.2 103.7\n"),                                   // the first format: two numbers
           good.substr(0, good.size() / 2),                              // truncated
           replaced("bandwidth_gbs 7.2", "bandwidth_gbs fast"),          // not a number
           replaced("bandwidth_gbs 7.2", "bandwidth_gbs -7.2"),          // not positive
           replaced("peak_gflops 103.7", "peak_gflops 103.7x"),          // trailing text
           replaced("measured_at 1796300000", "measured_at soon"),       // not an integer
           replaced("texc host model, format 2", "texc host model, format 9"),
           good + "peak_gflops 1\n",                                     // a field twice
           good + "colour blue\n",                                       // an unknown field
           std::string("\x7f" "ELF\x02\x01\x01", 7),                     // not text at all
       }) {
    INFO(bad);
    CHECK_FALSE(parseHostModelRecord(bad));
  }
}

TEST_CASE("host model: a cache older than a day, or from the future, is stale", "[driver][hostmodel]") {
  const int64_t t = 1796300000;
  HostModelRecord r = sampleRecord(t);
  CHECK_FALSE(hostModelStale(r, t));
  CHECK_FALSE(hostModelStale(r, t + 3600));
  CHECK_FALSE(hostModelStale(r, t + kHostModelMaxAgeSeconds));
  CHECK(hostModelStale(r, t + kHostModelMaxAgeSeconds + 1));
  CHECK(hostModelStale(r, t + 30 * 24 * 3600));
  CHECK_FALSE(hostModelStale(r, t - 60));  // a little clock skew
  CHECK(hostModelStale(r, t - 3600));       // measured an hour in the future: the clock changed
  // A run that raised the bandwidth since does not make the peak any younger.
  r.bandwidthAt = t + 2 * kHostModelMaxAgeSeconds;
  CHECK(hostModelStale(r, t + 2 * kHostModelMaxAgeSeconds));
}

TEST_CASE("host model: the source line says when and how each figure was measured", "[driver][hostmodel]") {
  HostModelRecord r = sampleRecord(1796300000);  // 2026-12-03 12:13 UTC
  std::string s = describeHostModel(r, false, "/cache/texc/host-model");
  INFO(s);
  CHECK(s.find("on 2026-12-03 12:13 UTC") != std::string::npos);
  CHECK(s.find("bandwidth: 1 thread, best of 5 copies of 64 MiB") != std::string::npos);
  CHECK(s.find("peak: 1 thread, best of 3 runs of 12 vector FMA chains") != std::string::npos);
  CHECK(s.find("cached in /cache/texc/host-model, measured again after a day") != std::string::npos);
  CHECK(describeHostModel(r, true, "c").find("just now (2026-12-03 12:13 UTC)") != std::string::npos);
  r.bandwidthAt += 7200;
  r.bandwidthHow = "1 thread, achieved by texc compare";
  CHECK(describeHostModel(r, false, "c").find("bandwidth: 1 thread, achieved by texc compare, on 2026-12-03 14:13 UTC") !=
        std::string::npos);
}

TEST_CASE("host model: --hw takes host, h100, h200 or figures, anything else is refused", "[driver][hostmodel]") {
  for (const char* good : {"host", "h100", "h200", "bw=12.5,peak=103.7", "peak=103.7,bw=12.5", "bw=12.5,peak=103.7,launch=4",
                           "bw=1e3,peak=2e4,launch=0"})
    CHECK(checkHardwareSpec(good).empty());
  for (const char* bad : {"", "tpu", "H100", "bw=12.5", "peak=103.7", "bw=,peak=1", "bw=abc,peak=1", "bw=-1,peak=2", "bw=0,peak=2",
                          "bw=inf,peak=1", "bw=nan,peak=1", "bw=1,peak=2,bw=3", "bw=1,,peak=2", "bw=1,peak=2,", "clock=3,bw=1,peak=2",
                          "bw=12.5 peak=103.7", "bw=1,peak=2,launch=-1"}) {
    INFO(bad);
    CHECK_FALSE(checkHardwareSpec(bad).empty());
  }
  HardwareModel hw = hardwareModelFor("bw=12.5,peak=103.7,launch=2");
  CHECK(hw.bandwidthGBs == 12.5);
  CHECK(hw.peakGflops == 103.7);
  CHECK(hw.launchOverheadUs == 2);
  CHECK(hw.source == "given with --hw bw=12.5,peak=103.7,launch=2");
}

TEST_CASE("explain --hw: figures are used as given, bad text is a usage error", "[driver][hostmodel]") {
  Sandbox box;
  Result r = runTexc(box, explainGelu("bw=12.5,peak=103.7"));
  INFO(r.describe());
  REQUIRE(r.status == 0);
  CHECK(r.out.find("hardware model: given — 12.5 GB/s, 103.7 GFLOP/s fp32") != std::string::npos);
  CHECK(r.out.find("(given with --hw bw=12.5,peak=103.7)") != std::string::npos);
  for (const auto& [hw, message] : std::vector<std::pair<std::string, std::string>>{
           {"bw=fast,peak=103.7", "bw= needs a positive number, got 'fast'"},
           {"bw=12.5", "peak=GFLOP/s is missing"},
           {"tpu", "unknown hardware model 'tpu'"},
       }) {
    Result bad = runTexc(box, explainGelu(hw));
    INFO(bad.describe());
    CHECK(bad.status == 2);
    CHECK(bad.err.find("--hw") != std::string::npos);
    CHECK(bad.err.find(message) != std::string::npos);
    CHECK(bad.out.empty());
  }
}

TEST_CASE("explain --hw host: a fresh cache is used and printed, a stale, old or corrupt one is measured again",
          "[driver][hostmodel]") {
  Sandbox box;
  CacheHome cache(box);
  const int64_t t = now() - 3600;
  cache.write(formatHostModelRecord(sampleRecord(t)));
  Result fresh = runTexc(box, explainGelu("host"));
  INFO(fresh.describe());
  REQUIRE(fresh.status == 0);
  CHECK(fresh.out.find("hardware model: host — 7.2 GB/s, 103.7 GFLOP/s") != std::string::npos);
  CHECK(fresh.out.find("measured by texc on this machine on " + formatUtc(t)) != std::string::npos);
  CHECK(fresh.out.find("bandwidth: 1 thread, best of 5 copies of 64 MiB") != std::string::npos);
  CHECK(fresh.out.find("cached in " + cache.file().string()) != std::string::npos);
  Result compared = runTexc(box, {"compare", (kExamples / "gelu.tex").string(), "-D", "N=8", "-D", "D=16", "--repeat", "1"});
  INFO(compared.describe());
  REQUIRE(compared.status == 0);
  CHECK(compared.out.find("Host bandwidth 7.2 GB/s (measured by texc on this machine on " + formatUtc(t) +
                          "; bandwidth: 1 thread, best of 5 copies of 64 MiB") != std::string::npos);

  for (const std::string& old : {formatHostModelRecord(sampleRecord(t - 2 * kHostModelMaxAgeSeconds)), std::string("7.2 103.7\n"),
                                 std::string("texc host model, format 2\nbandwidth_gbs 7")}) {
    cache.write(old);
    int64_t before = now();
    Result again = runTexc(box, explainGelu("host"));
    INFO(old << "\n" << again.describe());
    REQUIRE(again.status == 0);
    CHECK(again.out.find("measured by texc on this machine just now") != std::string::npos);
    std::optional<HostModelRecord> written = parseHostModelRecord(readBytes(cache.file()));
    REQUIRE(written);
    CHECK(written->measuredAt >= before);
    CHECK(written->bandwidthHow == kHostCopyMethod);
  }
}

TEST_CASE("host model: a run that measures more bandwidth raises the cached figure, never lowers it", "[driver][hostmodel]") {
  Sandbox box;
  CacheHome cache(box);
  const int64_t t = now() - 3600;
  CHECK_FALSE(recordHostBandwidth(20, "no cache yet"));  // nothing to raise: the next run measures in full
  cache.write(formatHostModelRecord(sampleRecord(t)));
  CHECK(recordHostBandwidth(12.5, "1 thread, achieved by a test"));
  std::optional<HostModelRecord> r = parseHostModelRecord(readBytes(cache.file()));
  REQUIRE(r);
  CHECK(r->bandwidthGBs == 12.5);
  CHECK(r->bandwidthHow == "1 thread, achieved by a test");
  CHECK(r->bandwidthAt >= t);
  CHECK(r->measuredAt == t);  // the age of the full measurement is unchanged
  CHECK(r->peakGflops == 103.7);
  CHECK_FALSE(recordHostBandwidth(10, "slower"));
  CHECK(parseHostModelRecord(readBytes(cache.file()))->bandwidthGBs == 12.5);
}

}  // namespace
}  // namespace texc::drivertest
