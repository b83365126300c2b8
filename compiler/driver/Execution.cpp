#include "compiler/driver/Execution.h"

#include "runtime/Half.h"

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

namespace {

// splitmix64: a small generator whose stream is the same on every platform.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-52 - 1.0; }  // [-1, 1)
};

}  // namespace

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

}  // namespace texc
