#include "compiler/driver/Execution.h"

#include <fmt/format.h>
#include <unistd.h>

#include <fstream>
#include <new>
#include <stdexcept>

#include "compiler/driver/Frontend.h"
#include "runtime/Half.h"
#include "runtime/Npy.h"
#include "runtime/SplitMix64.h"

namespace texc {

ElemType elemTypeOf(DType t) {
  switch (t) {
    case DType::F32: return ElemType::F32;
    case DType::F64: return ElemType::F64;
    case DType::F16: return ElemType::F16;
    case DType::BF16: return ElemType::BF16;
  }
  return ElemType::F32;
}

double loadElement(const Tensor& t, int64_t i) {
  switch (t.type) {
    case ElemType::F32: return t.data.as<float>()[i];
    case ElemType::F64: return t.data.as<double>()[i];
    case ElemType::F16: return halfToFloat(t.data.as<uint16_t>()[i]);
    case ElemType::BF16: return bf16ToFloat(t.data.as<uint16_t>()[i]);
  }
  return 0;
}

std::vector<double> toDoubles(const Tensor& t) {
  int64_t n = numElements(t);
  std::vector<double> out(n);
  for (int64_t i = 0; i < n; ++i) out[i] = loadElement(t, i);
  return out;
}

void fillRandom(Tensor& t, uint64_t seed, size_t inputIndex) {
  SplitMix64 rng{seed * 0x100000001B3ull + inputIndex};
  int64_t n = numElements(t);
  for (int64_t i = 0; i < n; ++i) {
    double v = rng.uniform();
    switch (t.type) {
      case ElemType::F32: t.data.as<float>()[i] = static_cast<float>(v); break;
      case ElemType::F64: t.data.as<double>()[i] = v; break;
      case ElemType::F16: t.data.as<uint16_t>()[i] = floatToHalf(static_cast<float>(v)); break;
      case ElemType::BF16: t.data.as<uint16_t>()[i] = floatToBf16(static_cast<float>(v)); break;
    }
  }
}

std::vector<void*> bindTensors(const Program& p, std::vector<Tensor>& tensors) {
  std::vector<void*> ptrs(p.tensors.size());
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    if (!p.tensors[i].isInput) tensors[i] = makeTensor(elemTypeOf(p.tensors[i].dtype), p.tensors[i].shape);
    ptrs[i] = tensors[i].data.data();
  }
  return ptrs;
}

int64_t residentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  if (!(statm >> pages >> resident)) return -1;
  return resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

namespace {

// Allocates, turning failures into an error that names the tensor.
template <typename Alloc>
auto allocating(const TensorInfo& t, Alloc alloc) {
  try {
    return alloc();
  } catch (const std::bad_alloc&) {
    throw CommandError{kExitRuntime, fmt::format("out of memory allocating '{}' ({})", t.name, describe(elemTypeOf(t.dtype), t.shape))};
  } catch (const std::length_error&) {
    throw CommandError{kExitRuntime, fmt::format("'{}' ({}) is too large to allocate", t.name, describe(elemTypeOf(t.dtype), t.shape))};
  }
}

}  // namespace

ProgramMemory::ProgramMemory(const Program& p, const loops::MemoryPlan* plan, std::vector<Tensor>& tensors)
    : program_(p), plan_(plan), tensors_(tensors), unplanned_(p.tensors.size()), ptrs_(p.tensors.size(), nullptr) {
  if (plan_) {
    try {
      arena_ = Buffer(static_cast<size_t>(plan_->arenaBytes));
    } catch (const std::bad_alloc&) {
      throw CommandError{kExitRuntime, fmt::format("out of memory allocating the arena of the intermediates ({} bytes)", plan_->arenaBytes)};
    }
  }
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    const TensorInfo& t = p.tensors[i];
    if (t.isInput) {
      ptrs_[i] = tensors_[i].data.data();
    } else if (t.isOutput) {
      tensors_[i] = allocating(t, [&] { return makeTensor(elemTypeOf(t.dtype), t.shape); });
      ptrs_[i] = tensors_[i].data.data();
    } else if (const loops::PlannedTemp* placed = plan_ ? plan_->find(static_cast<int>(i)) : nullptr) {
      ptrs_[i] = arena_.data() + placed->offset;
    }
  }
}

void** ProgramMemory::prepareRun() {
  for (size_t i = 0; i < program_.tensors.size(); ++i) {
    const TensorInfo& t = program_.tensors[i];
    if (t.isInput || t.isOutput || (plan_ && plan_->find(static_cast<int>(i)))) continue;
    // An intermediate of an unplanned run (or one no kernel writes): a buffer of its own.
    unplanned_[i] = allocating(t, [&] { return Buffer::uninitialized(byteSize(elemTypeOf(t.dtype), t.shape)); });
    ptrs_[i] = unplanned_[i].data();
  }
  return ptrs_.data();
}

void ProgramMemory::finishRun() {
  for (size_t i = 0; i < unplanned_.size(); ++i)
    if (unplanned_[i].data()) {
      unplanned_[i] = Buffer();
      ptrs_[i] = nullptr;
    }
}

int64_t ProgramMemory::intermediateBytes() const {
  int64_t bytes = plan_ ? plan_->arenaBytes : 0;
  for (size_t i = 0; i < program_.tensors.size(); ++i) {
    const TensorInfo& t = program_.tensors[i];
    if (t.isInput || t.isOutput || (plan_ && plan_->find(static_cast<int>(i)))) continue;
    bytes += static_cast<int64_t>(byteSize(elemTypeOf(t.dtype), t.shape));
  }
  return bytes;
}

}  // namespace texc
