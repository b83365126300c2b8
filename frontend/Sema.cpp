#include "frontend/Sema.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>

namespace texc {

namespace {

// ---- checked integer arithmetic (sizes and index ranges must not overflow silently) ---------
bool addOk(int64_t a, int64_t b, int64_t& r) { return !__builtin_add_overflow(a, b, &r); }
bool subOk(int64_t a, int64_t b, int64_t& r) { return !__builtin_sub_overflow(a, b, &r); }
bool mulOk(int64_t a, int64_t b, int64_t& r) { return !__builtin_mul_overflow(a, b, &r); }

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string typeText(DType t, const std::vector<int64_t>& shape) {
  return shape.empty() ? std::string(dtypeName(t)) : dtypeName(t) + shapeText(shape);
}

// What a name in the global scope denotes.
struct Symbol {
  enum class Kind { Let, Tensor } kind;
  int index;  // into lets_ or tensors_
  SourceRange def;
};

// An index variable in scope while a statement is analysed.
struct ScopedVar {
  std::string name;
  int id;
};

// One access that uses a variable alone as the index of a dimension: evidence for its range.
struct Evidence {
  int64_t extent;
  std::string what;  // "dimension 1 of 'x'"
  SourceRange range;
};

// Thrown when the current statement cannot be analysed further (its error is already reported).
struct StatementError {};

class Sema {
 public:
  Sema(const Module& m, DiagnosticEngine& d, const LetOverrides& o) : module_(m), diags_(d), overrides_(o) {
    // Where each name is first defined, for "defined later" notes.
    for (const Stmt& s : m.stmts) firstDef_.emplace(s.name, s.nameRange);
  }

  std::optional<Program> run() {
    for (size_t i = 0; i < module_.stmts.size() && !diags_.shouldStop(); ++i) {
      const Stmt& s = module_.stmts[i];
      try {
        switch (s.kind) {
          case StmtKind::Let: analyzeLet(s); break;
          case StmtKind::Input: analyzeInput(s); break;
          case StmtKind::Assign: analyzeAssign(s); break;
        }
      } catch (const StatementError&) {
        // Its error is reported; uses of the name it failed to define are not reported again.
        failed_.insert(s.name);
      }
    }
    if (!diags_.shouldStop() && outputs_ == 0 && !hadAssignErrors_) {
      SourceRange where = module_.stmts.empty() ? SourceRange{{0, 1, 1}, {0, 1, 1}} : module_.stmts.back().range;
      diags_.report(DiagId::NoOutput, where);
    }
    if (diags_.hasErrors()) return std::nullopt;
    return finish();
  }

 private:
  // ---- names -------------------------------------------------------------------------------
  const Symbol* lookup(const std::string& name) const {
    auto it = symbols_.find(name);
    return it == symbols_.end() ? nullptr : &it->second;
  }

  // Reports a redefinition and returns false when `name` is taken.
  bool declare(const std::string& name, SourceRange range, Symbol sym) {
    if (const Symbol* prev = lookup(name)) {
      diags_.report(DiagId::Redefinition, range, name).note(prev->def, "previous definition is here");
      return false;
    }
    symbols_.emplace(name, sym);
    return true;
  }

  void reportUndefined(const std::string& name, SourceRange range, const char* kindHint = nullptr) {
    if (failed_.count(name)) return;  // a cascade of an error already reported
    auto b = diags_.report(DiagId::UndefinedName, range, name);
    if (currentStmt_ && name == currentStmt_->name)
      b.note(currentStmt_->nameRange, "a statement cannot read the tensor it defines");
    else if (auto it = firstDef_.find(name); it != firstDef_.end() && it->second.begin.offset > range.begin.offset)
      b.note(it->second, "'{}' is defined later, here; names must be defined before they are used", name);
    else if (kindHint)
      b.note({}, "{}", kindHint);
  }

  std::string sourceText(SourceRange r) const {
    const SourceFile* f = diags_.file();
    if (!f || !r.valid() || r.end.offset > f->text().size() || r.end.offset < r.begin.offset) return "";
    return f->text().substr(r.begin.offset, r.end.offset - r.begin.offset);
  }

  // The source text of `r` on one line, as messages quote it: comments dropped, every run of
  // whitespace (newlines included) shown as one space.
  std::string compactText(SourceRange r) const {
    std::string text = sourceText(r), out;
    bool space = false;
    for (size_t i = 0; i < text.size(); ++i) {
      char c = text[i];
      if (c == '#') {
        while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
        space = true;
      } else if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        space = true;
      } else {
        if (space && !out.empty()) out += ' ';
        space = false;
        out += c;
      }
    }
    return out;
  }

  // ---- integer size expressions --------------------------------------------------------------
  static const char* describeForInt(const Expr& e) {
    switch (e.kind) {
      case ExprKind::Number: return "a fractional number";
      case ExprKind::Inf: return "'inf'";
      case ExprKind::Index: return "an indexed access";
      case ExprKind::Call: return "a function call";
      case ExprKind::Reduce: return "a reduction";
      case ExprKind::Unary: return "'!'";
      case ExprKind::Binary: return e.binaryOp == BinaryOp::And || e.binaryOp == BinaryOp::Or ? "a logical operator" : "a comparison";
      case ExprKind::Name: return "a name";
    }
    return "this";
  }

