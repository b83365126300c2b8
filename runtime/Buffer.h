// Owning storage for tensor data and the element types the runtime moves around. Kept free of
// compiler/ and frontend/ so the runtime can be linked into anything that only runs kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace texc {

// The element types a tensor may hold at run time. f16 and bf16 are storage-only types.
enum class ElemType : uint8_t { F32, F64, F16, BF16 };

// Bytes per element: 4, 8, 2, 2.
size_t elemBytes(ElemType type);
// The name used in .tex sources and messages: "f32", "f64", "f16", "bf16".
std::string_view elemName(ElemType type);

// A move-only, 64-byte-aligned, zero-filled byte buffer. The allocation is rounded up to a
// multiple of 64 (and is never empty) so vectorized kernels may load whole cache lines past the
// logical end and data() is never null, even for a zero-size buffer. From kHugePagesFrom bytes
// on, it is whole 2 MiB pages, 2 MiB aligned, asked of the OS as transparent huge pages.
class Buffer {
 public:
  static constexpr size_t kAlignment = 64;
  static constexpr size_t kHugePageBytes = size_t{2} << 20;
  static constexpr size_t kHugePagesFrom = size_t{4} << 20;

  Buffer() = default;
  // Throws std::bad_alloc when the memory cannot be allocated.
  explicit Buffer(size_t sizeBytes);
  // The same without the zero fill, for memory that is written before it is read (a run's
  // intermediates): the cost of a fresh allocation is then what the OS charges for new pages.
  static Buffer uninitialized(size_t sizeBytes);
  ~Buffer();

  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  // Logical size in bytes (what was asked for, not the rounded allocation).
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Null only for a default-constructed (or moved-from) buffer.
  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }

  template <typename T>
  T* as() {
    return reinterpret_cast<T*>(data_);
  }
  template <typename T>
  const T* as() const {
    return reinterpret_cast<const T*>(data_);
  }

 private:
  struct NoFill {};
  Buffer(size_t sizeBytes, NoFill);
  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

// A dense, row-major (C order) tensor. Rank 0 (empty shape) is a scalar holding one element.
struct Tensor {
  ElemType type = ElemType::F32;
  std::vector<int64_t> shape;
  Buffer data;
};

// The product of the extents; 1 for rank 0. Throws std::length_error on a negative extent or
// when the product does not fit in int64_t.
int64_t numElements(const std::vector<int64_t>& shape);
int64_t numElements(const Tensor& tensor);
// numElements * elemBytes, with the same overflow checks.
size_t byteSize(ElemType type, const std::vector<int64_t>& shape);
size_t byteSize(const Tensor& tensor);

// A zero-filled tensor of the given type and shape.
Tensor makeTensor(ElemType type, std::vector<int64_t> shape);

// A tensor of its own with `t`'s type, shape and contents (Buffer does not copy implicitly).
Tensor copyTensor(const Tensor& t);

}  // namespace texc
