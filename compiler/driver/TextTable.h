// Aligned text tables for explain and compare: the first row is the header; columns whose cells
// start with a digit are right-aligned.
#pragma once

#include <string>
#include <vector>

namespace texc {

std::string renderTable(const std::vector<std::vector<std::string>>& rows);

// Human figures: 1.5 KB, 64.0 MB; 12.3 MFLOP.
std::string bytesText(double bytes);
std::string countText(double n, const char* unit);

}  // namespace texc