  int64_t evalInt(const Expr& e) {
    switch (e.kind) {
      case ExprKind::Number:
        if (!e.isInteger) break;
        return e.integer;
      case ExprKind::Name: {
        if (findScoped(e.name)) {
          diags_.report(DiagId::NotIntegerExpression, e.range, fmt::format("the index variable '{}'", e.name));
          throw StatementError{};
        }
        const Symbol* s = lookup(e.name);
        if (!s) {
          reportUndefined(e.name, e.range);
          throw StatementError{};
        }
        if (s->kind == Symbol::Kind::Let) return lets_[s->index].value;
        diags_.report(DiagId::NotIntegerExpression, e.range, fmt::format("the tensor '{}'", e.name));
        throw StatementError{};
      }
      case ExprKind::Unary:
        if (e.unaryOp == UnaryOp::Neg) {
          int64_t v = evalInt(*e.args[0]), r;
          if (!subOk(0, v, r)) overflow(e.opRange);
          return r;
        }
        break;
      case ExprKind::Binary: {
        if (e.binaryOp > BinaryOp::Mod) break;
        int64_t a = evalInt(*e.args[0]);
        int64_t b = evalInt(*e.args[1]);
        int64_t r = 0;
        switch (e.binaryOp) {
          case BinaryOp::Add: if (!addOk(a, b, r)) overflow(e.opRange); return r;
          case BinaryOp::Sub: if (!subOk(a, b, r)) overflow(e.opRange); return r;
          case BinaryOp::Mul: if (!mulOk(a, b, r)) overflow(e.opRange); return r;
          case BinaryOp::Div:
          case BinaryOp::Mod:
            if (b == 0) {
              diags_.report(DiagId::IntegerDivisionByZero, e.opRange);
              throw StatementError{};
            }
            if (a == std::numeric_limits<int64_t>::min() && b == -1) overflow(e.opRange);
            return e.binaryOp == BinaryOp::Div ? floorDiv(a, b) : floorMod(a, b);
          default: break;
        }
        break;
      }
      default: break;
    }
    SourceRange at = e.kind == ExprKind::Binary || e.kind == ExprKind::Unary ? e.opRange
                     : e.kind == ExprKind::Call || e.kind == ExprKind::Index || e.kind == ExprKind::Reduce ? e.nameRange
                                                                                                          : e.range;
    diags_.report(DiagId::NotIntegerExpression, at, describeForInt(e));
    throw StatementError{};
  }

  [[noreturn]] void overflow(SourceRange r) {
    diags_.report(DiagId::IntegerOverflow, r);
    throw StatementError{};
  }

  int64_t evalPositive(const Expr& e, const std::string& what) {
    int64_t v = evalInt(e);
    if (v <= 0) {
      diags_.report(DiagId::SizeNotPositive, e.range, what, v);
      throw StatementError{};
    }
    return v;
  }

  // ---- statements --------------------------------------------------------------------------
  void analyzeLet(const Stmt& s) {
    LetInfo let;
    let.name = s.name;
    let.range = s.nameRange;
    let.isLiteral = s.value->kind == ExprKind::Number && s.value->isInteger;
    auto ov = overrides_.find(s.name);
    if (let.isLiteral && ov != overrides_.end()) {
      let.value = ov->second;
      let.overridden = true;
    } else {
      let.value = evalInt(*s.value);
    }
    if (let.value <= 0) {
      diags_.report(DiagId::SizeNotPositive, s.value->range, fmt::format("'{}'", s.name), let.value);
      throw StatementError{};
    }
    if (!declare(s.name, s.nameRange, {Symbol::Kind::Let, static_cast<int>(lets_.size()), s.nameRange})) return;
    lets_.push_back(let);
  }

  // Every later stage computes a tensor's size in bytes as an int64: refuse tensors whose byte
  // count would not fit (2^62 bytes, far beyond any memory).
  void checkSize(const TensorInfo& t, SourceRange at) {
    int64_t bytes = dtypeBytes(t.dtype);
    for (int64_t d : t.shape)
      if (!mulOk(bytes, d, bytes) || bytes > (int64_t(1) << 62)) {
        diags_.report(DiagId::TensorTooLarge, at, t.name, typeText(t.dtype, t.shape));
        throw StatementError{};
      }
  }

  void analyzeInput(const Stmt& s) {
    TensorInfo t;
    t.name = s.name;
    t.isInput = true;
    t.defRange = s.nameRange;
    t.dtype = *parseDType(s.type.dtype);
    if (s.type.dims.size() > kMaxRank) {
      diags_.report(DiagId::RankTooLarge, s.type.dims[kMaxRank]->range, s.name, s.type.dims.size(), kMaxRank);
      throw StatementError{};
    }
    for (const ExprPtr& d : s.type.dims) t.shape.push_back(evalPositive(*d, "the extent"));
    checkSize(t, s.nameRange);
    if (!declare(s.name, s.nameRange, {Symbol::Kind::Tensor, static_cast<int>(tensors_.size()), s.nameRange})) return;
    tensors_.push_back({std::move(t), {}, false});
  }

