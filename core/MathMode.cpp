#include "core/MathMode.h"

namespace texc {

const char* mathModeName(MathMode mode) { return mode == MathMode::Fast ? "fast" : "precise"; }

std::optional<MathMode> parseMathMode(std::string_view name) {
  if (name == "precise") return MathMode::Precise;
  if (name == "fast") return MathMode::Fast;
  return std::nullopt;
}

}  // namespace texc
