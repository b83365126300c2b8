#include "compiler/driver/TextTable.h"

#include <fmt/format.h>

#include <algorithm>

namespace texc {

std::string renderTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) {
      if (width.size() <= c) width.push_back(0);
      width[c] = std::max(width[c], row[c].size());
    }
  std::string out;
  for (size_t r = 0; r < rows.size(); ++r) {
    std::string line;
    for (size_t c = 0; c < rows[r].size(); ++c) {
      const std::string& cell = rows[r][c];
      bool number = r > 0 && !cell.empty() && (std::isdigit(static_cast<unsigned char>(cell[0])) || cell[0] == '-');
      std::string pad(width[c] - cell.size(), ' ');
      line += (c ? "  " : "") + (number ? pad + cell : cell + (c + 1 < rows[r].size() ? pad : ""));
    }
    out += line + "\n";
    if (r == 0) {
      size_t total = 0;
      for (size_t w : width) total += w;
      out += std::string(total + 2 * (width.size() - 1), '-') + "\n";
    }
  }
  return out;
}

std::string bytesText(double b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4) {
    b /= 1000;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", b) : fmt::format("{:.1f} {}", b, units[u]);
}

std::string countText(double n, const char* unit) {
  const char* prefix[] = {"", "K", "M", "G", "T"};
  int p = 0;
  while (n >= 1000 && p < 4) {
    n /= 1000;
    ++p;
  }
  return p == 0 ? fmt::format("{:.0f} {}", n, unit) : fmt::format("{:.1f} {}{}", n, prefix[p], unit);
}

}  // namespace texc