  void analyzeAssign(const Stmt& s) {
    currentStmt_ = &s;
    struct Reset {
      Sema& self;
      ~Reset() {
        self.currentStmt_ = nullptr;
        self.scope_.clear();
        self.scopeIndex_.clear();
        self.evidence_.clear();
      }
    } reset{*this};
    int errorsBefore = diags_.errorCount();
    try {
      analyzeAssignBody(s);
    } catch (const StatementError&) {
      hadAssignErrors_ = true;
      throw;
    }
    if (diags_.errorCount() != errorsBefore) hadAssignErrors_ = true;
  }

  void analyzeAssignBody(const Stmt& s) {
    Computation comp;
    comp.wholeTensorForm = !s.indexForm;
    comp.range = s.range;
    comp.statement = static_cast<int>(&s - module_.stmts.data());
    comp_ = &comp;
    wholeForm_ = !s.indexForm;
    reduceCount_ = 0;
    if (const Symbol* prev = lookup(s.name)) {
      diags_.report(DiagId::Redefinition, s.nameRange, s.name).note(prev->def, "previous definition is here");
      throw StatementError{};
    }

    if (s.lhsVars.size() > kMaxRank) {
      diags_.report(DiagId::RankTooLarge, s.lhsVars[kMaxRank].range, s.name, s.lhsVars.size(), kMaxRank);
      throw StatementError{};
    }
    for (const IndexVarDecl& v : s.lhsVars) declareIndexVar(v, -1);
    comp.numLhsVars = static_cast<int>(comp.vars.size());

    std::vector<int64_t> shape;
    int errorsBefore = diags_.errorCount();
    comp.body = analyzeValue(*s.value, shape, -1);
    if (diags_.errorCount() != errorsBefore) throw StatementError{};
    if (comp.body.isBool) {
      diags_.report(DiagId::BooleanNotAllowed, s.value->range, describeBool(*s.value));
      throw StatementError{};
    }

    if (wholeForm_) desugarWholeForm(comp, shape);
    resolveRanges(comp, s);
    checkBounds(comp.body, comp);
    if (diags_.errorCount() != errorsBefore) throw StatementError{};

    TensorInfo t;
    t.name = s.name;
    t.isOutput = s.isOutput;
    t.defRange = s.nameRange;
    for (int i = 0; i < comp.numLhsVars; ++i) t.shape.push_back(comp.vars[i].extent);
    t.dtype = resultDType(comp.body);
    checkSize(t, s.nameRange);
    comp.numReduces = reduceCount_;
    int id = static_cast<int>(tensors_.size());
    comp.tensor = id;
    symbols_.emplace(s.name, Symbol{Symbol::Kind::Tensor, id, s.nameRange});
    tensors_.push_back({std::move(t), std::move(comp), true});
    if (s.isOutput) ++outputs_;
  }

  static const char* describeBool(const Expr& e) {
    if (e.kind == ExprKind::Binary && isLogical(e.binaryOp)) return "logical operator";
    if (e.kind == ExprKind::Unary) return "logical negation";
    return "comparison";
  }

  // Declares an index variable (left-hand side when reduce < 0) and returns its id.
  int declareIndexVar(const IndexVarDecl& v, int reduce) {
    if (const Symbol* sym = lookup(v.name)) {
      const char* what = sym->kind == Symbol::Kind::Let ? "the size constant" : "the tensor";
      diags_.report(DiagId::IndexVarShadows, v.range, v.name, fmt::format("{} '{}'", what, v.name))
          .note(sym->def, "'{}' is defined here", v.name);
      throw StatementError{};
    }
    if (const ScopedVar* sv = findScoped(v.name)) {
      diags_.report(DiagId::IndexVarShadows, v.range, v.name, "another index variable in scope")
          .note(comp_->vars[sv->id].declRange, "'{}' is declared here", v.name);
      throw StatementError{};
    }
    if (currentStmt_ && v.name == currentStmt_->name) {
      diags_.report(DiagId::IndexVarShadows, v.range, v.name, fmt::format("the tensor '{}' being defined", v.name));
      throw StatementError{};
    }
    IndexVar iv;
    iv.name = v.name;
    iv.declRange = v.range;
    iv.isReduction = reduce >= 0;
    iv.reduction = reduce;
    if (v.bound) {
      iv.extent = evalPositive(*v.bound, fmt::format("the bound of '{}'", v.name));
      iv.source = RangeSource::Bound;
      iv.sourceRange = v.bound->range;
      iv.sourceText = fmt::format("bound {}", compactText(v.bound->range));
    } else {
      iv.source = RangeSource::Inferred;
    }
    int id = static_cast<int>(comp_->vars.size());
    comp_->vars.push_back(std::move(iv));
    evidence_.emplace_back();
    scopeIndex_.emplace(v.name, scope_.size());
    scope_.push_back({v.name, id});
    return id;
  }

  // Names in scope are unique (a duplicate is an error), so a hash map finds them; a linear
  // search would make a long list of index variables quadratic.
  const ScopedVar* findScoped(const std::string& name) const {
    auto it = scopeIndex_.find(name);
    return it == scopeIndex_.end() ? nullptr : &scope_[it->second];
  }

