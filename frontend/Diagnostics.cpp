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
        diags_.push_back({DiagId::TooManyErrors, Severity::Error, {}, diagInfo(DiagId::TooManyErrors).format, {}});
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

// Number of UTF-8 code points in `s` (continuation bytes are not counted).
uint32_t countChars(std::string_view s) {
  uint32_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

// Writes the source line of `range` and a caret line under the range (on that line only).
void printSnippet(std::ostream& os, const SourceFile& file, SourceRange range, bool color) {
  std::string_view line = file.lineText(range.begin.line);
  os << line << '\n';
  uint32_t lineChars = countChars(line);
  uint32_t first = range.begin.column;  // 1-based
  uint32_t last = range.end.line == range.begin.line && range.end.column > first ? range.end.column - 1 : first;
  if (range.end.line != range.begin.line) last = std::max(first, lineChars);
  // Reproduce tabs so the caret lines up whatever the tab width.
  std::string pad;
  uint32_t col = 1;
  for (size_t i = 0; i < line.size() && col < first; ++i) {
    unsigned char c = static_cast<unsigned char>(line[i]);
    if ((c & 0xC0) == 0x80) continue;
    pad += c == '\t' ? '\t' : ' ';
    ++col;
  }
  while (col < first) { pad += ' '; ++col; }
  os << pad;
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
