// Where texc keeps what it measured or compiled once (the host model, PTX, tuned schedules):
// $XDG_CACHE_HOME/texc/NAME, else ~/.cache/texc/NAME; and the hash that names cached files.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace texc {

// The cache entry `name`, a folder or a file (not created); empty when neither XDG_CACHE_HOME nor
// HOME is set.
inline std::filesystem::path cacheDirectory(const std::string& name) {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (xdg && *xdg) return std::filesystem::path(xdg) / "texc" / name;
  if (home && *home) return std::filesystem::path(home) / ".cache" / "texc" / name;
  return {};
}

// 64-bit FNV-1a of `text`, continuing from `h`.
inline uint64_t fnv1a(const std::string& text, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace texc
