"""examples/fusion.ipynb, executed from top to bottom so that it never rots."""

import os
import pathlib

import pytest

import texc

from conftest import EXAMPLES


def test_fusion_notebook_runs(monkeypatch):
    nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed")
    pytest.importorskip("ipykernel", reason="ipykernel is not installed")
    pytest.importorskip("matplotlib", reason="matplotlib is not installed")
    # The kernel is a process of its own, started in examples/: it imports this same texc.
    package_root = str(pathlib.Path(texc.__file__).resolve().parent.parent)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p))
    nb = nbformat.read(EXAMPLES / "fusion.ipynb", as_version=4)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(EXAMPLES)}})
    client.execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs), "the notebook's plot is missing"
