"""The pytest suite of the Python package (docs/python.md). Run against the build tree's
package by ctest (-R python), or against an installed one (pip install .)."""

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

try:
    import texc  # noqa: F401
except ImportError as e:  # pragma: no cover - reported, not silently passed
    raise SystemExit(f"texc cannot be imported: {e}")


def pytest_report_header(config):
    import texc

    return f"texc from {os.path.dirname(texc.__file__)}"


@pytest.fixture
def examples():
    return EXAMPLES