  // Drops the index variables declared since the scope held `size` of them.
  void popScope(size_t size) {
    for (size_t i = size; i < scope_.size(); ++i) scopeIndex_.erase(scope_[i].name);
    scope_.resize(size);
  }

  // ---- value expressions ---------------------------------------------------------------------
  // Analyses `e`; `shape` receives its broadcast shape (whole-tensor form; empty in index form).
  Value analyzeValue(const Expr& e, std::vector<int64_t>& shape, int reduce) {
    Value v;
    v.range = e.range;
    shape.clear();
    switch (e.kind) {
      case ExprKind::Number:
        v.kind = ValueKind::Const;
        v.constant = e.number;
        return v;
      case ExprKind::Inf:
        v.kind = ValueKind::Const;
        v.constant = std::numeric_limits<double>::infinity();
        return v;
      case ExprKind::Name: return analyzeName(e, shape, reduce);
      case ExprKind::Index: return analyzeAccess(e, reduce);
      case ExprKind::Unary: {
        std::vector<int64_t> s;
        v.kind = ValueKind::Unary;
        v.unaryOp = e.unaryOp;
        v.args.push_back(analyzeValue(*e.args[0], s, reduce));
        if (e.unaryOp == UnaryOp::Not) {
          if (!v.args[0].isBool) diags_.report(DiagId::LogicNeedsBoolean, e.args[0]->range, "!");
          v.isBool = true;
        } else {
          requireNumber(v.args[0], *e.args[0]);
        }
        shape = s;
        return v;
      }
      case ExprKind::Binary: {
        if (e.binaryOp == BinaryOp::Mod) {
          diags_.report(DiagId::ModuloInValue, e.opRange);
          throw StatementError{};
        }
        std::vector<int64_t> sa, sb;
        v.kind = ValueKind::Binary;
        v.binaryOp = e.binaryOp;
        v.args.push_back(analyzeValue(*e.args[0], sa, reduce));
        v.args.push_back(analyzeValue(*e.args[1], sb, reduce));
        if (isLogical(e.binaryOp)) {
          for (int i = 0; i < 2; ++i)
            if (!v.args[i].isBool) diags_.report(DiagId::LogicNeedsBoolean, e.args[i]->range, spelling(e.binaryOp));
          v.isBool = true;
        } else {
          requireNumber(v.args[0], *e.args[0]);
          requireNumber(v.args[1], *e.args[1]);
          v.isBool = isComparison(e.binaryOp);
        }
        shape = broadcast(sa, sb, e.opRange);
        return v;
      }
      case ExprKind::Call: return analyzeCall(e, shape, reduce);
      case ExprKind::Reduce: return analyzeReduce(e, shape);
    }
    return v;
  }

  void requireNumber(const Value& v, const Expr& e) {
    if (v.isBool) diags_.report(DiagId::BooleanNotAllowed, e.range, describeBool(e));
  }

  std::vector<int64_t> broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b, SourceRange at) {
    size_t n = std::max(a.size(), b.size());
    std::vector<int64_t> out(n);
    for (size_t i = 0; i < n; ++i) {
      int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
      int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
      if (x != y && x != 1 && y != 1) {
        diags_.report(DiagId::ShapeMismatch, at, shapeText(a), shapeText(b));
        throw StatementError{};
      }
      out[i] = x == 1 ? y : x;
    }
    return out;
  }

  Value analyzeName(const Expr& e, std::vector<int64_t>& shape, int reduce) {
    Value v;
    v.range = e.range;
    if (const ScopedVar* sv = findScoped(e.name)) {
      v.kind = ValueKind::IndexValue;
      v.var = sv->id;
      return v;
    }
    const Symbol* sym = lookup(e.name);
    if (!sym) {
      reportUndefined(e.name, e.range);
      throw StatementError{};
    }
    if (sym->kind == Symbol::Kind::Let) {
      v.kind = ValueKind::Const;
      v.constant = static_cast<double>(lets_[sym->index].value);
      return v;
    }
    const TensorInfo& t = tensors_[sym->index].info;
    v.kind = ValueKind::Access;
    v.tensor = sym->index;
    v.ownerReduce = reduce;
    if (!t.shape.empty()) {
      if (!wholeForm_) {
        diags_.report(DiagId::BareTensorInIndexForm, e.range, e.name, t.shape.size(), e.name);
        throw StatementError{};
      }
      shape = t.shape;  // indices are filled in by desugarWholeForm
    }
    return v;
  }

