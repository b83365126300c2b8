#include "compiler/driver/Html.h"

#include <fmt/format.h>

#include <cmath>

namespace texc::html {

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      // Control characters other than tab and newline are not allowed in HTML text.
      case '\t':
      case '\n': out += c; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) out += "\xEF\xBF\xBD";  // U+FFFD
        else out += c;
    }
  }
  return out;
}

std::string num(double value) {
  if (!std::isfinite(value)) return "0";
  std::string s = fmt::format("{:.2f}", value);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  return s;
}

std::string kernelColor(int index) {
  static const char* const palette[] = {"#a6cee3", "#b2df8a", "#fdbf6f", "#cab2d6", "#fb9a99", "#ffff99",
                                        "#8dd3c7", "#bebada", "#fccde5", "#d9d9d9", "#ccebc5", "#ffed6f"};
  constexpr int n = sizeof(palette) / sizeof(palette[0]);
  return palette[((index % n) + n) % n];
}

std::string svgText(double x, double y, std::string_view text, std::string_view cls, std::string_view anchor) {
  std::string attrs = fmt::format("x=\"{}\" y=\"{}\"", num(x), num(y));
  if (!cls.empty()) attrs += fmt::format(" class=\"{}\"", cls);
  if (anchor != "start") attrs += fmt::format(" text-anchor=\"{}\"", anchor);
  return fmt::format("<text {}>{}</text>", attrs, escape(text));
}

}  // namespace texc::html
