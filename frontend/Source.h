// Source text and locations. Every token, AST node and diagnostic carries a SourceRange so a late
// error still points at the `.tex` line that caused it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace texc {

// A position in a source file. `line` and `column` are 1-based; `column` counts characters
// (UTF-8 code points), a tab counting as one. `offset` is the 0-based byte offset.
struct SourceLoc {
  uint32_t offset = 0;
  uint32_t line = 0;
  uint32_t column = 0;

  bool valid() const { return line != 0; }
};

// A half-open byte range [begin, end) with the locations of both ends.
struct SourceRange {
  SourceLoc begin;
  SourceLoc end;

  bool valid() const { return begin.valid(); }
  static SourceRange merge(const SourceRange& a, const SourceRange& b) {
    if (!a.valid()) return b;
    if (!b.valid()) return a;
    return {a.begin.offset <= b.begin.offset ? a.begin : b.begin,
            a.end.offset >= b.end.offset ? a.end : b.end};
  }
};

// A loaded source file. The text is kept whole so diagnostics can reprint any line.
class SourceFile {
 public:
  SourceFile(std::string name, std::string text);

  const std::string& name() const { return name_; }
  const std::string& text() const { return text_; }
  // The text of 1-based line `line`, without its line ending.
  std::string_view lineText(uint32_t line) const;
  uint32_t lineCount() const { return static_cast<uint32_t>(lineStarts_.size()); }

 private:
  std::string name_;
  std::string text_;
  std::vector<uint32_t> lineStarts_;
};

}  // namespace texc