  Value analyzeAccess(const Expr& e, int reduce) {
    Value v;
    v.range = e.range;
    if (const ScopedVar* sv = findScoped(e.name)) {
      (void)sv;
      diags_.report(DiagId::NotATensor, e.nameRange, e.name, "an index variable");
      throw StatementError{};
    }
    const Symbol* sym = lookup(e.name);
    if (!sym) {
      reportUndefined(e.name, e.nameRange);
      throw StatementError{};
    }
    if (sym->kind == Symbol::Kind::Let) {
      diags_.report(DiagId::NotATensor, e.nameRange, e.name, "a size constant");
      throw StatementError{};
    }
    const TensorInfo& t = tensors_[sym->index].info;
    if (t.shape.size() != e.args.size()) {
      diags_.report(DiagId::RankMismatch, e.range, e.name, t.shape.size(), e.args.size(), e.args.size() == 1 ? "index" : "indices")
          .note(t.defRange, "'{}' is declared here as {}", e.name, typeText(t.dtype, t.shape));
      throw StatementError{};
    }
    v.kind = ValueKind::Access;
    v.tensor = sym->index;
    v.ownerReduce = reduce;
    for (size_t d = 0; d < e.args.size(); ++d) {
      IndexExpr ix = analyzeIndex(*e.args[d]);
      ix.range = e.args[d]->range;
      if (ix.kind == IndexExpr::Kind::Var)
        evidence_[ix.var].push_back({t.shape[d], fmt::format("dimension {} of '{}' ({})", d, e.name, typeText(t.dtype, t.shape)), ix.range});
      v.indices.push_back(std::move(ix));
    }
    // Spec 4: in a whole-tensor statement, indexed accesses live only inside reductions.
    if (wholeForm_ && reduce < 0) {
      diags_.report(DiagId::IndexedAccessOutsideReduction, e.range, e.name, e.name);
      throw StatementError{};
    }
    return v;
  }

  Value analyzeCall(const Expr& e, std::vector<int64_t>& shape, int reduce) {
    Value v;
    v.range = e.range;
    auto b = lookupBuiltin(e.name);
    if (!b) {
      if (findScoped(e.name) || lookup(e.name)) diags_.report(DiagId::NotAFunction, e.nameRange, e.name);
      else diags_.report(DiagId::UnknownFunction, e.nameRange, e.name);
      throw StatementError{};
    }
    int arity = builtinArity(*b);
    if (static_cast<int>(e.args.size()) != arity) {
      diags_.report(DiagId::WrongArity, e.nameRange, e.name, fmt::format("{} argument{}", arity, arity == 1 ? "" : "s"),
                    fmt::format("{} {}", e.args.size(), e.args.size() == 1 ? "was" : "were"));
      throw StatementError{};
    }
    v.kind = ValueKind::Call;
    v.builtin = *b;
    for (size_t i = 0; i < e.args.size(); ++i) {
      std::vector<int64_t> s;
      v.args.push_back(analyzeValue(*e.args[i], s, reduce));
      bool wantBool = *b == Builtin::Select && i == 0;
      if (wantBool && !v.args[i].isBool) diags_.report(DiagId::SelectNeedsBoolean, e.args[i]->range);
      if (!wantBool) requireNumber(v.args[i], *e.args[i]);
      shape = i == 0 ? s : broadcast(shape, s, e.nameRange);
    }
    return v;
  }

  Value analyzeReduce(const Expr& e, std::vector<int64_t>& shape) {
    Value v;
    v.range = e.range;
    v.kind = ValueKind::Reduce;
    v.reduceKind = e.reduceKind;
    v.reduceId = reduceCount_++;
    size_t scopeSize = scope_.size();
    for (const IndexVarDecl& d : e.vars) v.reduceVars.push_back(declareIndexVar(d, v.reduceId));
    v.args.push_back(analyzeValue(*e.args[0], shape, v.reduceId));
    requireNumber(v.args[0], *e.args[0]);
    popScope(scopeSize);
    return v;
  }

  // ---- index expressions ---------------------------------------------------------------------
  [[noreturn]] void notAffine(const Expr& e, const std::string& why) {
    diags_.report(DiagId::IndexNotAffine, e.range, why);
    throw StatementError{};
  }

  IndexExpr analyzeIndex(const Expr& e) {
    IndexExpr r;
    r.range = e.range;
    switch (e.kind) {
      case ExprKind::Number:
        if (!e.isInteger) notAffine(e, fmt::format("the number '{}' is not an integer", e.text));
        return IndexExpr::makeConst(e.integer);
      case ExprKind::Name: {
        if (const ScopedVar* sv = findScoped(e.name)) return IndexExpr::makeVar(sv->id);
        const Symbol* sym = lookup(e.name);
        if (!sym) {
          if (wholeForm_) {
            diags_.report(DiagId::UnboundIndexInWholeForm, e.range, e.name);
            throw StatementError{};
          }
          reportUndefined(e.name, e.range);
          throw StatementError{};
        }
        if (sym->kind == Symbol::Kind::Let) return IndexExpr::makeConst(lets_[sym->index].value);
        notAffine(e, fmt::format("the tensor '{}' cannot be used inside an index", e.name));
      }
      case ExprKind::Unary: {
        if (e.unaryOp != UnaryOp::Neg) notAffine(e, "'!' is not an integer operation");
        IndexExpr a = analyzeIndex(*e.args[0]);
        return scale(std::move(a), -1, e);
      }
      case ExprKind::Binary: {
        IndexExpr a = analyzeIndex(*e.args[0]);
        IndexExpr b = analyzeIndex(*e.args[1]);
        bool ca = a.kind == IndexExpr::Kind::Const, cb = b.kind == IndexExpr::Kind::Const;
        switch (e.binaryOp) {
          case BinaryOp::Add:
          case BinaryOp::Sub: {
            if (ca && cb) {
              int64_t v;
              bool ok = e.binaryOp == BinaryOp::Add ? addOk(a.constant, b.constant, v) : subOk(a.constant, b.constant, v);
              if (!ok) overflow(e.opRange);
              return IndexExpr::makeConst(v);
            }
            r.kind = e.binaryOp == BinaryOp::Add ? IndexExpr::Kind::Add : IndexExpr::Kind::Sub;
            r.ops.push_back(std::move(a));
            r.ops.push_back(std::move(b));
            return r;
          }
          case BinaryOp::Mul:
            if (cb) return scale(std::move(a), b.constant, e);
            if (ca) return scale(std::move(b), a.constant, e);
            notAffine(e, "a product of two index variables");
          case BinaryOp::Div:
          case BinaryOp::Mod: {
            const char* op = e.binaryOp == BinaryOp::Div ? "/" : "%";
            if (!cb) notAffine(e, fmt::format("'{}' by a value that is not a constant", op));
            if (b.constant <= 0) {
              diags_.report(DiagId::IndexDivisorNotPositive, e.opRange, op, b.constant);
              throw StatementError{};
            }
            if (ca) return IndexExpr::makeConst(e.binaryOp == BinaryOp::Div ? floorDiv(a.constant, b.constant) : floorMod(a.constant, b.constant));
            r.kind = e.binaryOp == BinaryOp::Div ? IndexExpr::Kind::FloorDiv : IndexExpr::Kind::Mod;
            r.constant = b.constant;
            r.ops.push_back(std::move(a));
            return r;
          }
          default: notAffine(e, fmt::format("'{}' is not an integer operation", spelling(e.binaryOp)));
        }
      }
      case ExprKind::Inf: notAffine(e, "'inf' is not an integer");
      case ExprKind::Index: notAffine(e, "a tensor element cannot be used as an index");
      case ExprKind::Call: notAffine(e, "function calls are not allowed in an index");
      case ExprKind::Reduce: notAffine(e, "reductions are not allowed in an index");
    }
    return r;
  }

