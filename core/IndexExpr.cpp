#include "core/IndexExpr.h"

namespace texc {

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

}  // namespace texc
