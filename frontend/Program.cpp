#include "frontend/Program.h"

#include <array>

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

namespace {
struct BuiltinInfo {
  const char* name;
  int arity;
};
constexpr std::array kBuiltins = {
#define BUILTIN(Enum, Name, Arity) BuiltinInfo{Name, Arity},
#include "frontend/Builtins.def"
#undef BUILTIN
};
}  // namespace

const char* builtinName(Builtin b) { return kBuiltins[static_cast<size_t>(b)].name; }
int builtinArity(Builtin b) { return kBuiltins[static_cast<size_t>(b)].arity; }

std::optional<Builtin> lookupBuiltin(std::string_view name) {
  for (size_t i = 0; i < kBuiltins.size(); ++i)
    if (name == kBuiltins[i].name) return static_cast<Builtin>(i);
  return std::nullopt;
}

int64_t evalIndex(const IndexExpr& e, const std::vector<int64_t>& vals) {
  switch (e.kind) {
    case IndexExpr::Kind::Const: return e.constant;
    case IndexExpr::Kind::Var: return vals[e.var];
    case IndexExpr::Kind::Add: return evalIndex(e.ops[0], vals) + evalIndex(e.ops[1], vals);
    case IndexExpr::Kind::Sub: return evalIndex(e.ops[0], vals) - evalIndex(e.ops[1], vals);
    case IndexExpr::Kind::Mul: return evalIndex(e.ops[0], vals) * e.constant;
    case IndexExpr::Kind::FloorDiv: return floorDiv(evalIndex(e.ops[0], vals), e.constant);
    case IndexExpr::Kind::Mod: return floorMod(evalIndex(e.ops[0], vals), e.constant);
  }
  return 0;
}

int Program::findTensor(std::string_view name) const {
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].name == name) return static_cast<int>(i);
  return -1;
}

}  // namespace texc
