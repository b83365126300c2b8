#include "frontend/AST.h"

#include <fmt/format.h>

namespace texc {

namespace {

void printVars(std::string& out, const std::vector<IndexVarDecl>& vars) {
  for (size_t i = 0; i < vars.size(); ++i) {
    if (i) out += ", ";
    out += vars[i].name;
    if (vars[i].bound) out += " < " + printExpr(*vars[i].bound);
  }
}

void printList(std::string& out, const std::vector<ExprPtr>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (i) out += ", ";
    out += printExpr(*args[i]);
  }
}

}  // namespace

std::string printExpr(const Expr& e) {
  std::string out;
  switch (e.kind) {
    case ExprKind::Number: return e.text;
    case ExprKind::Inf: return "inf";
    case ExprKind::Name: return e.name;
    case ExprKind::Index:
      out = e.name + "[";
      printList(out, e.args);
      return out + "]";
    case ExprKind::Call:
      out = e.name + "(";
      printList(out, e.args);
      return out + ")";
    case ExprKind::Unary: return fmt::format("({}{})", spelling(e.unaryOp), printExpr(*e.args[0]));
    case ExprKind::Binary:
      return fmt::format("({} {} {})", printExpr(*e.args[0]), spelling(e.binaryOp), printExpr(*e.args[1]));
    case ExprKind::Reduce:
      out = std::string(spelling(e.reduceKind)) + "(";
      printVars(out, e.vars);
      return out + ": " + printExpr(*e.args[0]) + ")";
  }
  return out;
}

std::string printModule(const Module& module) {
  std::string out;
  for (const Stmt& s : module.stmts) {
    switch (s.kind) {
      case StmtKind::Let: out += fmt::format("let {} = {}\n", s.name, printExpr(*s.value)); break;
      case StmtKind::Input: {
        out += fmt::format("input {} : {}", s.name, s.type.dtype);
        if (!s.type.dims.empty()) {
          out += "[";
          printList(out, s.type.dims);
          out += "]";
        }
        out += "\n";
        break;
      }
      case StmtKind::Assign: {
        if (s.isOutput) out += "output ";
        out += s.name;
        if (s.indexForm) {
          out += "[";
          printVars(out, s.lhsVars);
          out += "]";
        }
        out += " = " + printExpr(*s.value) + "\n";
        break;
      }
    }
  }
  return out;
}

namespace {

bool equalExprs(const Expr* a, const Expr* b);

bool equalVars(const std::vector<IndexVarDecl>& a, const std::vector<IndexVarDecl>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].name != b[i].name || !equalExprs(a[i].bound.get(), b[i].bound.get())) return false;
  return true;
}

bool equalLists(const std::vector<ExprPtr>& a, const std::vector<ExprPtr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!equalExprs(a[i].get(), b[i].get())) return false;
  return true;
}

bool equalExprs(const Expr* a, const Expr* b) {
  if (!a || !b) return a == b;
  if (a->kind != b->kind) return false;
  switch (a->kind) {
    case ExprKind::Number: return a->text == b->text;
    case ExprKind::Inf: return true;
    case ExprKind::Name: return a->name == b->name;
    case ExprKind::Index:
    case ExprKind::Call: return a->name == b->name && equalLists(a->args, b->args);
    case ExprKind::Unary: return a->unaryOp == b->unaryOp && equalLists(a->args, b->args);
    case ExprKind::Binary: return a->binaryOp == b->binaryOp && equalLists(a->args, b->args);
    case ExprKind::Reduce:
      return a->reduceKind == b->reduceKind && equalVars(a->vars, b->vars) && equalLists(a->args, b->args);
  }
  return false;
}

}  // namespace

bool equalModules(const Module& a, const Module& b) {
  if (a.stmts.size() != b.stmts.size()) return false;
  for (size_t i = 0; i < a.stmts.size(); ++i) {
    const Stmt& x = a.stmts[i];
    const Stmt& y = b.stmts[i];
    if (x.kind != y.kind || x.name != y.name || x.isOutput != y.isOutput || x.indexForm != y.indexForm) return false;
    if (!equalVars(x.lhsVars, y.lhsVars) || !equalExprs(x.value.get(), y.value.get())) return false;
    if (x.type.dtype != y.type.dtype || !equalLists(x.type.dims, y.type.dims)) return false;
  }
  return true;
}

}  // namespace texc
