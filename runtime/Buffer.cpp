#include "runtime/Buffer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include <sys/mman.h>

namespace texc {

size_t elemBytes(ElemType type) {
  switch (type) {
    case ElemType::F32:
      return 4;
    case ElemType::F64:
      return 8;
    case ElemType::F16:
      return 2;
    case ElemType::BF16:
      return 2;
  }
  return 0;
}

std::string_view elemName(ElemType type) {
  switch (type) {
    case ElemType::F32:
      return "f32";
    case ElemType::F64:
      return "f64";
    case ElemType::F16:
      return "f16";
    case ElemType::BF16:
      return "bf16";
  }
  return "?";
}

namespace {

// What is allocated for a request of `bytes`: whole 64-byte lines, at least one.
size_t allocationBytes(size_t bytes) {
  size_t rounded = (bytes + Buffer::kAlignment - 1) / Buffer::kAlignment * Buffer::kAlignment;
  return rounded == 0 ? Buffer::kAlignment : rounded;
}

}  // namespace

Buffer::Buffer(size_t sizeBytes) : Buffer(sizeBytes, NoFill{}) { std::memset(data_, 0, allocationBytes(size_)); }

Buffer Buffer::uninitialized(size_t sizeBytes) { return Buffer(sizeBytes, NoFill{}); }

Buffer::Buffer(size_t sizeBytes, NoFill) : size_(sizeBytes) {
  // std::aligned_alloc wants a size that is a multiple of the alignment; a zero-size request
  // still gets one line so data() is a valid pointer (memcpy with null is undefined).
  if (sizeBytes > std::numeric_limits<size_t>::max() - kAlignment) throw std::bad_alloc();
  const size_t bytes = allocationBytes(sizeBytes);
  void* p = nullptr;
  if (bytes >= kHugePagesFrom) {
    // Whole 2 MiB pages, asked for as transparent huge pages: one TLB entry per 2 MiB instead of
    // 512. On a Sapphire Rapids class Xeon under KVM, where a TLB miss walks two page tables,
    // GELU + bias + residual over 2^24 floats took 12.1 ms on 4 KiB pages and 9.0-9.7 ms on
    // huge pages (1 thread); SGEMM 2048 4-6 % less. Where the kernel has them off, it is a no-op.
    if (bytes > std::numeric_limits<size_t>::max() - kHugePageBytes) throw std::bad_alloc();
    const size_t pages = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
    p = std::aligned_alloc(kHugePageBytes, pages);
#ifdef MADV_HUGEPAGE
    if (p) madvise(p, pages, MADV_HUGEPAGE);
#endif
  } else {
    p = std::aligned_alloc(kAlignment, bytes);
  }
  if (!p) throw std::bad_alloc();
  data_ = static_cast<std::byte*>(p);
}

Buffer::~Buffer() { std::free(data_); }

Buffer::Buffer(Buffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    std::free(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

int64_t numElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw std::length_error("negative tensor extent " + std::to_string(d));
    if (__builtin_mul_overflow(n, d, &n)) throw std::length_error("tensor has too many elements");
  }
  return n;
}

int64_t numElements(const Tensor& tensor) { return numElements(tensor.shape); }

size_t byteSize(ElemType type, const std::vector<int64_t>& shape) {
  size_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<size_t>(numElements(shape)), elemBytes(type), &bytes))
    throw std::length_error("tensor is too large");
  return bytes;
}

size_t byteSize(const Tensor& tensor) { return byteSize(tensor.type, tensor.shape); }

Tensor makeTensor(ElemType type, std::vector<int64_t> shape) {
  size_t bytes = byteSize(type, shape);
  return Tensor{type, std::move(shape), Buffer(bytes)};
}

Tensor copyTensor(const Tensor& t) {
  Tensor out = makeTensor(t.type, t.shape);
  std::copy_n(t.data.data(), t.data.size(), out.data.data());
  return out;
}

}  // namespace texc
