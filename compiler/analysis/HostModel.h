// The host CPU as a roofline model: copy bandwidth and FMA peak measured by texc itself (one
// thread), cached so later runs do not measure again.
#pragma once

#include "compiler/analysis/Cost.h"

namespace texc {

// Measures (about 0.5 s) or reads the cache ($XDG_CACHE_HOME/texc/host-model, or
// ~/.cache/texc/host-model). `remeasure` ignores the cache.
HardwareModel hostHardwareModel(bool remeasure = false);

}  // namespace texc
