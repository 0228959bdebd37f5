"""Item 10: inputs that used to end the whole run with "internal error" (or
hang it) are each one line, and every other file is still checked."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rnnfix.source import files
from rnnfix.source.files import Problems, discover

from .conftest import BUGGY, run_rnnfix


def _checked_anyway(run_stdout: str) -> bool:
    return "train.py:8:9: RNF001" in run_stdout


def test_a_folder_that_cannot_be_read_is_one_line(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Root reads every folder: the permission error is simulated."""
    locked = project / "locked"
    locked.mkdir()
    (locked / "a.py").write_text(BUGGY)
    real = os.scandir

    def scandir(path: object) -> object:
        if Path(str(path)) == locked:
            raise PermissionError(13, "Permission denied")
        return real(path)  # type: ignore[arg-type]

    monkeypatch.setattr(files.os, "scandir", scandir)
    problems = Problems()
    found = list(discover([project], problems=problems))
    assert found == [project / "train.py"]
    assert problems.errors == [f"{locked}: cannot read the folder (Permission denied)"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root enters every folder")
def test_a_folder_that_cannot_be_entered_is_one_line(project: Path) -> None:
    locked = project / "locked"
    locked.mkdir()
    (locked / "a.py").write_text(BUGGY)
    locked.chmod(0o600)  # listable, not searchable
    try:
        run = run_rnnfix("apply", "--check", str(project))
    finally:
        locked.chmod(0o700)
    assert run.returncode == 2 and _checked_anyway(run.stdout)
    assert "internal error" not in run.stderr


def test_a_symlink_loop_as_the_first_path(project: Path) -> None:
    os.symlink(project / "b", project / "a")
    os.symlink(project / "a", project / "b")
    run = run_rnnfix("apply", "--check", str(project / "a"), str(project / "train.py"))
    assert run.returncode == 2 and _checked_anyway(run.stdout)
    assert f"{project / 'a'}: is a symbolic link" in run.stderr
    assert "internal error" not in run.stderr


@pytest.mark.parametrize("cache", [True, False])
def test_a_fifo_on_the_command_line_is_refused_without_blocking(project: Path, cache: bool) -> None:
    fifo = project / "pipe.py"
    os.mkfifo(fifo)
    run = run_rnnfix("apply", "--check", str(fifo), str(project / "train.py"), cache=cache)
    assert run.returncode == 2 and _checked_anyway(run.stdout)
    assert f"{fifo}: not a regular file" in run.stderr


def test_dev_zero_on_the_command_line(project: Path) -> None:
    run = run_rnnfix("apply", "--check", "/dev/zero", str(project / "train.py"), cache=True)
    assert run.returncode == 2 and _checked_anyway(run.stdout)
    assert "/dev/zero: not a regular file" in run.stderr


@pytest.mark.parametrize("line", ["!", "\\"])
def test_a_gitignore_line_git_accepts(project: Path, line: str) -> None:
    (project / ".git").mkdir()
    (project / ".gitignore").write_text(f"{line}\nignored.py\n")
    (project / "ignored.py").write_text(BUGGY)
    run = run_rnnfix("apply", "--check", str(project))
    assert run.returncode == 1 and _checked_anyway(run.stdout)
    assert "ignored.py" not in run.stdout  # the other lines still apply
    assert f".gitignore:1: {line!r} is not a valid pattern; ignored" in run.stderr


def test_an_exclude_pattern_that_is_none(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.rnnfix]\nexclude = ["!", "skip.py"]\n')
    (project / "skip.py").write_text(BUGGY)
    run = run_rnnfix("apply", "--check", str(project))
    assert run.returncode == 2 and _checked_anyway(run.stdout)
    assert "skip.py" not in run.stdout
    assert "rnnfix: error: exclude: '!' is not a valid pattern; ignored" in run.stderr


def test_a_tool_that_is_not_a_table(project: Path) -> None:
    (project / "pyproject.toml").write_text("tool = 5\n")
    run = run_rnnfix("apply", "--check", str(project))
    assert run.returncode == 2
    assert "[tool] must be a table" in run.stderr and "internal error" not in run.stderr


@pytest.mark.parametrize(("value", "shown"), [('"4"', "'4'"), ("null", "None"), ("true", "True")])
def test_a_notebook_format_that_is_not_a_number(project: Path, value: str, shown: str) -> None:
    (project / "n.ipynb").write_text(
        '{"cells": [], "metadata": {}, "nbformat": ' + value + ', "nbformat_minor": 5}'
    )
    run = run_rnnfix("apply", "--check", str(project))
    assert run.returncode == 2 and _checked_anyway(run.stdout)
    assert f"n.ipynb: notebook format {shown} is not supported (need 4)" in run.stderr


def test_a_cell_holding_a_mask_that_is_not_one(project: Path) -> None:
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "source": "__rnnfix_magic__(7)\n"}
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (project / "n.ipynb").write_text(json.dumps(nb))
    run = run_rnnfix("apply", "--check", str(project))
    assert run.returncode == 1 and _checked_anyway(run.stdout), run.stderr
    assert "internal error" not in run.stderr


def test_json_nested_100000_deep(project: Path) -> None:
    (project / "n.ipynb").write_text('{"cells": ' + "[" * 100_000 + "]" * 100_000 + "}")
    run = run_rnnfix("apply", "--check", str(project))
    assert run.returncode == 2 and _checked_anyway(run.stdout)
    assert "n.ipynb: not a notebook: JSON nested too deeply" in run.stderr
