#include "compiler/driver/OutputFile.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>

#include "compiler/driver/Frontend.h"

namespace texc {

void writeFileAtomic(const std::string& path, const std::string& bytes) {
  // A device or pipe (-o /dev/stdout) is written in place: renaming over it would replace it.
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) throw CommandError{kExitRuntime, fmt::format("cannot write '{}': it is a directory", path)};
    std::ofstream out(path, std::ios::binary);
    out << bytes;
    out.close();
    if (!out) throw CommandError{kExitRuntime, fmt::format("cannot write '{}'", path)};
    return;
  }
  std::string tmp = fmt::format("{}.tmp-{}", path, getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out << bytes;
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      throw CommandError{kExitRuntime, fmt::format("cannot write '{}'", path)};
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw CommandError{kExitRuntime, fmt::format("cannot write '{}'", path)};
  }
}

void emitOutput(const std::string& path, const std::string& bytes) {
  // /dev/stdout is a link to whatever standard output is; when that is a regular file,
  // writeFileAtomic would rename a new file over the link itself (or truncate the file), so
  // write to the stream instead.
  if (path.empty() || path == "-" || path == "/dev/stdout") {
    std::cout << bytes << std::flush;
    if (!std::cout) throw CommandError{kExitRuntime, "cannot write to standard output"};
  } else if (path == "/dev/stderr") {
    std::cerr << bytes << std::flush;
  } else {
    writeFileAtomic(path, bytes);
  }
}

}  // namespace texc
