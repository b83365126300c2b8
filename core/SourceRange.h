// Where in a .tex file something came from: every token, AST node, index expression and
// diagnostic carries a SourceRange, so a late error still points at the line that caused it.
#pragma once

#include <cstdint>

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

}  // namespace texc
