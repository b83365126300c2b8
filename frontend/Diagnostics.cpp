#include "frontend/Diagnostics.h"

#include <unistd.h>

#include <cstdlib>
#include <ostream>
#include <sstream>

namespace texc {

const std::vector<DiagInfo>& allDiagnostics() {
  static const std::vector<DiagInfo> table = {
#define DIAG(Id, Sev, Format) {DiagId::Id, #Id, Severity::Sev, Format},
#include "frontend/Diagnostics.def"
#undef DIAG
  };
  return table;
}

const DiagInfo& diagInfo(DiagId id) { return allDiagnostics()[static_cast<size_t>(id)]; }

Diagnostic* DiagnosticEngine::add(DiagId id, SourceRange range, std::string message) {
  Severity sev = diagInfo(id).severity;
  if (sev == Severity::Error) {
    if (errorCount_ >= kMaxErrors) {
      if (!dropped_) {
        dropped_ = true;
        diags_.push_back({DiagId::TooManyErrors, Severity::Error, range, diagInfo(DiagId::TooManyErrors).format, {}});
      }
      return nullptr;
    }
    ++errorCount_;
  } else if (sev == Severity::Warning) {
    ++warningCount_;
  }
  diags_.push_back({id, sev, range, std::move(message), {}});
  return &diags_.back();
}

namespace {

const char* kBold = "\033[1m";
const char* kRed = "\033[1;31m";
const char* kMagenta = "\033[1;35m";
const char* kCyan = "\033[1;36m";
const char* kGreen = "\033[1;32m";
const char* kReset = "\033[0m";

// Length of the valid UTF-8 sequence at `s[i]`, or 0 when the byte there starts none. The rules
// are the lexer's (no overlong forms, surrogates or code points above U+10FFFF), so a line is
// split into the same characters as the lexer counts in its columns.
size_t utf8Length(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  unsigned char c = b(0);
  size_t len;
  uint32_t cp, min;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; min = 0x80; }
  else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; min = 0x800; }
  else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; min = 0x10000; }
  else return 0;
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((b(k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

// Writes the source line of `range` and a caret line under the range (on that line only). Each
// character is one column, as in SourceLoc; a byte that is not valid UTF-8 is one column too and
// is shown as U+FFFD, so the output stays valid UTF-8 and the caret stays in place.
void printSnippet(std::ostream& os, const SourceFile& file, SourceRange range, bool color) {
  std::string_view line = file.lineText(range.begin.line);
  uint32_t first = range.begin.column;  // 1-based
  std::string shown, pad;
  uint32_t col = 1;
  for (size_t i = 0; i < line.size(); ++col) {
    size_t len = utf8Length(line, i);
    if (len == 0) shown += "\xEF\xBF\xBD";
    else shown.append(line.substr(i, len));
    // Reproduce tabs so the caret lines up whatever the tab width.
    if (col < first) pad += line[i] == '\t' ? '\t' : ' ';
    i += len == 0 ? 1 : len;
  }
  uint32_t lineChars = col - 1;
  while (pad.size() + 1 < first) pad += ' ';  // a caret past the end of the line
  uint32_t last = range.end.line == range.begin.line && range.end.column > first ? range.end.column - 1 : first;
  if (range.end.line != range.begin.line) last = std::max(first, lineChars);
  os << shown << '\n' << pad;
  if (color) os << kGreen;
  os << '^' << std::string(last > first ? last - first : 0, '~');
  if (color) os << kReset;
  os << '\n';
}

void printHeader(std::ostream& os, const SourceFile* file, SourceRange range, Severity sev,
                 const std::string& message, bool color) {
  if (color) os << kBold;
  if (file) {
    os << file->name() << ':';
    if (range.valid()) os << range.begin.line << ':' << range.begin.column << ':';
    os << ' ';
  }
  const char* label = sev == Severity::Error ? "error" : sev == Severity::Warning ? "warning" : "note";
  const char* labelColor = sev == Severity::Error ? kRed : sev == Severity::Warning ? kMagenta : kCyan;
  if (color) os << labelColor;
  os << label << ':';
  if (color) os << kReset << kBold;
  os << ' ' << message;
  if (color) os << kReset;
  os << '\n';
}

}  // namespace

void DiagnosticEngine::print(std::ostream& os, bool color) const {
  for (const Diagnostic& d : diags_) {
    printHeader(os, file_, d.range, d.severity, d.message, color);
    if (file_ && d.range.valid()) printSnippet(os, *file_, d.range, color);
    for (const DiagNote& n : d.notes) {
      printHeader(os, file_, n.range, Severity::Note, n.message, color);
      if (file_ && n.range.valid()) printSnippet(os, *file_, n.range, color);
    }
  }
  if (errorCount_ + warningCount_ > 0) {
    auto plural = [](int n, const char* w) { return std::to_string(n) + " " + w + (n == 1 ? "" : "s"); };
    if (warningCount_ > 0 && errorCount_ > 0)
      os << plural(warningCount_, "warning") << " and " << plural(errorCount_, "error") << " generated.\n";
    else if (errorCount_ > 0)
      os << plural(errorCount_, "error") << " generated.\n";
    else
      os << plural(warningCount_, "warning") << " generated.\n";
  }
}

std::string DiagnosticEngine::render(bool color) const {
  std::ostringstream os;
  print(os, color);
  return os.str();
}

bool stderrWantsColor() {
  const char* noColor = std::getenv("NO_COLOR");
  if (noColor && *noColor) return false;
  return isatty(STDERR_FILENO) != 0;
}

}  // namespace texc
