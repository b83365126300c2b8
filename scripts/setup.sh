#!/usr/bin/env bash
# Installs what texc needs on a Debian machine; a no-op when everything is there.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  llvm-19-dev clang-19 libclang-rt-19-dev   # LLVM backend; clang-19 builds the fuzz targets
  llvm-19-tools                             # lit and FileCheck, for the tests of tests/lit
  catch2 libfmt-dev libcli11-dev
  zlib1g-dev libzstd-dev libedit-dev libxml2-dev libffi-dev libcurl4-openssl-dev
  graphviz chromium tidy                    # texc explore: graph layout; its browser and HTML tests
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
