// The element types of tensors (spec 3) and the type a computation runs in.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace texc {

enum class DType : uint8_t { F32, F64, F16, BF16 };
const char* dtypeName(DType t);
int dtypeBytes(DType t);
std::optional<DType> parseDType(std::string_view name);
// The dtype a computation runs in: f64 if any operand is f64, otherwise f32 (f16/bf16 compute in
// f32, spec 3).
DType computeDType(DType storage);

}  // namespace texc
