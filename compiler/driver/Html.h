// Small helpers for texc explore's HTML page: escaping text for HTML, numbers for SVG, and the
// colours of kernels.
#pragma once

#include <string>
#include <string_view>

namespace texc::html {

// `text` with & < > " and ' replaced by character references: safe inside elements and in
// attribute values alike.
std::string escape(std::string_view text);

// A number for an SVG coordinate: at most two decimals, no exponent, no trailing zeros.
std::string num(double value);

// The fill colour of kernel `index` ("#rrggbb", light enough for black text), repeating after a
// dozen kernels.
std::string kernelColor(int index);

// `<text x=".." y=".." class="CLS" text-anchor="ANCHOR">escaped text</text>`.
std::string svgText(double x, double y, std::string_view text, std::string_view cls = "", std::string_view anchor = "start");

}  // namespace texc::html
