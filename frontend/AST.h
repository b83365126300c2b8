// The abstract syntax tree: what the parser read, with a source range on every node and nothing
// resolved yet. Sema (frontend/Sema.h) turns it into the analysed Program.
//
// Abstract grammar:
//   Module   := Stmt*
//   Stmt     := Let(name, Expr)                        let N = 4
//             | Input(name, Type)                      input x : f32[N, D]
//             | Assign(output?, name, IndexVar*?, Expr) [output] y[i, j < 4] = EXPR
//   Type     := (dtype, Expr* dims)                    rank 0 when dims is empty
//   IndexVar := (name, Expr? bound)                    i   or   i < EXTENT
//   Expr     := Number | Inf | Name | Index(name, Expr*) | Unary(op, Expr)
//             | Binary(op, Expr, Expr) | Call(name, Expr*) | Reduce(kind, IndexVar+, Expr)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/Operators.h"
#include "frontend/Source.h"

namespace texc {

enum class ExprKind : uint8_t { Number, Inf, Name, Index, Unary, Binary, Call, Reduce };


struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct IndexVarDecl {
  std::string name;
  SourceRange range;  // the name
  ExprPtr bound;      // null when the range is inferred
};

struct Expr {
  ExprKind kind;
  SourceRange range;  // the whole expression
  int depth = 1;      // height of this subtree; the parser bounds it (kMaxNestingDepth)

  // Number: the spelling and value; isInteger for literals without '.' or exponent.
  std::string text;
  double number = 0;
  int64_t integer = 0;
  bool isInteger = false;

  // Name, Index, Call: the name and where it is.
  std::string name;
  SourceRange nameRange;

  // Unary, Binary: the operator and where it is (diagnostics point at operators).
  UnaryOp unaryOp = UnaryOp::Neg;
  BinaryOp binaryOp = BinaryOp::Add;
  SourceRange opRange;

  // Reduce: kind, variables; the body is args[0].
  ReduceKind reduceKind = ReduceKind::Sum;
  std::vector<IndexVarDecl> vars;

  // Operands (Unary: 1, Binary: 2), indices (Index), arguments (Call), body (Reduce).
  std::vector<ExprPtr> args;

  explicit Expr(ExprKind k, SourceRange r) : kind(k), range(r) {}
};

enum class StmtKind : uint8_t { Let, Input, Assign };

struct TypeDecl {
  std::string dtype;
  SourceRange dtypeRange;
  std::vector<ExprPtr> dims;
};

struct Stmt {
  StmtKind kind;
  SourceRange range;
  std::string name;
  SourceRange nameRange;
  bool isOutput = false;   // Assign
  bool indexForm = false;  // Assign: has a [..] left-hand side
  std::vector<IndexVarDecl> lhsVars;
  TypeDecl type;  // Input
  ExprPtr value;  // Let: the size expression; Assign: the right-hand side

  explicit Stmt(StmtKind k) : kind(k) {}
};

struct Module {
  std::vector<Stmt> stmts;
};

// Prints the module back as `.tex` source: one statement a line, every binary operation in
// parentheses, numbers as written. Parsing the output gives the same tree (tests check this).
std::string printModule(const Module& module);
std::string printExpr(const Expr& expr);

// Structural equality, ignoring source ranges.
bool equalModules(const Module& a, const Module& b);

}  // namespace texc
