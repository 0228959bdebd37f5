"""Item 6: a notebook cell that holds the text of rnnfix's own markers keeps
it, byte for byte, and its fixes land in the right cell."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rnnfix.config.settings import Settings
from rnnfix.run.process import Outcome, process_file

from .conftest import BUGGY


def _notebook(path: Path, *sources: str) -> None:
    cells = [
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": s}
        for s in sources
    ]
    data = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def _sources(path: Path) -> list[str]:
    return [c["source"] for c in json.loads(path.read_text())["cells"]]


@pytest.mark.parametrize(
    "cell",
    [
        "__rnnfix_cell__(1)\nx = 1\n",
        "print('__rnnfix_magic__(0)')\n",
        "s = '__rnnfix_magic__(7)'\n",
        "__rnnfix_cell__(0)\n__rnnfix1_cell__(0)\nprint('__rnnfix1_magic__(0)')\n",
    ],
)
def test_a_cell_holding_marker_text_keeps_it(tmp_path: Path, cell: str) -> None:
    path = tmp_path / "nb.ipynb"
    _notebook(path, "%time x = 1\n", cell, BUGGY)
    result = process_file(path, Settings(), write=True)
    assert result.outcome is Outcome.CHANGED, result.error
    first, second, third = _sources(path)
    assert (first, second) == ("%time x = 1\n", cell)
    assert "model.train()" in third


def test_a_marker_text_in_the_same_cell_as_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "nb.ipynb"
    cell = "%matplotlib inline\nlabel = '__rnnfix_magic__(0)'\n" + BUGGY
    _notebook(path, cell)
    assert process_file(path, Settings(), write=True).outcome is Outcome.CHANGED
    (fixed,) = _sources(path)
    assert fixed.startswith("%matplotlib inline\nlabel = '__rnnfix_magic__(0)'\n")
    assert "model.train()" in fixed
