#include "core/DType.h"

namespace texc {

const char* dtypeName(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F64: return "f64";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
  }
  return "?";
}

int dtypeBytes(DType t) { return t == DType::F64 ? 8 : t == DType::F32 ? 4 : 2; }

std::optional<DType> parseDType(std::string_view name) {
  if (name == "f32") return DType::F32;
  if (name == "f64") return DType::F64;
  if (name == "f16") return DType::F16;
  if (name == "bf16") return DType::BF16;
  return std::nullopt;
}

DType computeDType(DType storage) { return storage == DType::F64 ? DType::F64 : DType::F32; }

}  // namespace texc
