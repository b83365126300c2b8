// Source text and locations. Every token, AST node and diagnostic carries a SourceRange so a late
// error still points at the `.tex` line that caused it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/SourceRange.h"

namespace texc {

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
