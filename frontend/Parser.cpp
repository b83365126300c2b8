#include "frontend/Parser.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "frontend/Lexer.h"
#include "frontend/Program.h"

namespace texc {

namespace {

// Thrown after an error has been reported; the statement loop catches it and resynchronises.
struct SyntaxError {};

class Parser {
 public:
  Parser(std::vector<Token> tokens, DiagnosticEngine& diags)
      : toks_(std::move(tokens)), holdsColon_(findColons(toks_)), diags_(diags) {}

  // module := (stmt? (NEWLINE | ';'))* EOF
  Module parseModule() {
    Module m;
    while (!diags_.shouldStop()) {
      depth_ = 0;
      bracketDepth_ = 0;
      const Token& t = cur();
      if (t.kind == TokenKind::Eof) break;
      if (t.kind == TokenKind::Newline || t.kind == TokenKind::Semicolon) {
        ++pos_;
        continue;
      }
      try {
        Stmt s = parseStatement();
        expectStatementEnd();
        m.stmts.push_back(std::move(s));
      } catch (const SyntaxError&) {
        recover();
      }
    }
    return m;
  }

 private:
  // ---- token access -------------------------------------------------------------------------
  // Inside ( ) or [ ] newlines do not end a statement, so they are skipped here.
  const Token& cur() {
    while (bracketDepth_ > 0 && toks_[pos_].kind == TokenKind::Newline) ++pos_;
    return toks_[pos_];
  }
  bool at(TokenKind k) { return cur().kind == k; }
  Token take() {
    Token t = cur();
    if (t.kind != TokenKind::Eof) ++pos_;
    return t;
  }
  bool accept(TokenKind k) {
    if (!at(k)) return false;
    take();
    return true;
  }
  [[noreturn]] void fail(DiagId id, SourceRange range, const std::string& a, const std::string& b = {}) {
    // A lexer error token was already reported; do not pile a parse error on top.
    if (cur().kind != TokenKind::Error) {
      if (b.empty()) diags_.report(id, range, a);
      else diags_.report(id, range, a, b);
    }
    throw SyntaxError{};
  }
  Token expect(TokenKind k, const char* what = nullptr) {
    if (!at(k)) fail(DiagId::ExpectedToken, cur().range, what ? what : describeTokenKind(k), describeToken(cur()));
    return take();
  }
  void open(TokenKind k) {
    expect(k);
    ++bracketDepth_;
  }
  Token close(TokenKind k) {
    Token t = expect(k);
    --bracketDepth_;
    return t;
  }

  void expectStatementEnd() {
    const Token& t = cur();
    if (t.kind == TokenKind::Newline || t.kind == TokenKind::Semicolon) {
      ++pos_;
      return;
    }
    if (t.kind == TokenKind::Eof) return;
    fail(DiagId::ExpectedToken, t.range, "end of statement (a newline or ';')", describeToken(t));
  }

  // Skips to the end of the statement that failed: the next newline or ';' outside brackets.
  void recover() {
    int depth = bracketDepth_;
    bracketDepth_ = 0;
    while (true) {
      const Token& t = toks_[pos_];
      if (t.kind == TokenKind::Eof) return;
      ++pos_;
      if (t.kind == TokenKind::LParen || t.kind == TokenKind::LBracket) ++depth;
      else if (t.kind == TokenKind::RParen || t.kind == TokenKind::RBracket) depth = std::max(0, depth - 1);
      else if (t.kind == TokenKind::Semicolon) return;
      else if (t.kind == TokenKind::Newline && depth == 0) return;
    }
  }

  // ---- statements ---------------------------------------------------------------------------
  // stmt := 'let' IDENT '=' expr
  //       | 'input' IDENT ':' type
  //       | 'output'? IDENT ('[' idxvar (',' idxvar)* ']')? '=' expr
  Stmt parseStatement() {
    Token first = cur();
    if (accept(TokenKind::KwLet)) {
      Stmt s(StmtKind::Let);
      Token name = expect(TokenKind::Identifier, "a name after 'let'");
      s.name = std::string(name.text);
      s.nameRange = name.range;
      expect(TokenKind::Assign);
      s.value = parseExpr();
      s.range = SourceRange::merge(first.range, s.value->range);
      return s;
    }
    if (accept(TokenKind::KwInput)) {
      Stmt s(StmtKind::Input);
      Token name = expect(TokenKind::Identifier, "a name after 'input'");
      s.name = std::string(name.text);
      s.nameRange = name.range;
      expect(TokenKind::Colon);
      SourceRange end = parseType(s.type);
      s.range = SourceRange::merge(first.range, end);
      return s;
    }
    Stmt s(StmtKind::Assign);
    s.isOutput = accept(TokenKind::KwOutput);
    if (!at(TokenKind::Identifier)) {
      if (s.isOutput) fail(DiagId::ExpectedToken, cur().range, "a name after 'output'", describeToken(cur()));
      fail(DiagId::ExpectedStatement, cur().range, describeToken(cur()));
    }
    Token name = take();
    s.name = std::string(name.text);
    s.nameRange = name.range;
    if (at(TokenKind::LBracket)) {
      s.indexForm = true;
      open(TokenKind::LBracket);
      do {
        s.lhsVars.push_back(parseIndexVar());
      } while (accept(TokenKind::Comma));
      close(TokenKind::RBracket);
    }
    expect(TokenKind::Assign);
    s.value = parseExpr();
    s.range = SourceRange::merge(first.range, s.value->range);
    return s;
  }

