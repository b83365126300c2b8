// Writing command output: to standard output, or to a file all or nothing (a temporary file
// beside it, renamed into place), so a failed command never leaves a partial file.
#pragma once

#include <string>

namespace texc {

void writeFileAtomic(const std::string& path, const std::string& bytes);

// Standard output when `path` is empty or "-", otherwise writeFileAtomic.
void emitOutput(const std::string& path, const std::string& bytes);

}  // namespace texc
