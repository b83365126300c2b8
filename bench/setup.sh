#!/usr/bin/env bash
# setup.sh — install what the benchmark needs and is missing, then build texc in Release.
#   Debian packages: the peers' libraries (OpenBLAS, BLIS, Eigen, oneDNN, Halide 14) and
#   the Python peers (numpy, numexpr, torch) as Debian packages, so that they match the
#   system's BLAS. When a Python package is not packaged for this release, pip installs it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

debs=(g++ python3
      libopenblas-dev libblis-dev libeigen3-dev libdnnl-dev libhalide14-0-dev
      python3-numpy python3-numexpr python3-torch)
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""; [[ $(id -u) -ne 0 ]] && sudo="sudo"
  echo "installing: ${missing[*]}" >&2
  $sudo apt-get update -qq
  # One by one, so that a package this release lacks (say, Halide or torch) does not stop the
  # others; the driver reports each peer that is still missing as unavailable.
  for p in "${missing[@]}"; do
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$p" >/dev/null \
      || echo "could not install $p; its peer will be reported unavailable" >&2
  done
fi

# The Python the peers run on: the system interpreter, which sees the Debian packages.
py=/usr/bin/python3
for mod in numpy numexpr torch; do
  if ! "$py" -c "import $mod" 2>/dev/null; then
    echo "python module $mod missing from Debian packages; trying pip" >&2
    "$py" -m pip install --user --break-system-packages -q "$mod" \
      || echo "could not install $mod; its peer will be reported unavailable" >&2
  fi
done

# texc itself, Release; scripts/setup.sh installs its own dependencies (LLVM 19, fmt, CLI11).
"$root/scripts/setup.sh"
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$root/build" texc
