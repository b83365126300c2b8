// common.h — what every C++ peer of the benchmark shares: a small .npy reader and writer
// (float32, C order), a median-of-N timer, a thread splitter, and the JSON line it prints.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace bench {

struct Array {
  std::vector<long> shape;
  std::vector<float> data;  // row-major
  long size() const {
    long n = 1;
    for (long d : shape) n *= d;
    return n;
  }
};

inline Array readNpy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  char magic[8];
  f.read(magic, 8);
  if (std::memcmp(magic, "\x93NUMPY", 6) != 0) throw std::runtime_error(path + ": not a .npy file");
  unsigned headerLen = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    f.read(reinterpret_cast<char*>(b), 2);
    headerLen = b[0] | (b[1] << 8);
  } else {
    unsigned char b[4];
    f.read(reinterpret_cast<char*>(b), 4);
    headerLen = b[0] | (b[1] << 8) | (b[2] << 16) | (unsigned(b[3]) << 24);
  }
  std::string header(headerLen, ' ');
  f.read(header.data(), headerLen);
  if (header.find("'<f4'") == std::string::npos) throw std::runtime_error(path + ": only little-endian float32 is read");
  if (header.find("'fortran_order': False") == std::string::npos) throw std::runtime_error(path + ": only C order is read");
  Array a;
  size_t open = header.find('(', header.find("'shape'"));
  size_t close = header.find(')', open);
  std::stringstream dims(header.substr(open + 1, close - open - 1));
  std::string item;
  while (std::getline(dims, item, ','))
    if (item.find_first_not_of(' ') != std::string::npos) a.shape.push_back(std::stol(item));
  a.data.resize(a.size());
  f.read(reinterpret_cast<char*>(a.data.data()), a.data.size() * sizeof(float));
  if (!f) throw std::runtime_error(path + ": truncated");
  return a;
}

inline void writeNpy(const std::string& path, const float* data, const std::vector<long>& shape) {
  std::string dims;
  for (long d : shape) dims += std::to_string(d) + ",";
  if (shape.size() > 1) dims.pop_back();
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  f.write("\x93NUMPY\x01\x00", 8);
  unsigned short len = static_cast<unsigned short>(header.size());
  f.write(reinterpret_cast<const char*>(&len), 2);
  f.write(header.data(), header.size());
  long n = 1;
  for (long d : shape) n *= d;
  f.write(reinterpret_cast<const char*>(data), n * sizeof(float));
  if (!f) throw std::runtime_error("cannot write " + path);
}

// Command line: PEER WORKLOAD DIR THREADS REPEAT. Inputs are DIR/<name>.npy; the result goes to
// the path the driver names in OUT.
struct Args {
  std::string workload, dir, out;
  int threads = 1, repeat = 5;
};

inline Args parseArgs(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s WORKLOAD INPUT_DIR OUT.npy THREADS REPEAT\n", argv[0]);
    std::exit(2);
  }
  Args a;
  a.workload = argv[1];
  a.dir = argv[2];
  a.out = argv[3];
  a.threads = std::atoi(argv[4]);
  a.repeat = std::atoi(argv[5]);
  return a;
}

inline Array input(const Args& a, const std::string& name) { return readNpy(a.dir + "/" + name + ".npy"); }

// One warm-up call, then `repeat` timed calls; prints {"median_ms", "min_ms", "runs", "info"}.
inline void timeAndReport(int repeat, const std::function<void()>& kernel, const std::string& info = "") {
  kernel();
  std::vector<double> ms;
  for (int r = 0; r < repeat; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    kernel();
    auto t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  size_t n = sorted.size();
  double median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  std::printf("{\"median_ms\": %.5f, \"min_ms\": %.5f, \"runs\": %zu, \"info\": \"%s\"}\n", median, sorted[0], n, info.c_str());
}

// Split [0, n) into `threads` contiguous pieces and run fn(begin, end) on each; the calling
// thread takes the first piece.
inline void parallelFor(int threads, long n, const std::function<void(long, long)>& fn) {
  if (threads <= 1 || n < 2) {
    fn(0, n);
    return;
  }
  std::vector<std::thread> pool;
  long chunk = (n + threads - 1) / threads;
  for (int t = 1; t < threads; ++t) {
    long b = std::min(n, t * chunk), e = std::min(n, (t + 1) * chunk);
    if (b < e) pool.emplace_back(fn, b, e);
  }
  fn(0, std::min(n, chunk));
  for (auto& th : pool) th.join();
}

// 64-byte aligned float storage for outputs and scratch.
struct Buffer {
  float* p = nullptr;
  long n = 0;
  explicit Buffer(long count) : n(count) {
    p = static_cast<float*>(std::aligned_alloc(64, ((count * sizeof(float) + 63) / 64) * 64));
    std::memset(p, 0, count * sizeof(float));
  }
  ~Buffer() { std::free(p); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};

}  // namespace bench