  // type := IDENT ('[' expr (',' expr)* ']')?
  SourceRange parseType(TypeDecl& type) {
    Token dtype = expect(TokenKind::Identifier, "a dtype (f32, f64, f16 or bf16)");
    type.dtype = std::string(dtype.text);
    type.dtypeRange = dtype.range;
    if (!parseDType(type.dtype)) fail(DiagId::UnknownDType, dtype.range, type.dtype);
    SourceRange end = dtype.range;
    if (at(TokenKind::LBracket)) {
      open(TokenKind::LBracket);
      do {
        type.dims.push_back(parseAdditive());
      } while (accept(TokenKind::Comma));
      end = close(TokenKind::RBracket).range;
    }
    return SourceRange::merge(dtype.range, end);
  }

  // idxvar := IDENT ('<' additive)?
  IndexVarDecl parseIndexVar() {
    Token name = expect(TokenKind::Identifier, "an index variable");
    IndexVarDecl v;
    v.name = std::string(name.text);
    v.range = name.range;
    if (accept(TokenKind::Less)) v.bound = parseAdditive();
    return v;
  }

  // ---- expressions --------------------------------------------------------------------------
  ExprPtr node(ExprKind kind, SourceRange range) { return std::make_unique<Expr>(kind, range); }

  ExprPtr binary(BinaryOp op, SourceRange opRange, ExprPtr lhs, ExprPtr rhs) {
    auto e = node(ExprKind::Binary, SourceRange::merge(lhs->range, rhs->range));
    e->binaryOp = op;
    e->opRange = opRange;
    e->depth = 1 + std::max(lhs->depth, rhs->depth);
    checkDepth(e->depth, opRange);
    e->args.push_back(std::move(lhs));
    e->args.push_back(std::move(rhs));
    return e;
  }

  // Bounds both the recursion of the parser and the height of the tree it builds, so later
  // recursive walks cannot overflow the stack either.
  void checkDepth(int depth, SourceRange where) {
    if (depth > kMaxNestingDepth) fail(DiagId::NestingTooDeep, where, std::to_string(kMaxNestingDepth));
  }

  struct DepthGuard {
    Parser& p;
    DepthGuard(Parser& parser, SourceRange where) : p(parser) {
      if (++p.depth_ > kMaxNestingDepth) {
        p.depth_ = 0;
        p.fail(DiagId::NestingTooDeep, where, std::to_string(kMaxNestingDepth));
      }
    }
    ~DepthGuard() { if (p.depth_ > 0) --p.depth_; }
  };

  // expr := or
  ExprPtr parseExpr() {
    DepthGuard guard(*this, cur().range);
    return parseOr();
  }

  // or := and ('||' and)*
  ExprPtr parseOr() {
    ExprPtr lhs = parseAnd();
    while (at(TokenKind::PipePipe)) {
      Token op = take();
      lhs = binary(BinaryOp::Or, op.range, std::move(lhs), parseAnd());
    }
    return lhs;
  }

  // and := cmp ('&&' cmp)*
  ExprPtr parseAnd() {
    ExprPtr lhs = parseComparison();
    while (at(TokenKind::AmpAmp)) {
      Token op = take();
      lhs = binary(BinaryOp::And, op.range, std::move(lhs), parseComparison());
    }
    return lhs;
  }

  static std::optional<BinaryOp> comparisonOp(TokenKind k) {
    switch (k) {
      case TokenKind::Less: return BinaryOp::Lt;
      case TokenKind::LessEqual: return BinaryOp::Le;
      case TokenKind::Greater: return BinaryOp::Gt;
      case TokenKind::GreaterEqual: return BinaryOp::Ge;
      case TokenKind::EqualEqual: return BinaryOp::Eq;
      case TokenKind::NotEqual: return BinaryOp::Ne;
      default: return std::nullopt;
    }
  }

