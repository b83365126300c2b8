// Diagnostics in the format of gcc and clang:
//
//   FILE:LINE:COL: error: MESSAGE
//   <the source line>
//       ^~~~
//   FILE:LINE:COL: note: ...
//
// Diagnostics are collected (tests read them back) and printed at the end of a stage. After
// kMaxErrors errors the engine records one TooManyErrors (at the first error it drops) and drops
// the rest; passes poll shouldStop() to give up early.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/Source.h"

namespace texc {

enum class DiagId : uint16_t {
#define DIAG(Id, Severity, Format) Id,
#include "frontend/Diagnostics.def"
#undef DIAG
};

enum class Severity : uint8_t { Note, Warning, Error };

struct DiagInfo {
  DiagId id;
  const char* name;
  Severity severity;
  const char* format;
};

// The static table built from Diagnostics.def, in declaration order.
const std::vector<DiagInfo>& allDiagnostics();
const DiagInfo& diagInfo(DiagId id);

struct DiagNote {
  SourceRange range;  // may be invalid: a note without a location
  std::string message;
};

struct Diagnostic {
  DiagId id;
  Severity severity;
  SourceRange range;
  std::string message;
  std::vector<DiagNote> notes;
};

// A handle on a just-reported diagnostic, to attach notes; inert when it was dropped.
class DiagBuilder {
 public:
  explicit DiagBuilder(Diagnostic* d) : d_(d) {}
  template <typename... Args>
  DiagBuilder& note(SourceRange range, fmt::format_string<Args...> fmt, Args&&... args) {
    if (d_) d_->notes.push_back({range, fmt::format(fmt, std::forward<Args>(args)...)});
    return *this;
  }

 private:
  Diagnostic* d_;
};

class DiagnosticEngine {
 public:
  static constexpr int kMaxErrors = 20;

  explicit DiagnosticEngine(const SourceFile* file) : file_(file) {}

  // Reports diagnostic `id` at `range`, formatting its message with `args`. Returns a handle to
  // attach notes; the handle is inert when the diagnostic was dropped.
  template <typename... Args>
  DiagBuilder report(DiagId id, SourceRange range, Args&&... args) {
    std::string msg = fmt::vformat(diagInfo(id).format, fmt::make_format_args(args...));
    return DiagBuilder(add(id, range, std::move(msg)));
  }

  bool hasErrors() const { return errorCount_ > 0; }
  int errorCount() const { return errorCount_; }
  int warningCount() const { return warningCount_; }
  // True once an error has been dropped: stopping at exactly kMaxErrors would hide that more
  // errors exist, so passes go on until the first dropped one (which records TooManyErrors).
  bool shouldStop() const { return dropped_; }
  const std::vector<Diagnostic>& diagnostics() const { return diags_; }
  const SourceFile* file() const { return file_; }

  // Renders every diagnostic; `color` adds ANSI colours as clang does.
  void print(std::ostream& os, bool color) const;
  std::string render(bool color = false) const;

 private:
  Diagnostic* add(DiagId id, SourceRange range, std::string message);

  const SourceFile* file_;
  std::vector<Diagnostic> diags_;
  int errorCount_ = 0;
  int warningCount_ = 0;
  bool dropped_ = false;
};

// True when diagnostics to stderr should be coloured: stderr is a terminal and NO_COLOR is unset.
bool stderrWantsColor();

}  // namespace texc
