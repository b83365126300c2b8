#include "compiler/loops/MaskBounds.h"

namespace texc::loops {

std::optional<MaskCorners> maskCorners(const GuardCond& c, int i, int j, int64_t rows, int64_t keys) {
  AffineForm f = affineForm(c.index);
  if (f.overflow || f.varInAtom(i) || f.varInAtom(j)) return std::nullopt;
  const bool rowsRaise = f.coeffOf(i) > 0, keysRaise = f.coeffOf(j) > 0;
  MaskCorners m;
  m.rowOfLargest = rowsRaise ? rows - 1 : 0;
  m.keyOfLargest = keysRaise ? keys - 1 : 0;
  m.rowOfSmallest = rowsRaise ? 0 : rows - 1;
  m.keyOfSmallest = keysRaise ? 0 : keys - 1;
  return m;
}

}  // namespace texc::loops