  // cmp := additive (cmpop additive)?      -- comparisons do not chain
  ExprPtr parseComparison() {
    ExprPtr lhs = parseAdditive();
    if (auto op = comparisonOp(cur().kind)) {
      Token opTok = take();
      lhs = binary(*op, opTok.range, std::move(lhs), parseAdditive());
      if (comparisonOp(cur().kind)) fail(DiagId::ChainedComparison, cur().range, "");
    }
    return lhs;
  }

  // additive := term (('+' | '-') term)*
  ExprPtr parseAdditive() {
    ExprPtr lhs = parseTerm();
    while (at(TokenKind::Plus) || at(TokenKind::Minus)) {
      Token op = take();
      lhs = binary(op.kind == TokenKind::Plus ? BinaryOp::Add : BinaryOp::Sub, op.range, std::move(lhs), parseTerm());
    }
    return lhs;
  }

  // term := unary (('*' | '/' | '%') unary)*
  ExprPtr parseTerm() {
    ExprPtr lhs = parseUnary();
    while (at(TokenKind::Star) || at(TokenKind::Slash) || at(TokenKind::Percent)) {
      Token op = take();
      BinaryOp bop = op.kind == TokenKind::Star ? BinaryOp::Mul : op.kind == TokenKind::Slash ? BinaryOp::Div : BinaryOp::Mod;
      lhs = binary(bop, op.range, std::move(lhs), parseUnary());
    }
    return lhs;
  }

  // unary := ('-' | '!') unary | primary
  ExprPtr parseUnary() {
    if (at(TokenKind::Minus) || at(TokenKind::Bang)) {
      DepthGuard guard(*this, cur().range);
      Token op = take();
      ExprPtr operand = parseUnary();
      auto e = node(ExprKind::Unary, SourceRange::merge(op.range, operand->range));
      e->unaryOp = op.kind == TokenKind::Minus ? UnaryOp::Neg : UnaryOp::Not;
      e->opRange = op.range;
      e->depth = operand->depth + 1;
      e->args.push_back(std::move(operand));
      return e;
    }
    return parsePrimary();
  }

  // primary := INTEGER | FLOAT | 'inf' | '(' expr ')'
  //          | IDENT | IDENT '[' expr (',' expr)* ']' | IDENT '(' (expr (',' expr)*)? ')'
  //          | reduction | ('max' | 'min') '(' expr ',' expr ')'
  ExprPtr parsePrimary() {
    const Token& t = cur();
    switch (t.kind) {
      case TokenKind::Integer:
      case TokenKind::Float: return parseNumber(take());
      case TokenKind::KwInf: return node(ExprKind::Inf, take().range);
      case TokenKind::LParen: {
        Token lp = t;
        open(TokenKind::LParen);
        ExprPtr inner = parseExpr();
        Token rp = close(TokenKind::RParen);
        // Parentheses only group; widen the range so diagnostics underline them too.
        inner->range = SourceRange::merge(lp.range, rp.range);
        return inner;
      }
      case TokenKind::KwSum:
      case TokenKind::KwProd:
      case TokenKind::KwMax:
      case TokenKind::KwMin: return parseReductionOrMinMax();
      case TokenKind::Identifier: return parseNameUse();
      default: fail(DiagId::ExpectedExpression, t.range, describeToken(t));
    }
  }

  ExprPtr parseNumber(const Token& tok) {
    auto e = node(ExprKind::Number, tok.range);
    e->text = std::string(tok.text);
    const char* b = tok.text.data();
    const char* end = b + tok.text.size();
    if (tok.kind == TokenKind::Integer) {
      e->isInteger = true;
      auto [p, ec] = std::from_chars(b, end, e->integer);
      if (ec != std::errc() || p != end) fail(DiagId::IntegerTooLarge, tok.range, e->text);
      e->number = static_cast<double>(e->integer);
    } else {
      // from_chars does not take a leading '.', so parse "0" + text in that case.
      std::string buf = tok.text.front() == '.' ? "0" + e->text : e->text;
      auto [p, ec] = std::from_chars(buf.data(), buf.data() + buf.size(), e->number);
      if (ec == std::errc::result_out_of_range) {
        // from_chars leaves the value unset when out of range; strtod tells overflow (+-HUGE_VAL,
        // an error) from underflow (0 or a subnormal, kept).
        e->number = std::strtod(buf.c_str(), nullptr);
        if (std::isinf(e->number)) fail(DiagId::NumberOutOfRange, tok.range, e->text);
      }
      if (ec == std::errc::invalid_argument) fail(DiagId::MalformedNumber, tok.range, e->text);
      (void)p;
    }
    return e;
  }

