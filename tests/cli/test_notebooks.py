"""Notebooks: code cells fixed in place, magics kept, JSON layout kept, odd JSON reported."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest


def _nb(cells: list[dict[str, object]]) -> dict[str, object]:
    return {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def _code(*lines: str) -> dict[str, object]:
    return {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {},
        "outputs": [],
        "source": list(lines),
    }


CELLS = [
    {"cell_type": "markdown", "metadata": {}, "source": ["# Training ☃"]},
    _code("%matplotlib inline\n", "import torch.nn as nn\n", "!nvidia-smi"),
    _code("model = nn.DataParallel(nn.Linear(2, 2))\n", "model.module.train()"),
    _code("%%time\n", "model.module.train()"),
]


def _write(path: Path, data: object, **layout: object) -> str:
    text = json.dumps(data, ensure_ascii=False, **layout) + "\n"  # type: ignore[arg-type]
    path.write_text(text, encoding="utf-8")
    return text


def test_notebook_cell_is_fixed_and_layout_kept(run, tmp_path: Path) -> None:
    nb = tmp_path / "train.ipynb"
    _write(nb, _nb(CELLS), indent=1, sort_keys=True)
    result = run("--check", str(tmp_path))
    assert f"{nb}:cell 3:2:1: RNF002 [*]" in result.output
    result = run(str(nb))
    assert result.exit_code == 0, result.output
    data = json.loads(nb.read_text(encoding="utf-8"))
    assert data["cells"][2]["source"] == [
        "model = nn.DataParallel(nn.Linear(2, 2))\n",
        "model.train()",
    ]
    assert data["cells"][1]["source"] == CELLS[1]["source"]  # magics kept
    assert data["cells"][3]["source"] == CELLS[3]["source"]  # %%cell magic left alone
    expected = copy.deepcopy(_nb(CELLS))
    expected["cells"][2]["source"][1] = "model.train()"  # type: ignore[index]
    assert (
        nb.read_text(encoding="utf-8")
        == json.dumps(expected, ensure_ascii=False, indent=1, sort_keys=True) + "\n"
    )


def test_clean_notebook_untouched(run, tmp_path: Path) -> None:
    nb = tmp_path / "clean.ipynb"
    text = _write(nb, _nb(CELLS[:2]), indent=1, sort_keys=True)
    result = run(str(nb))
    assert result.exit_code == 0, result.output
    assert nb.read_text(encoding="utf-8") == text


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{not json", "not a notebook: invalid JSON"),
        ('{"cells": 3}', "not a notebook: no list of cells"),
        (
            '{"cells": [{"cell_type": "code", "source": 7}], "nbformat": 4}',
            "cell 1 has a source that is not text",
        ),
        ('{"cells": [], "nbformat": 3}', "notebook format 3 is not supported"),
    ],
)
def test_odd_json_is_reported(run, tmp_path: Path, content: str, reason: str) -> None:
    nb = tmp_path / "odd.ipynb"
    nb.write_text(content)
    result = run(str(nb))
    assert result.exit_code == 2
    assert f"{nb}: " in result.output and reason in result.output
    assert nb.read_text() == content


def test_unreproducible_layout_is_not_reformatted(run, tmp_path: Path) -> None:
    nb = tmp_path / "minified.ipynb"
    text = json.dumps(_nb(CELLS), separators=(",", ":"))
    nb.write_text(text)
    result = run(str(nb))
    assert result.exit_code == 2
    assert "JSON layout is not nbformat's" in result.output
    assert nb.read_text() == text


def test_syntax_error_in_cell_names_the_cell(run, tmp_path: Path) -> None:
    nb = tmp_path / "bad.ipynb"
    _write(nb, _nb([_code("x = 1\n"), _code("def f(:\n", "  pass")]), indent=1, sort_keys=True)
    result = run(str(nb))
    assert result.exit_code == 2
    assert f"{nb}: cell 2: line 1: cannot parse" in result.output