  IndexExpr scale(IndexExpr a, int64_t c, const Expr& e) {
    if (a.kind == IndexExpr::Kind::Const) {
      int64_t v;
      if (!mulOk(a.constant, c, v)) overflow(e.opRange);
      return IndexExpr::makeConst(v);
    }
    IndexExpr r;
    r.kind = IndexExpr::Kind::Mul;
    r.constant = c;
    r.range = e.range;
    r.ops.push_back(std::move(a));
    return r;
  }

  // ---- whole-tensor form ---------------------------------------------------------------------
  // Gives the statement fresh left-hand variables for its broadcast shape and indexes every bare
  // tensor with them, numpy style: shapes align on the right; a dimension of 1 is read at 0.
  void desugarWholeForm(Computation& comp, const std::vector<int64_t>& shape) {
    std::vector<int> lhs;
    for (size_t d = 0; d < shape.size(); ++d) {
      IndexVar iv;
      iv.name = freshName(comp, d);
      iv.extent = shape[d];
      iv.source = RangeSource::Broadcast;
      iv.sourceRange = comp.range;
      iv.sourceText = fmt::format("dimension {} of the broadcast shape {}", d, shapeText(shape));
      lhs.push_back(static_cast<int>(d));
      comp.vars.insert(comp.vars.begin() + d, std::move(iv));
      evidence_.insert(evidence_.begin() + d, std::vector<Evidence>{});
    }
    int shift = static_cast<int>(shape.size());
    comp.numLhsVars = shift;
    fillBroadcast(comp.body, shape, shift);
  }

  std::string freshName(const Computation& comp, size_t d) {
    std::string name = fmt::format("i{}", d);
    auto taken = [&](const std::string& n) {
      if (lookup(n) || n == currentStmt_->name) return true;
      for (const IndexVar& v : comp.vars)
        if (v.name == n) return true;
      return false;
    };
    while (taken(name)) name = "_" + name;
    return name;
  }

  void fillBroadcast(Value& v, const std::vector<int64_t>& shape, int shift) {
    if (v.kind == ValueKind::Access) {
      for (IndexExpr& ix : v.indices) shiftVars(ix, shift);
      const TensorInfo& t = tensors_[v.tensor].info;
      if (v.indices.empty() && !t.shape.empty()) {
        size_t off = shape.size() - t.shape.size();
        for (size_t d = 0; d < t.shape.size(); ++d) {
          IndexExpr ix = t.shape[d] == 1 && shape[off + d] != 1 ? IndexExpr::makeConst(0) : IndexExpr::makeVar(static_cast<int>(off + d));
          ix.range = v.range;
          v.indices.push_back(std::move(ix));
        }
      }
    }
    if (v.kind == ValueKind::IndexValue) v.var += shift;
    if (v.kind == ValueKind::Reduce)
      for (int& rv : v.reduceVars) rv += shift;
    for (Value& a : v.args) fillBroadcast(a, shape, shift);
  }

  // Every variable at once (v -> v + shift): a renaming, not the substitution of one variable.
  static void shiftVars(IndexExpr& ix, int shift) {
    if (ix.kind == IndexExpr::Kind::Var) ix.var += shift;
    for (IndexExpr& o : ix.ops) shiftVars(o, shift);
  }

