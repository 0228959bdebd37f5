"""The habits ruff users bring (issue 38, item 3): ``--select ''`` is a usage
error, ``--select ALL``, ``extend-select``, ``fixable``/``unfixable``,
``# noqa`` comments beside ``# rnnfix: ignore``, a file-level ``# rnnfix:
noqa``, ``--report-unused-suppressions``, and ``check`` with no path."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from rnnfix.cli.app import cli
from tests.cli.conftest import BUGGY, FIXED

# One RNF002 finding, on line 4 (its comment is where a suppression goes).
CODE_LINE = "model.module.train()  # keep this comment"


def _cli(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input)


def _buggy(tmp_path: Path, comment: str = "# keep this comment", head: str = "") -> Path:
    f = tmp_path / "train.py"
    f.write_text(head + BUGGY.replace("# keep this comment", comment))
    return f


@pytest.mark.parametrize("flag", ["--select", "--extend-select", "--ignore", "--unfixable"])
def test_an_empty_selector_is_a_usage_error(tmp_path: Path, flag: str) -> None:
    result = _cli("check", flag, "", str(_buggy(tmp_path)))
    assert result.exit_code == 2
    assert f"{flag}: no rule selector given" in result.stderr


def test_select_all(tmp_path: Path) -> None:
    f = _buggy(tmp_path)
    result = _cli("check", "--select", "ALL", str(f))
    assert result.exit_code == 1 and "RNF002" in result.stdout, result.output
    assert _cli("check", "--select", "ALL", "--ignore", "RNF002", str(f)).exit_code == 0
    # A more specific selector beats ALL, as in ruff.
    assert _cli("check", "--ignore", "ALL", "--select", "RNF002", str(f)).exit_code == 1
    (tmp_path / "pyproject.toml").write_text('[tool.rnnfix]\nselect = ["ALL"]\n')
    assert _cli("check", str(f)).exit_code == 1


def test_extend_select(tmp_path: Path) -> None:
    f = _buggy(tmp_path)
    assert _cli("check", "--select", "RNF005", str(f)).exit_code == 0
    result = _cli("check", "--select", "RNF005", "--extend-select", "RNF002", str(f))
    assert result.exit_code == 1 and "RNF002" in result.stdout
    (tmp_path / "pyproject.toml").write_text(
        '[tool.rnnfix]\nselect = ["RNF005"]\nextend-select = ["RNF002"]\n'
    )
    assert _cli("check", str(f)).exit_code == 1
    # --select on the command line starts the selection again, as in ruff.
    assert _cli("check", "--select", "RNF005", str(f)).exit_code == 0


def test_unfixable_on_the_command_line(tmp_path: Path) -> None:
    f = _buggy(tmp_path)
    check = _cli("check", "--unfixable", "RNF002", str(f))
    assert check.exit_code == 1
    assert "RNF002 [*]" not in check.stdout and "RNF002 " in check.stdout
    assert "(0 fixable)" in check.stderr
    result = _cli("apply", "--unfixable", "RNF", str(f))
    assert result.exit_code == 1 and f.read_text() == BUGGY
    result = _cli("apply", "--unfixable", "RNF", "--fixable", "RNF002", str(f))
    assert result.exit_code == 0 and f.read_text() == FIXED


def test_fixable_and_unfixable_in_the_configuration(tmp_path: Path) -> None:
    f = _buggy(tmp_path)
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.rnnfix]\nfixable = ["RNF001"]\n')
    assert _cli("apply", str(f)).exit_code == 1 and f.read_text() == BUGGY
    config.write_text('[tool.rnnfix]\nunfixable = ["RNF002"]\n')
    assert _cli("apply", str(f)).exit_code == 1 and f.read_text() == BUGGY
    config.write_text('[tool.rnnfix]\nunfixable = ["RNF005"]\n')
    assert _cli("apply", str(f)).exit_code == 0 and f.read_text() == FIXED
    config.write_text('[tool.rnnfix]\nfixable = ["RNF9"]\n')
    result = _cli("apply", str(f))
    assert result.exit_code == 2 and "unknown rule selector 'RNF9'" in result.stderr


@pytest.mark.parametrize(
    "comment",
    [
        "# noqa: RNF002",
        "# noqa:RNF002,RNF003",
        "# noqa: RNF001, RNF002",
        "# noqa: RNF",
        "# noqa",  # ruff: a bare noqa silences every code
        "# NOQA",
        "# rnnfix: ignore[RNF002]",
        "# rnnfix: ignore",
        "# type: ignore  # noqa: RNF002",
    ],
)
def test_a_line_suppression_silences_the_finding(tmp_path: Path, comment: str) -> None:
    f = _buggy(tmp_path, comment)
    result = _cli("check", str(f))
    assert result.exit_code == 0, result.output
    assert _cli("apply", str(f)).exit_code == 0
    assert f.read_text() == BUGGY.replace("# keep this comment", comment)  # nor fixed


@pytest.mark.parametrize("comment", ["# noqa: E501", "# noqa: RNF001", "# noqa:RNF003,E501"])
def test_a_noqa_for_other_codes_does_not(tmp_path: Path, comment: str) -> None:
    assert _cli("check", str(_buggy(tmp_path, comment))).exit_code == 1


@pytest.mark.parametrize(
    ("head", "silenced"),
    [
        ("# rnnfix: noqa\n", True),
        ("# rnnfix: noqa: RNF002\n", True),
        ("#rnnfix:noqa:RNF001,RNF002\n", True),
        ("# rnnfix: noqa: RNF001\n", False),
        ('"""Docs."""\n# rnnfix: noqa\n', True),  # anywhere, on a line of its own
        ("x = 1  # rnnfix: noqa\n", False),  # a trailing one is no file-level one
    ],
)
def test_a_file_level_suppression(tmp_path: Path, head: str, silenced: bool) -> None:
    f = _buggy(tmp_path, head=head)
    before = f.read_bytes()
    assert _cli("check", str(f)).exit_code == (0 if silenced else 1)
    _cli("apply", str(f))
    assert (f.read_bytes() == before) is silenced


def test_unused_suppressions_are_reported_on_request(tmp_path: Path) -> None:
    f = tmp_path / "train.py"
    f.write_text(
        "# rnnfix: noqa: RNF005\n"  # 1: no RNF005 anywhere: unused
        "import torch.nn as nn\n"
        "model = nn.DataParallel(nn.Linear(2, 2))\n"
        "model.module.train()  # noqa: RNF002, RNF003, E501\n"  # 4: RNF002 used, RNF003 not
        "x = 1  # noqa: RNF001\n"  # 5: unused
        "y = 2  # noqa\n"  # 6: bare: may be another linter's, never reported
        "z = 3  # rnnfix: ignore\n"  # 7: unused
    )
    result = _cli("check", "--report-unused-suppressions", str(f))
    assert result.exit_code == 0, result.output
    unused = [line for line in result.stderr.splitlines() if "unused suppression" in line]
    assert unused == [
        f"{f}: line 1: unused suppression: RNF005 (no such finding in the file)",
        f"{f}: line 4: unused suppression: RNF003 (no such finding on this line)",
        f"{f}: line 5: unused suppression: RNF001 (no such finding on this line)",
        f"{f}: line 7: unused suppression: `# rnnfix: ignore` (no finding on this line)",
    ]
    assert "unused suppression" not in _cli("check", str(f)).stderr  # off by default
    (tmp_path / "pyproject.toml").write_text("[tool.rnnfix]\nreport-unused-suppressions = true\n")
    assert "line 5: unused suppression" in _cli("check", str(f)).stderr


def test_unused_suppressions_in_a_file_no_rule_parses(tmp_path: Path) -> None:
    f = tmp_path / "plain.py"
    f.write_text("x = 1  # noqa: RNF001\n")
    result = _cli("check", "--report-unused-suppressions", str(f))
    assert f"{f}: line 1: unused suppression: RNF001" in result.stderr


def test_check_without_a_path_checks_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _buggy(tmp_path)
    monkeypatch.chdir(tmp_path)
    result = _cli("check")
    assert result.exit_code == 1, result.output
    assert result.stdout.startswith("train.py:4:1: RNF002")


def test_suppressions_in_a_notebook(tmp_path: Path) -> None:
    import json

    def cell(source: str) -> dict[str, object]:
        return {"cell_type": "code", "metadata": {}, "outputs": [], "source": source}

    nb = tmp_path / "train.ipynb"
    cells = [cell("import torch.nn as nn\nx = 1  # noqa: RNF001\n"), cell(BUGGY.split("\n", 1)[1])]
    doc = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    nb.write_text(json.dumps(doc))
    result = _cli("check", "--report-unused-suppressions", str(nb))
    assert result.exit_code == 1 and "RNF002" in result.stdout
    assert f"{nb}: cell 1: line 2: unused suppression: RNF001" in result.stderr
    cells[1] = cell(BUGGY.split("\n", 1)[1].replace("# keep this comment", "# noqa: RNF002"))
    nb.write_text(json.dumps(doc))
    assert _cli("check", str(nb)).exit_code == 0
