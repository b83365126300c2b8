// Helpers for the driver tests: run the texc binary as a child process in a scratch directory,
// capture its standard output, standard error and exit status, write .npy inputs, and take
// snapshots of a directory tree to prove a failed command left nothing behind.
#pragma once

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <catch2/catch.hpp>

#include "runtime/Buffer.h"
#include "runtime/Npy.h"

namespace texc::drivertest {

namespace fs = std::filesystem;

inline const fs::path kTexc = TEXC_BINARY;
inline const fs::path kExamples = fs::path(TEXC_SOURCE_DIR) / "examples";

// A matmul small enough for tune's candidates and --check to take milliseconds; tiled with tails.
inline const char* const kMatmul =
    "let M = 20; let K = 24; let N = 36\n"
    "input A : f32[M, K]\n"
    "input B : f32[K, N]\n"
    "output C[i, j] = sum(k: A[i, k] * B[k, j])\n";

inline std::string readBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void writeBytes(const fs::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A fresh scratch directory with three parts: `work` (the child's working directory, empty at
// the start), `in` (input files the test writes) and `cap` (the child's captured streams, kept
// apart so that `work` holds only what texc wrote). Removed with everything in it at the end.
class Sandbox {
 public:
  Sandbox() {
    static std::atomic<int> counter{0};
    root_ = fs::temp_directory_path() /
            ("texc-driver-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(root_);
    fs::create_directories(root_ / "work");
    fs::create_directories(root_ / "in");
    fs::create_directories(root_ / "cap");
  }
  ~Sandbox() {
    std::error_code ec;
    // A test may have made a directory read-only; make everything removable again first.
    for (auto it = fs::recursive_directory_iterator(root_, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec))
      if (it->is_directory(ec)) fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(root_, ec);
  }
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  fs::path work() const { return root_ / "work"; }
  fs::path in() const { return root_ / "in"; }
  fs::path cap() const { return root_ / "cap"; }

  // Writes a file under `in` and returns its path.
  fs::path input(const std::string& name, std::string_view bytes) const {
    fs::path p = in() / name;
    writeBytes(p, bytes);
    return p;
  }

 private:
  fs::path root_;
};

struct Result {
  int status = -1;       // the exit status; 128 + N when killed by signal N
  bool crashed = false;  // killed by a signal (or could not be started)
  std::string out;       // standard output
  std::string err;       // standard error
  double ms = 0;         // wall clock, from fork to the end of wait4
  double cpuMs = 0;      // the child's user + system CPU time
  std::string command;   // for messages

  std::string describe() const {
    std::ostringstream s;
    s << "$ " << command << "\n-> exit " << status << (crashed ? " (crashed)" : "") << "\n--- stdout ---\n"
      << out.substr(0, 4000) << "\n--- stderr ---\n"
      << err.substr(0, 4000);
    return s.str();
  }
};

// Runs `texc ARGS...` in `sandbox.work()` (or `cwd` when given), standard input from /dev/null,
// standard output and error to files under `sandbox.cap()`.
inline Result runTexc(const Sandbox& sandbox, const std::vector<std::string>& args, const fs::path& cwd = {}) {
  static std::atomic<int> counter{0};
  int n = counter++;
  fs::path outPath = sandbox.cap() / ("out-" + std::to_string(n));
  fs::path errPath = sandbox.cap() / ("err-" + std::to_string(n));
  fs::path dir = cwd.empty() ? sandbox.work() : cwd;

  Result r;
  r.command = "cd " + dir.string() + " && " + kTexc.string();
  for (const std::string& a : args) r.command += " '" + a + "'";

  std::vector<std::string> argStrings;
  argStrings.push_back(kTexc.string());
  argStrings.insert(argStrings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argStrings) argv.push_back(a.data());
  argv.push_back(nullptr);

  auto start = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    // The child: only async-signal-safe calls until exec.
    int in = ::open("/dev/null", O_RDONLY);
    int out = ::open(outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = ::open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0 || err < 0 || ::chdir(dir.c_str()) != 0) ::_exit(126);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  if (pid < 0) {
    r.crashed = true;
    return r;
  }
  int wstatus = 0;
  struct rusage usage {};
  while (::wait4(pid, &wstatus, 0, &usage) < 0) {
  }
  r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  auto toMs = [](const timeval& t) { return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_usec) / 1e3; };
  r.cpuMs = toMs(usage.ru_utime) + toMs(usage.ru_stime);
  if (WIFEXITED(wstatus)) {
    r.status = WEXITSTATUS(wstatus);
  } else {
    r.crashed = true;
    r.status = WIFSIGNALED(wstatus) ? 128 + WTERMSIG(wstatus) : -1;
  }
  r.out = readBytes(outPath);
  r.err = readBytes(errPath);
  return r;
}

// Every file and directory under `dir`, by path relative to it, with the file's bytes ("/" for a
// directory). Hidden files count: a leftover temporary shows up here.
using Snapshot = std::map<std::string, std::string>;
inline Snapshot snapshot(const fs::path& dir) {
  Snapshot s;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return s;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::string rel = fs::relative(it->path(), dir).string();
    s[rel] = it->is_directory() ? std::string("/") : readBytes(it->path());
  }
  return s;
}

inline std::string names(const Snapshot& s) {
  std::string out;
  for (const auto& [name, bytes] : s) out += (out.empty() ? "" : ", ") + name;
  return out.empty() ? "(nothing)" : out;
}

// The bytes of an .npy file holding `values` (converted to `type`) with `shape`.
inline std::string npyBytes(ElemType type, const std::vector<int64_t>& shape, const std::vector<double>& values = {}) {
  Tensor t = makeTensor(type, shape);
  int64_t n = numElements(t);
  for (int64_t i = 0; i < n && i < static_cast<int64_t>(values.size()); ++i) {
    switch (type) {
      case ElemType::F32: t.data.as<float>()[i] = static_cast<float>(values[i]); break;
      case ElemType::F64: t.data.as<double>()[i] = values[i]; break;
      default: break;  // f16 / bf16 inputs are not needed by these tests
    }
  }
  return encodeNpy(t);
}

// The values of an f32 or f64 .npy file, as doubles.
inline std::vector<double> npyValues(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(numElements(t)));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = t.type == ElemType::F64 ? t.data.as<double>()[i] : static_cast<double>(t.data.as<float>()[i]);
  return v;
}

// `count` reproducible values in [-1, 1) for hand-made inputs (not texc's --random stream).
inline std::vector<double> someValues(size_t count, uint32_t seed) {
  std::vector<double> v(count);
  uint32_t s = seed * 2654435761u + 12345u;
  for (double& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<double>(s >> 8) / static_cast<double>(1u << 23) - 1.0;
  }
  return v;
}

// Runs `texc ARGS...` and requires that it exits with `status` without crashing.
inline Result expectStatus(const Sandbox& box, const std::vector<std::string>& args, int status) {
  Result r = runTexc(box, args);
  INFO(r.describe());
  REQUIRE_FALSE(r.crashed);
  REQUIRE(r.status == status);
  return r;
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

inline size_t countOf(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t p = haystack.find(needle); p != std::string::npos; p = haystack.find(needle, p + needle.size())) ++n;
  return n;
}

// The pipeline as `texc passes` lists it: one pass name per line, in order ("dce" may repeat).
inline std::vector<std::string> listedPasses(const Sandbox& sandbox) {
  Result r = runTexc(sandbox, {"passes"});
  std::vector<std::string> out;
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string number, name;
    if (words >> number >> name && !number.empty() && number.back() == '.') out.push_back(name);
  }
  return out;
}

}  // namespace texc::drivertest
