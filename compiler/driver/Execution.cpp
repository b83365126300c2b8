#include "compiler/driver/Execution.h"

#include <fmt/format.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <stdexcept>

#include "compiler/driver/Frontend.h"
#include "compiler/reference/ErrorBound.h"
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

bool poisonRequested() {
  const char* v = std::getenv("TEXC_POISON");
  return v && *v && std::strcmp(v, "0") != 0;
}

void poisonBytes(void* data, size_t bytes) {
  if (data && bytes) std::memset(data, 0xFF, bytes);
}

namespace {

void storeElement(Tensor& t, int64_t i, double v) {
  switch (t.type) {
    case ElemType::F32: t.data.as<float>()[i] = static_cast<float>(v); break;
    case ElemType::F64: t.data.as<double>()[i] = v; break;
    case ElemType::F16: t.data.as<uint16_t>()[i] = floatToHalf(static_cast<float>(v)); break;
    case ElemType::BF16: t.data.as<uint16_t>()[i] = floatToBf16(static_cast<float>(v)); break;
  }
}

// Whether `variant` is `wanted` or has it as one of its ", "-separated items.
bool variantMatches(const std::string& variant, const std::string& wanted) {
  if (variant == wanted) return true;
  for (size_t at = 0; at <= variant.size();) {
    size_t end = variant.find(", ", at);
    if (end == std::string::npos) end = variant.size();
    if (variant.compare(at, end - at, wanted) == 0) return true;
    at = end + 2;
  }
  return false;
}

}  // namespace

bool applyTestDamage(const Program& p, std::vector<Tensor>& tensors, const std::string& variant) {
  const char* env = std::getenv("TEXC_TEST_DAMAGE_OUTPUT");
  if (!env || !*env) return false;
  std::string spec = env, name = spec;
  if (size_t at = spec.find('@'); at != std::string::npos) {
    name = spec.substr(0, at);
    if (!variantMatches(variant, spec.substr(at + 1))) return false;
  }
  int id = p.findTensor(name);
  if (id < 0 || !p.tensors[id].isOutput || numElements(tensors[id]) == 0) return false;
  double v = loadElement(tensors[id], 0);
  storeElement(tensors[id], 0, v + 1 + std::fabs(v));
  return true;
}

// The bound evaluator computes every value with the reference's float64 operations in the same
// order (bit for bit evaluateReference's: the end-to-end suite and the random tester check it),
// so its values serve as the reference and the program is evaluated once, not twice.
MathMode effectiveMathMode(const PipelineOptions& options) {
  return options.target == Target::Cuda ? MathMode::Precise : options.math;
}

CheckedReference referenceWithBounds(const Program& analysed, const std::vector<RefTensor>& inputs, MathMode math) {
  BoundResult b = evaluateBounds(analysed, inputs, math);
  CheckedReference r;
  r.values = std::move(b.values);
  r.bounds = std::move(b.bounds);
  return r;
}

std::vector<OutputCheck> checkOutputs(const Program& compiled, const std::vector<Tensor>& tensors, const Program& analysed,
                                      const CheckedReference& ref) {
  std::vector<OutputCheck> out;
  for (size_t k = 0; k < compiled.outputs.size(); ++k) {
    const TensorInfo& info = compiled.tensors[compiled.outputs[k]];
    const int refId = analysed.outputs[k];
    std::vector<double> got = toDoubles(tensors[compiled.outputs[k]]);
    OutputCheck c;
    c.name = info.name;
    c.shape = info.shape;
    c.error = compareToReference(ref.values[refId].data.data(), got.data(), got.size());
    c.comparison = compareValues(ref.values[refId].data, ref.bounds[refId], got, info.shape, toleranceFor(info.dtype));
    out.push_back(std::move(c));
  }
  return out;
}

bool anyBeyond(const std::vector<OutputCheck>& checks) {
  for (const OutputCheck& c : checks)
    if (c.beyond()) return true;
  return false;
}

std::string describeWorst(const OutputCheck& c) {
  const Comparison& k = c.comparison;
  if (k.worstIndex < 0) return fmt::format("{}: no element compared", c.name);
  std::string bound = std::isfinite(k.worstRef) ? fmt::format("bound {:.3g}", k.worstAllowed) : "must match exactly";
  return fmt::format("{}{} = {}, reference {}, {} ({} of {} elements beyond)", c.name, formatIndex(k.worstIndex, c.shape),
                     fmtDouble(k.worstGot), fmtDouble(k.worstRef), bound, k.mismatches, k.elements);
}

std::vector<void*> bindTensors(const Program& p, std::vector<Tensor>& tensors) {
  std::vector<void*> ptrs(p.tensors.size());
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    if (!p.tensors[i].isInput) tensors[i] = makeTensor(elemTypeOf(p.tensors[i].dtype), p.tensors[i].shape);
    ptrs[i] = tensors[i].data.data();
  }
  return ptrs;
}

void releaseFreedMemory() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
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

ProgramMemory::ProgramMemory(const Program& p, const loops::MemoryPlan* plan, std::vector<Tensor>& tensors, bool poison)
    : program_(p), plan_(plan), tensors_(tensors), unplanned_(p.tensors.size()), ptrs_(p.tensors.size(), nullptr),
      poison_(poison || poisonRequested()) {
  if (plan_) {
    try {
      arena_ = Buffer(static_cast<size_t>(plan_->arenaBytes));
    } catch (const std::bad_alloc&) {
      throw CommandError{kExitRuntime, fmt::format("out of memory allocating the arena of the intermediates ({} bytes)", plan_->arenaBytes)};
    }
    if (poison_) poisonBytes(arena_.data(), arena_.size());
  }
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    const TensorInfo& t = p.tensors[i];
    if (t.isInput) {
      ptrs_[i] = tensors_[i].data.data();
    } else if (t.isOutput) {
      tensors_[i] = allocating(t, [&] { return makeTensor(elemTypeOf(t.dtype), t.shape); });
      if (poison_) poisonBytes(tensors_[i].data.data(), tensors_[i].data.size());
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
    if (poison_) poisonBytes(unplanned_[i].data(), unplanned_[i].size());
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
