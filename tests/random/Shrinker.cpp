#include "tests/random/Shrinker.h"

#include <optional>
#include <vector>

#include "frontend/AST.h"
#include "frontend/Diagnostics.h"
#include "frontend/Parser.h"
#include "frontend/Source.h"

namespace texc::random {
namespace {

// A fresh tree of `text` (the tree holds unique pointers; reparsing is the simplest copy).
std::optional<Module> parseText(const std::string& text) {
  SourceFile file("shrink.tex", text);
  DiagnosticEngine diags(&file);
  Module m = parse(file, diags);
  if (diags.hasErrors()) return std::nullopt;
  return m;
}

// Every expression slot of the assignments, in pre-order: the places a replacement can go.
void collectSlots(ExprPtr& e, std::vector<ExprPtr*>& out) {
  out.push_back(&e);
  for (ExprPtr& a : e->args) collectSlots(a, out);
}
std::vector<ExprPtr*> slotsOf(Module& m) {
  std::vector<ExprPtr*> out;
  for (Stmt& s : m.stmts)
    if (s.kind == StmtKind::Assign && s.value) collectSlots(s.value, out);
  return out;
}

ExprPtr literalOne(SourceRange r) {
  auto e = std::make_unique<Expr>(ExprKind::Number, r);
  e->text = "1";
  e->number = 1;
  e->integer = 1;
  e->isInteger = true;
  return e;
}

class Shrinker {
 public:
  Shrinker(const std::function<bool(const std::string&)>& f, int maxAttempts) : stillFails_(f), maxAttempts_(maxAttempts) {}

  std::string run(const std::string& source) {
    best_ = source;
    // Normalise through the printer first, if the printed form still fails.
    if (std::optional<Module> m = parseText(source)) tryCandidate(printModule(*m), true);
    for (bool progress = true; progress && attempts_ < maxAttempts_;) {
      progress = removeStatements() || dropOutputs() || simplifyExpressions();
    }
    return best_;
  }

  int attempts_ = 0, accepted_ = 0;

 private:
  const std::function<bool(const std::string&)>& stillFails_;
  int maxAttempts_;
  std::string best_;

  // Only strictly shorter candidates count (the printed normal form excepted), so shrinking ends.
  bool tryCandidate(const std::string& text, bool allowLonger = false) {
    if (text == best_ || (!allowLonger && text.size() >= best_.size()) || attempts_ >= maxAttempts_) return false;
    ++attempts_;
    if (!stillFails_(text)) return false;
    best_ = text;
    ++accepted_;
    return true;
  }

  bool removeStatements() {
    std::optional<Module> m = parseText(best_);
    if (!m) return false;
    size_t n = m->stmts.size();
    for (size_t chunk = n / 2; chunk >= 1; chunk /= 2) {
      for (size_t start = 0; start + chunk <= n; start += chunk) {
        std::optional<Module> c = parseText(best_);
        c->stmts.erase(c->stmts.begin() + static_cast<long>(start), c->stmts.begin() + static_cast<long>(start + chunk));
        if (tryCandidate(printModule(*c))) return true;
      }
    }
    return false;
  }

  bool dropOutputs() {
    std::optional<Module> m = parseText(best_);
    if (!m) return false;
    for (size_t i = 0; i < m->stmts.size(); ++i) {
      if (!m->stmts[i].isOutput) continue;
      std::optional<Module> c = parseText(best_);
      c->stmts[i].isOutput = false;
      if (tryCandidate(printModule(*c))) return true;
    }
    return false;
  }

  bool simplifyExpressions() {
    std::optional<Module> m = parseText(best_);
    if (!m) return false;
    std::vector<ExprPtr*> slots = slotsOf(*m);
    for (size_t i = 0; i < slots.size(); ++i) {
      const Expr& e = **slots[i];
      // An index expression stays as it is: replacing it rarely keeps the program valid.
      if (e.kind == ExprKind::Index || e.kind == ExprKind::Number || e.kind == ExprKind::Name) {
        if (e.kind != ExprKind::Index) continue;
      }
      size_t operands = (e.kind == ExprKind::Index) ? 0 : e.args.size();
      for (size_t a = 0; a <= operands; ++a) {
        std::optional<Module> c = parseText(best_);
        std::vector<ExprPtr*> cs = slotsOf(*c);
        ExprPtr& slot = *cs[i];
        if (a < operands) {
          ExprPtr child = std::move(slot->args[a]);
          slot = std::move(child);
        } else {
          slot = literalOne(slot->range);
        }
        if (tryCandidate(printModule(*c))) return true;
      }
    }
    return false;
  }
};

}  // namespace

std::string shrinkProgram(const std::string& source, const std::function<bool(const std::string&)>& stillFails, int maxAttempts,
                          ShrinkStats* stats) {
  Shrinker s(stillFails, maxAttempts);
  std::string out = s.run(source);
  if (stats) *stats = {s.attempts_, s.accepted_};
  return out;
}

}  // namespace texc::random
