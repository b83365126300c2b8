#!/usr/bin/env bash
# Makes the virtual environment of the Python package (docs/python.md): Debian's python3 with its
# numpy (--system-site-packages), and from PyPI what Debian does not package here: nanobind and
# scikit-build-core (building), pytest, nbclient, nbformat, ipykernel, matplotlib and pandas (testing).
# VENV (default .venv, git-ignored) selects the directory. A no-op when it is complete. Exits 0
# with a printed reason and no environment when PyPI cannot be reached: the build then leaves the
# module out and the Python tests report a skip.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${VENV:-.venv}
python=${PYTHON:-/usr/bin/python3}
packages=(nanobind scikit-build-core pytest nbclient nbformat ipykernel matplotlib pandas)

if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import nanobind, scikit_build_core, pytest, nbclient, nbformat, ipykernel, matplotlib, pandas, numpy" 2>/dev/null; then
  echo "python-env: $venv complete"
  exit 0
fi
if ! "$python" -c "import sysconfig, os, numpy; assert os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h'))" 2>/dev/null; then
  echo "python-env: skipped: $python lacks numpy or its headers (python3-dev, python3-numpy)"
  exit 0
fi
"$python" -m venv --system-site-packages "$venv"
if ! "$venv/bin/python" -m pip install -q "${packages[@]}"; then
  rm -rf "$venv"
  echo "python-env: skipped: could not install ${packages[*]} from PyPI; the Python package is not built or tested"
  exit 0
fi
echo "python-env: $venv ready"