  // ---- ranges --------------------------------------------------------------------------------
  void resolveRanges(Computation& comp, const Stmt& s) {
    bool failed = false;
    for (size_t id = 0; id < comp.vars.size(); ++id) {
      IndexVar& v = comp.vars[id];
      if (v.source != RangeSource::Inferred) continue;
      const std::vector<Evidence>& ev = evidence_[id];
      if (ev.empty()) {
        bool lhs = static_cast<int>(id) < comp.numLhsVars;
        if (lhs && !mentions(comp.body, static_cast<int>(id)))
          diags_.report(DiagId::LhsVarUnused, v.declRange, v.name, v.name);
        else
          diags_.report(DiagId::RangeUnknown, v.declRange, v.name, v.name);
        failed = true;
        continue;
      }
      for (size_t k = 1; k < ev.size(); ++k) {
        if (ev[k].extent != ev[0].extent) {
          diags_.report(DiagId::RangeConflict, ev[k].range, v.name, ev[k].extent, ev[k].what)
              .note(ev[0].range, "but {} from {} here", ev[0].extent, ev[0].what);
          failed = true;
          break;
        }
      }
      v.extent = ev[0].extent;
      v.sourceRange = ev[0].range;
      v.sourceText = fmt::format("inferred from {}", ev[0].what);
    }
    (void)s;
    if (failed) throw StatementError{};
  }

  static bool mentions(const Value& v, int var) {
    if (v.kind == ValueKind::IndexValue && v.var == var) return true;
    for (const IndexExpr& ix : v.indices)
      if (mentionsIndex(ix, var)) return true;
    for (const Value& a : v.args)
      if (mentions(a, var)) return true;
    return false;
  }
  static bool mentionsIndex(const IndexExpr& ix, int var) {
    if (ix.kind == IndexExpr::Kind::Var) return ix.var == var;
    for (const IndexExpr& o : ix.ops)
      if (mentionsIndex(o, var)) return true;
    return false;
  }

  // ---- bounds analysis -----------------------------------------------------------------------
  // The range of `ix` over the variables' boxes. Affine parts are summed term by term after
  // collecting coefficients per variable (exact); floor division and modulo apply to the exact
  // range of their operand.
  Interval rangeOf(const IndexExpr& ix, const Computation& comp) {
    std::vector<int64_t> coeff(comp.vars.size(), 0);
    std::vector<std::pair<const IndexExpr*, int64_t>> atoms;
    int64_t c0 = 0;
    linearize(ix, 1, coeff, atoms, c0, ix.range);
    Interval r{c0, c0};
    auto addTerm = [&](int64_t c, Interval in) {
      int64_t a, b;
      if (!mulOk(c, in.lo, a) || !mulOk(c, in.hi, b)) overflow(ix.range);
      if (a > b) std::swap(a, b);
      if (!addOk(r.lo, a, r.lo) || !addOk(r.hi, b, r.hi)) overflow(ix.range);
    };
    for (size_t v = 0; v < coeff.size(); ++v)
      if (coeff[v] != 0) addTerm(coeff[v], {0, comp.vars[v].extent - 1});
    for (auto& [atom, c] : atoms) {
      Interval in = rangeOf(atom->ops[0], comp);
      int64_t k = atom->constant;
      Interval out;
      if (atom->kind == IndexExpr::Kind::FloorDiv) {
        out = {floorDiv(in.lo, k), floorDiv(in.hi, k)};
      } else if (floorDiv(in.lo, k) == floorDiv(in.hi, k)) {
        out = {floorMod(in.lo, k), floorMod(in.hi, k)};  // within one period
      } else {
        out = {0, k - 1};
      }
      addTerm(c, out);
    }
    return r;
  }

  // Not affineForm (IndexAlgebra.h): that merges equal atoms (x / 2 - x / 2 cancels, which
  // would change the range and so which accesses are guarded), and it misses an overflow of
  // c * constant that the sum brings back into int64; here every step is checked.
  void linearize(const IndexExpr& ix, int64_t c, std::vector<int64_t>& coeff,
                 std::vector<std::pair<const IndexExpr*, int64_t>>& atoms, int64_t& c0, SourceRange at) {
    int64_t t;
    switch (ix.kind) {
      case IndexExpr::Kind::Const:
        if (!mulOk(c, ix.constant, t) || !addOk(c0, t, c0)) overflow(at);
        return;
      case IndexExpr::Kind::Var:
        if (!addOk(coeff[ix.var], c, coeff[ix.var])) overflow(at);
        return;
      case IndexExpr::Kind::Add:
        linearize(ix.ops[0], c, coeff, atoms, c0, at);
        linearize(ix.ops[1], c, coeff, atoms, c0, at);
        return;
      case IndexExpr::Kind::Sub:
        linearize(ix.ops[0], c, coeff, atoms, c0, at);
        if (!subOk(0, c, t)) overflow(at);
        linearize(ix.ops[1], t, coeff, atoms, c0, at);
        return;
      case IndexExpr::Kind::Mul:
        if (!mulOk(c, ix.constant, t)) overflow(at);
        linearize(ix.ops[0], t, coeff, atoms, c0, at);
        return;
      case IndexExpr::Kind::FloorDiv:
      case IndexExpr::Kind::Mod: atoms.push_back({&ix, c}); return;
    }
  }

