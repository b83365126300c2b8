#include "core/Operators.h"

#include <array>
#include <cstddef>

namespace texc {

const char* spelling(UnaryOp op) { return op == UnaryOp::Neg ? "-" : "!"; }

const char* spelling(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "+";
    case BinaryOp::Sub: return "-";
    case BinaryOp::Mul: return "*";
    case BinaryOp::Div: return "/";
    case BinaryOp::Mod: return "%";
    case BinaryOp::Lt: return "<";
    case BinaryOp::Le: return "<=";
    case BinaryOp::Gt: return ">";
    case BinaryOp::Ge: return ">=";
    case BinaryOp::Eq: return "==";
    case BinaryOp::Ne: return "!=";
    case BinaryOp::And: return "&&";
    case BinaryOp::Or: return "||";
  }
  return "?";
}

const char* spelling(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::Sum: return "sum";
    case ReduceKind::Max: return "max";
    case ReduceKind::Min: return "min";
    case ReduceKind::Prod: return "prod";
  }
  return "?";
}

bool isComparison(BinaryOp op) { return op >= BinaryOp::Lt && op <= BinaryOp::Ne; }
bool isLogical(BinaryOp op) { return op == BinaryOp::And || op == BinaryOp::Or; }

namespace {
struct BuiltinInfo {
  const char* name;
  int arity;
};
constexpr std::array kBuiltins = {
#define BUILTIN(Enum, Name, Arity) BuiltinInfo{Name, Arity},
#include "core/Builtins.def"
#undef BUILTIN
};
}  // namespace

const char* builtinName(Builtin b) { return kBuiltins[static_cast<size_t>(b)].name; }
int builtinArity(Builtin b) { return kBuiltins[static_cast<size_t>(b)].arity; }

std::optional<Builtin> lookupBuiltin(std::string_view name) {
  for (size_t i = 0; i < kBuiltins.size(); ++i)
    if (name == kBuiltins[i].name && !isInternal(static_cast<Builtin>(i))) return static_cast<Builtin>(i);
  return std::nullopt;
}

}  // namespace texc