  // IDENT | IDENT '[' expr (',' expr)* ']' | IDENT '(' args ')'
  ExprPtr parseNameUse() {
    Token name = take();
    if (at(TokenKind::LBracket)) {
      auto e = node(ExprKind::Index, name.range);
      e->name = std::string(name.text);
      e->nameRange = name.range;
      open(TokenKind::LBracket);
      do {
        e->args.push_back(parseExpr());
      } while (accept(TokenKind::Comma));
      e->range = SourceRange::merge(name.range, close(TokenKind::RBracket).range);
      finishDepth(*e);
      return e;
    }
    if (at(TokenKind::LParen)) return parseCall(name);
    auto e = node(ExprKind::Name, name.range);
    e->name = std::string(name.text);
    e->nameRange = name.range;
    return e;
  }

  ExprPtr parseCall(const Token& name) {
    auto e = node(ExprKind::Call, name.range);
    e->name = std::string(name.text);
    e->nameRange = name.range;
    open(TokenKind::LParen);
    if (!at(TokenKind::RParen)) {
      do {
        e->args.push_back(parseExpr());
      } while (accept(TokenKind::Comma));
    }
    e->range = SourceRange::merge(name.range, close(TokenKind::RParen).range);
    finishDepth(*e);
    return e;
  }

  void finishDepth(Expr& e) {
    for (const ExprPtr& a : e.args) e.depth = std::max(e.depth, a->depth + 1);
    checkDepth(e.depth, e.range);
  }

  // True when the parenthesis at the cursor holds a ':' at its own nesting level, which makes
  // `max(...)`/`min(...)` a reduction rather than the binary function.
  bool parenHoldsColon() const { return holdsColon_[pos_]; }

  // Finds, in one pass over the tokens, every bracket that holds a ':' at its own nesting level
  // before it closes (a ')' or ']' closes the innermost open bracket of either kind; a ';' or the
  // end of file cuts off every open one). Scanning ahead at each `max(` instead would be
  // quadratic in the nesting depth.
  static std::vector<bool> findColons(const std::vector<Token>& toks) {
    std::vector<bool> holds(toks.size(), false);
    std::vector<size_t> open;
    for (size_t i = 0; i < toks.size(); ++i) {
      switch (toks[i].kind) {
        case TokenKind::LParen:
        case TokenKind::LBracket: open.push_back(i); break;
        case TokenKind::RParen:
        case TokenKind::RBracket:
          if (!open.empty()) open.pop_back();
          break;
        case TokenKind::Colon:
          if (!open.empty()) holds[open.back()] = true;
          break;
        case TokenKind::Semicolon: open.clear(); break;
        default: break;
      }
    }
    return holds;
  }

  // reduction := ('sum' | 'max' | 'min' | 'prod') '(' idxvar (',' idxvar)* ':' expr ')'
  ExprPtr parseReductionOrMinMax() {
    Token kw = take();
    bool isMinMax = kw.kind == TokenKind::KwMax || kw.kind == TokenKind::KwMin;
    if (!at(TokenKind::LParen)) fail(DiagId::ExpectedToken, cur().range, "'(' after '" + std::string(kw.text) + "'", describeToken(cur()));
    if (isMinMax && !parenHoldsColon()) return parseCall(kw);
    if (!parenHoldsColon()) fail(DiagId::ReductionNeedsColon, kw.range, std::string(kw.text), std::string(kw.text));
    auto e = node(ExprKind::Reduce, kw.range);
    e->reduceKind = kw.kind == TokenKind::KwSum ? ReduceKind::Sum
                    : kw.kind == TokenKind::KwProd ? ReduceKind::Prod
                    : kw.kind == TokenKind::KwMax ? ReduceKind::Max
                                                  : ReduceKind::Min;
    e->name = std::string(kw.text);
    e->nameRange = kw.range;
    open(TokenKind::LParen);
    do {
      e->vars.push_back(parseIndexVar());
    } while (accept(TokenKind::Comma));
    expect(TokenKind::Colon);
    e->args.push_back(parseExpr());
    e->range = SourceRange::merge(kw.range, close(TokenKind::RParen).range);
    finishDepth(*e);
    return e;
  }

  std::vector<Token> toks_;
  std::vector<bool> holdsColon_;  // per token: a '(' or '[' that holds a ':' at its own level
  DiagnosticEngine& diags_;
  size_t pos_ = 0;
  int depth_ = 0;
  int bracketDepth_ = 0;
};

}  // namespace

Module parse(const SourceFile& file, DiagnosticEngine& diags) {
  std::vector<Token> tokens = lex(file, diags);
  return Parser(std::move(tokens), diags).parseModule();
}

}  // namespace texc