  void checkBounds(Value& v, const Computation& comp) {
    if (v.kind == ValueKind::Access) {
      const TensorInfo& t = tensors_[v.tensor].info;
      for (size_t d = 0; d < v.indices.size(); ++d) {
        Interval r = rangeOf(v.indices[d], comp);
        v.indexRanges.push_back(r);
        if (r.lo >= 0 && r.hi < t.shape[d]) continue;
        if (v.ownerReduce >= 0) {
          v.check = AccessCheck::Guarded;
        } else {
          diags_.report(DiagId::OutOfBounds, v.indices[d].range, compactText(v.range), compactText(v.indices[d].range),
                        r.lo, r.hi, d, t.name, t.shape[d])
              .note({}, "only accesses inside a reduction may fall outside: their terms are skipped");
        }
      }
    }
    for (Value& a : v.args) checkBounds(a, comp);
  }

  // ---- dtypes --------------------------------------------------------------------------------
  DType resultDType(const Value& body) {
    bool any = false, f64 = false, f32 = false, f16 = false, bf16 = false;
    forEachValue(body, [&](const Value& v) {
      if (v.kind != ValueKind::Access) return;
      any = true;
      switch (tensors_[v.tensor].info.dtype) {
        case DType::F64: f64 = true; break;
        case DType::F32: f32 = true; break;
        case DType::F16: f16 = true; break;
        case DType::BF16: bf16 = true; break;
      }
    });
    if (!any || f32) return f64 ? DType::F64 : DType::F32;
    if (f64) return DType::F64;
    if (f16 && bf16) return DType::F32;  // neither holds the other: widen to f32
    return f16 ? DType::F16 : DType::BF16;
  }

  // ---- liveness and the final program --------------------------------------------------------
  Program finish() {
    std::vector<bool> live(tensors_.size(), false);
    for (size_t i = tensors_.size(); i-- > 0;) {
      Entry& e = tensors_[i];
      if (e.info.isInput) {
        live[i] = true;
        continue;
      }
      if (e.info.isOutput) live[i] = true;
      if (!live[i]) continue;
      forEachValue(e.comp.body, [&](const Value& v) {
        if (v.kind == ValueKind::Access) live[v.tensor] = true;
      });
    }
    Program p;
    p.lets = lets_;
    std::vector<int> remap(tensors_.size(), -1);
    for (size_t i = 0; i < tensors_.size(); ++i) {
      Entry& e = tensors_[i];
      if (!live[i]) {
        diags_.report(DiagId::UnusedTensor, e.info.defRange, e.info.name);
        continue;
      }
      remap[i] = static_cast<int>(p.tensors.size());
      p.tensors.push_back(e.info);
    }
    for (size_t i = 0; i < tensors_.size(); ++i) {
      Entry& e = tensors_[i];
      if (remap[i] < 0) continue;
      int id = remap[i];
      if (e.info.isInput) p.inputs.push_back(id);
      if (e.info.isOutput) p.outputs.push_back(id);
      if (!e.hasComp) continue;
      Computation c = std::move(e.comp);
      c.tensor = id;
      renumber(c.body, remap);
      p.tensors[id].computation = static_cast<int>(p.computations.size());
      p.computations.push_back(std::move(c));
    }
    return p;
  }

  static void renumber(Value& v, const std::vector<int>& remap) {
    if (v.kind == ValueKind::Access) v.tensor = remap[v.tensor];
    for (Value& a : v.args) renumber(a, remap);
  }

  struct Entry {
    TensorInfo info;
    Computation comp;
    bool hasComp;
  };

  const Module& module_;
  DiagnosticEngine& diags_;
  const LetOverrides& overrides_;
  std::unordered_map<std::string, SourceRange> firstDef_;
  std::unordered_set<std::string> failed_;  // names whose defining statement had an error
  std::unordered_map<std::string, Symbol> symbols_;
  std::vector<LetInfo> lets_;
  std::vector<Entry> tensors_;
  int outputs_ = 0;
  bool hadAssignErrors_ = false;

  // State of the statement being analysed.
  const Stmt* currentStmt_ = nullptr;
  Computation* comp_ = nullptr;
  bool wholeForm_ = false;
  int reduceCount_ = 0;
  std::vector<ScopedVar> scope_;
  std::unordered_map<std::string, size_t> scopeIndex_;  // name -> position in scope_
  std::vector<std::vector<Evidence>> evidence_;
};

}  // namespace

std::optional<std::string> checkOverrides(const Module& module, const LetOverrides& overrides) {
  for (const auto& [name, value] : overrides) {
    const Stmt* let = nullptr;
    for (const Stmt& s : module.stmts)
      if (s.kind == StmtKind::Let && s.name == name) let = &s;
    if (!let) return fmt::format("-D {}: the program has no 'let {}'", name, name);
    if (!(let->value->kind == ExprKind::Number && let->value->isInteger))
      return fmt::format("-D {}: 'let {}' is computed from other sizes, so it cannot be overridden; override the literal sizes it depends on", name, name);
    if (value <= 0) return fmt::format("-D {}={}: sizes must be > 0", name, value);
  }
  return std::nullopt;
}

std::optional<Program> analyze(const Module& module, DiagnosticEngine& diags, const LetOverrides& overrides) {
  return Sema(module, diags, overrides).run();
}

}  // namespace texc
