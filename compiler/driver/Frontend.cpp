#include "compiler/driver/Frontend.h"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <sys/stat.h>

#include "frontend/Parser.h"

namespace texc {

std::unique_ptr<SourceFile> readSourceFile(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0)
    throw CommandError{kExitUsage, fmt::format("cannot read '{}': {}", path, std::strerror(errno))};
  if (S_ISDIR(st.st_mode)) throw CommandError{kExitUsage, fmt::format("cannot read '{}': it is a directory", path)};
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CommandError{kExitUsage, fmt::format("cannot read '{}': {}", path, std::strerror(errno))};
  std::ostringstream ss;
  ss << in.rdbuf();
  return std::make_unique<SourceFile>(path, ss.str());
}

LetOverrides parseDefines(const std::vector<std::string>& defines) {
  LetOverrides out;
  for (const std::string& d : defines) {
    size_t eq = d.find('=');
    std::string name = d.substr(0, eq);
    if (eq == std::string::npos || name.empty())
      throw CommandError{kExitUsage, fmt::format("-D '{}': expected NAME=VALUE", d)};
    std::string value = d.substr(eq + 1);
    int64_t v = 0;
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (value.empty() || ec != std::errc() || p != value.data() + value.size())
      throw CommandError{kExitUsage, fmt::format("-D {}: '{}' is not an integer", name, value)};
    if (v <= 0) throw CommandError{kExitUsage, fmt::format("-D {}={}: sizes must be > 0", name, v)};
    out[name] = v;
  }
  return out;
}

FrontendResult runFrontend(const std::string& path, const LetOverrides& overrides, bool analyse) {
  FrontendResult r;
  r.file = readSourceFile(path);
  r.diags = std::make_unique<DiagnosticEngine>(r.file.get());
  r.module = parse(*r.file, *r.diags);
  if (!r.diags->hasErrors()) {
    if (auto err = checkOverrides(r.module, overrides)) throw CommandError{kExitUsage, *err};
    if (analyse) r.program = analyze(r.module, *r.diags, overrides);
  }
  r.diags->print(std::cerr, stderrWantsColor());
  return r;
}

}  // namespace texc
