"""Every notebook in notebooks/ runs: its code cells are executed in order, in one namespace."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, capsys):
    matplotlib.use("Agg")  # plt.show() must not open a window (or block) where a display is available
    import matplotlib.pyplot as plt

    cells = json.loads(path.read_text())["cells"]
    namespace: dict = {}
    for cell in cells:
        if cell["cell_type"] == "code":
            source = "".join(cell["source"])
            assert "import" not in source or "panm_jax" in source or "numpy" in source or "jax" in source
            exec(compile(source, f"{path.name}", "exec"), namespace)  # noqa: S102 - our own notebooks
    plt.close("all")
    out = capsys.readouterr().out
    assert out  # every notebook prints what it shows
