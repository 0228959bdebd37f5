"""Every report says what happened (issue 38, item 4): JSON's per-file
``outcome``/``fixes_applied`` in a run that writes nothing, ``--statistics``
in a tool format, ``-i`` on a notebook after a fix in an earlier cell, a
file that could not be written, ``verify`` of a missing script, and
``--show-settings`` as TOML one can paste."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from rnnfix.cli.app import cli
from rnnfix.config.pyproject import apply_overrides
from rnnfix.config.settings import Settings
from tests.cli.conftest import BUGGY
from tests.cli.test_followups import SRC as TWO_FIXES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def _cli(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input)


@pytest.mark.parametrize("command", [["check"], ["apply", "--check"]])
def test_json_of_a_run_that_writes_nothing(tmp_path: Path, command: list[str]) -> None:
    f = tmp_path / "train.py"
    f.write_text(TWO_FIXES)
    result = _cli(*command, "--output-format", "json", str(f))
    data = json.loads(result.stdout)
    entry = data["files"][0]
    assert entry["outcome"] == "unchanged" and entry["fixes_applied"] == 0
    assert entry["would_change"] is True and entry["fixes_available"] == 2
    assert f.read_text() == TWO_FIXES


def test_json_of_a_run_that_writes(tmp_path: Path) -> None:
    f = tmp_path / "train.py"
    f.write_text(TWO_FIXES)
    entry = json.loads(_cli("apply", "--output-format", "json", str(f)).stdout)["files"][0]
    assert entry["outcome"] == "changed" and entry["fixes_applied"] == 2
    assert entry["would_change"] is False and entry["fixes_available"] == 0
    assert f.read_text() != TWO_FIXES


@pytest.mark.parametrize("fmt", ["sarif", "github", "gitlab"])
def test_statistics_in_a_format_it_has_no_form_in_is_a_usage_error(
    tmp_path: Path, fmt: str
) -> None:
    """As ruff: 'Unsupported serialization format for statistics'."""
    f = tmp_path / "train.py"
    f.write_text(BUGGY)
    result = _cli("check", "--statistics", "--output-format", fmt, str(f))
    assert result.exit_code == 2 and result.stdout == ""
    assert f"--statistics cannot be combined with --output-format {fmt}" in result.stderr


def test_statistics_as_json(tmp_path: Path) -> None:
    f = tmp_path / "train.py"
    f.write_text(BUGGY)
    result = _cli("check", "--statistics", "--output-format", "json", str(f))
    assert json.loads(result.stdout)[0]["code"] == "RNF002"


NOTEBOOK_CELLS = [
    """import torch
from torch import nn

model = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.5), nn.Linear(16, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model.train()

def validate():
    accuracy = 0.0
    for x, y in val_loader:
        accuracy += (model(x).argmax(1) == y).float().mean().item()
    return accuracy
""",
    """for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    print(validate())
""",
]


def test_interactive_notebook_lines_after_a_fix_in_an_earlier_cell(tmp_path: Path) -> None:
    cells = [
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": src.splitlines(True)}
        for src in NOTEBOOK_CELLS
    ]
    nb = tmp_path / "train.ipynb"
    nb.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    # Accept RNF003's fix of cell 1 (two lines in), then see RNF001's question in cell 2.
    result = CliRunner().invoke(cli, ["apply", "-i", str(nb)], input="y\nn\n")
    question = next(line for line in result.stdout.splitlines() if ": RNF001" in line)
    # The step is cell 2's line 5, validate() its line 6, as the notebook on disk has them.
    assert question.startswith(f"{nb}:cell 2:5:9: RNF001")
    assert "(set by `validate()` on line 6)" in question


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX file modes")
def test_a_file_that_cannot_be_written_counts_its_findings_as_left(tmp_path: Path) -> None:
    f = tmp_path / "train.py"
    f.write_text(TWO_FIXES)
    f.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    result = _cli("apply", str(f))
    assert result.exit_code == 2
    assert "cannot write: file is read-only" in result.stderr
    assert "0 changed, 0 fixes applied, 1 finding left, 1 failed" in result.stderr
    assert "RNF003" in result.stdout  # the finding the file still has
    assert f.read_text() == TWO_FIXES


def test_verify_of_a_missing_script_is_a_usage_error(tmp_path: Path) -> None:
    result = _cli("verify", str(tmp_path / "missing.py"))
    assert result.exit_code == 2
    assert "missing.py: no such file" in result.stderr
    assert _cli("verify", "--fix", str(tmp_path / "missing.py")).exit_code == 2


def test_show_settings_prints_toml_to_paste(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.rnnfix]\n"
        'ignore = ["RNF005"]\n'
        'target-version = "py310"\n'
        '[tool.rnnfix.per-file-ignores]\n"scripts/*.py" = ["RNF001"]\n'
    )
    (tmp_path / "train.py").write_text(BUGGY)
    result = _cli(
        "check", "--show-settings", "--select", "RNF00", "--unfixable", "RNF003", str(tmp_path)
    )
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert f"# settings from {tmp_path / 'pyproject.toml'}" in text
    table = tomllib.loads(text)["tool"]["rnnfix"]
    assert table["select"] == ["RNF00"] and table["ignore"] == ["RNF005"]
    assert table["target-version"] == "py310"
    assert table["per-file-ignores"] == {"scripts/*.py": ["RNF001"]}
    # Pasted into a configuration, it gives the same settings.
    pasted = apply_overrides(Settings(), table, source="pasted")
    assert pasted == Settings(
        select=("RNF00",),
        ignore=("RNF005",),
        unfixable=("RNF003",),
        target_version="py310",
        per_file_ignores=(("scripts/*.py", ("RNF001",)),),
    )


def test_show_settings_of_the_defaults_is_toml_too(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(BUGGY)
    text = _cli("check", "--show-settings", str(tmp_path)).stdout
    table = tomllib.loads(text)["tool"]["rnnfix"]
    assert apply_overrides(Settings(), table, source="pasted") == Settings()
    assert "# target-version" in text  # not set: said, not written
