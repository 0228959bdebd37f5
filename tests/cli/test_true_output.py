"""What the command line says is true (issue 25, items 1-11): notebook lines
are the cells' lines in every format, fingerprints ignore line numbers, the
summary counts what the listing shows, unknown selectors and empty folders
are said, a parse error has its column, newer syntax is "not checked", the
warm cache keeps follow-ups, indented cells are checked, and a fix says where
its line goes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from rnnfix.cli.app import cli
from tests.cli.test_followups import SRC as FOLLOWUP_SRC


def _nb(*cells: str, indent: int | None = 1) -> str:
    data = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "metadata": {},
                "outputs": [],
                "source": source.splitlines(keepends=True),
            }
            for source in cells
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(data, indent=indent) + "\n"


CELLS = (
    "import torch\nimport torch.nn as nn\n",
    "model = nn.LSTM(4, 4)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
    "def evaluate():\n    model.eval()\n    with torch.no_grad():\n"
    "        model(torch.zeros(1, 1, 4))\n",
    "for epoch in range(3):\n    x = torch.zeros(1, 1, 4)\n    loss = model(x)[0].sum()\n"
    "    opt.zero_grad()\n    loss.backward()\n    opt.step()\n    evaluate()\n",
)


def _cli(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input)


@pytest.fixture
def notebook(tmp_path: Path) -> Path:
    path = tmp_path / "train.ipynb"
    path.write_text(_nb(*CELLS))
    return path


# --- items 1 and 2: a notebook's lines are its cells' -------------------------


def test_notebook_messages_cite_the_cells_lines(notebook: Path) -> None:
    result = _cli("check", "--no-cache", str(notebook))
    line = next(x for x in result.stdout.splitlines() if "RNF001" in x)
    assert line.startswith(f"{notebook}:cell 4:5:5: RNF001 [*]")
    # ``evaluate()`` is line 7 of cell 4 (line 19 of the concatenated cells).
    assert "set by `evaluate()` on line 7)" in line
    data = json.loads(_cli("check", "--output-format", "json", str(notebook)).stdout)
    [diag] = data["diagnostics"]
    assert (diag["cell"], diag["line"], diag["column"]) == (4, 5, 5)
    assert "on line 7)" in diag["message"]
    assert diag["fix"]["description"] == "Insert `model.train()` at the head of the loop on line 1"


def test_a_line_of_another_cell_is_named_with_its_cell(tmp_path: Path) -> None:
    # The eval() is in cell 2, the training step in cell 3.
    path = tmp_path / "nb.ipynb"
    path.write_text(
        _nb(
            "import torch\nimport torch.nn as nn\nmodel = nn.Linear(2, 2)\n"
            "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
            "model.eval()\nwith torch.no_grad():\n    print(model(torch.zeros(1, 2)))\n",
            "for step in range(3):\n    loss = model(torch.zeros(1, 2)).sum()\n"
            "    loss.backward()\n    opt.step()\n",
        )
    )
    out = _cli("check", "--no-cache", str(path)).stdout
    assert "on line 1 of cell 2" in out, out
    assert "line 5" not in out  # the eval()'s line among the concatenated cells


def test_interactive_names_the_cells_lines_too(tmp_path: Path) -> None:
    path = tmp_path / "nb.ipynb"
    path.write_text(_nb(*CELLS))
    result = _cli("apply", "-i", str(path), input="n\n")
    assert f"{path}:cell 4:5:5: RNF001" in result.stdout
    assert "set by `evaluate()` on line 7)" in result.stdout, result.stdout


def _json_line(path: Path, text: str) -> int:
    """The line of the file that holds ``text``."""
    [n] = [i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    return n


def test_machine_formats_point_at_the_json_line_of_the_cell_line(notebook: Path) -> None:
    backward = _json_line(notebook, '"    loss.backward()\\n"')
    gh = _cli("check", "--output-format", "github", str(notebook)).stdout
    assert f",line={backward},endLine={backward}::" in gh, gh
    assert ",col=" not in gh  # the JSON line's columns are not the cell's
    assert f"{notebook}:cell 4:5:5: RNF001 " in gh
    [issue] = json.loads(_cli("check", "--output-format", "gitlab", str(notebook)).stdout)
    assert issue["location"]["lines"] == {"begin": backward, "end": backward}
    assert issue["description"].startswith("RNF001: cell 4:5:5: ")
    sarif = json.loads(_cli("check", "--output-format", "sarif", str(notebook)).stdout)
    [res] = sarif["runs"][0]["results"]
    assert res["locations"][0]["physicalLocation"]["region"] == {"startLine": backward}
    assert res["message"]["text"].startswith("cell 4:5:5: ")


def test_after_fixing_the_lines_are_of_the_written_notebook(notebook: Path) -> None:
    # ``apply`` reports what is left in the file as written; the JSON line of
    # a finding left there (none here) or of nothing: the run is clean.
    result = _cli("apply", "--output-format", "github", str(notebook))
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert '"    model.train()\\n"' in notebook.read_text()


# --- item 3: fingerprints ------------------------------------------------------


def _prints(path: Path, fmt: str) -> list[str]:
    out = json.loads(_cli("check", "--output-format", fmt, str(path)).stdout)
    if fmt == "gitlab":
        return [i["fingerprint"] for i in out]
    return [r["partialFingerprints"]["rnnfix/v1"] for r in out["runs"][0]["results"]]


@pytest.mark.parametrize("fmt", ["gitlab", "sarif"])
def test_fingerprints_ignore_the_line_numbers_a_message_cites(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "train.py"
    src = "\n".join(CELLS)
    path.write_text(src)
    before = _prints(path, fmt)
    # Lines above move every line, and the "on line N" RNF001's message cites.
    path.write_text("# a comment\n# another\n" + src)
    message = json.loads(_cli("check", "--output-format", "json", str(path)).stdout)
    assert "on line 20" in message["diagnostics"][0]["message"]
    assert _prints(path, fmt) == before


# --- items 5 and 6: the summary ---------------------------------------------------


def test_check_summary_counts_the_listing(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text("\n".join(CELLS))
    result = _cli("apply", "--check", str(path))
    listed = [x for x in result.stdout.splitlines() if ": RNF" in x]
    assert len(listed) == 1 and "[*]" in listed[0]
    assert "1 finding (1 fixable, 0 would be left)" in result.stderr
    assert "0 findings left" not in result.stderr


UNSAFE = "def f(model):\n    model.module.eval()\n"  # RNF002's fix is unsafe here


def test_hidden_unsafe_fixes_are_counted(tmp_path: Path) -> None:
    path = tmp_path / "t.py"
    path.write_text(UNSAFE)
    result = _cli("apply", str(path))
    assert "1 finding left, 0 failed; 1 more fix available with `--unsafe-fixes`" in result.stderr
    result = _cli("check", str(path))
    assert "1 more fix available with `--unsafe-fixes`" in result.stderr
    result = _cli("check", "--unsafe-fixes", str(path))
    assert "--unsafe-fixes`" not in result.stderr


# --- item 7 ------------------------------------------------------------------------


def test_an_unknown_selector_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "t.py"
    path.write_text(UNSAFE)
    for flag in ("--select", "--ignore"):
        result = _cli("check", flag, "XYZ", str(path))
        assert result.exit_code == 2
        assert "unknown rule selector 'XYZ'" in result.output
    (tmp_path / "pyproject.toml").write_text('[tool.rnnfix]\nselect = ["RNF9"]\n')
    result = _cli("check", str(path))
    assert result.exit_code == 2 and "'RNF9'" in result.output and "pyproject.toml" in result.output


def test_an_empty_folder_is_said(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = _cli("check", str(tmp_path / "empty"))
    assert result.exit_code == 0
    assert "no Python files or notebooks found" in result.stderr


def test_a_parse_error_has_its_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.py"
    path.write_text("x = 1\ny = (2 +\nmodel.eval()\n")  # a mode call: parsed (``filegate``)
    result = _cli("check", str(path))
    assert result.exit_code == 2
    assert f"{path}:2:5: cannot parse:" in result.stderr
    data = json.loads(_cli("check", "--output-format", "json", str(path)).stdout)
    assert (data["files"][0]["error_line"], data["files"][0]["error_column"]) == (2, 5)


def test_help_shows_every_commands_help_whole() -> None:
    out = _cli("--help").output
    assert "explain  Print a rule's documentation." in out
    assert "check    Report mode bugs in PATHS; change nothing." in out
    commands = out.split("Commands:")[1]
    assert "..." not in commands and "(e.g." not in commands


def test_apply_verify_output_ends_with_a_line_break(tmp_path: Path) -> None:
    path = tmp_path / "t.py"
    path.write_text(
        "import torch.nn as nn\n\nmodel = nn.DataParallel(nn.Linear(2, 2))\nmodel.module.train()\n"
    )
    command = f"{sys.executable} -c pass"  # imports no torch: nothing verified, rolled back
    result = _cli("apply", "--verify", command, "--verify-timeout", "60", str(path))
    assert "rnnfix verify" in result.stderr or "roll" in result.stderr, result.stderr
    assert result.stderr.endswith("\n")
    assert "\n\n" not in result.stderr[-2:]


def test_interactive_shows_each_fix_on_the_ones_accepted(tmp_path: Path) -> None:
    src = (
        "import torch.nn as nn\n\n"
        "a = nn.DataParallel(nn.Linear(2, 2))\n"
        "a.module.train()\n"
        "b = nn.DataParallel(nn.Linear(2, 2))\n"
        "b.module.train()\n"
    )
    path = tmp_path / "two.py"
    path.write_text(src)
    result = _cli("apply", "-i", "--select", "RNF002", str(path), input="y\ny\n")
    assert result.exit_code == 0, result.output
    second = result.stdout.split("Apply this fix")[1]
    # The second diff is of the source with the first fix in: ``a.train()``
    # is context there, not ``a.module.train()``.
    assert " a.train()\n" in second and "a.module.train()" not in second
    assert path.read_text() == src.replace(".module.", ".")


# --- item 8: newer syntax ----------------------------------------------------------

# With a mode call: a file no rule can report in is not parsed (``filegate``).
PEP695 = "type Pair[T] = tuple[T, T]\nmodel.eval()\n"


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="parses on 3.12")
def test_newer_syntax_is_not_checked_and_does_not_fail_the_run(tmp_path: Path) -> None:
    (tmp_path / "new.py").write_text(PEP695)
    (tmp_path / "clean.py").write_text("x = 1\n")
    result = _cli("check", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert "needs Python 3.12 to parse" in result.stderr
    assert "1 not checked (needs Python 3.12 to parse" in result.stderr
    assert ", 0 failed" in result.stderr
    (tmp_path / "buggy.py").write_text(UNSAFE)
    assert _cli("check", str(tmp_path)).exit_code == 1  # the rest still decide
    data = json.loads(_cli("check", "--output-format", "json", str(tmp_path)).stdout)
    outcomes = {Path(f["path"]).name: f["outcome"] for f in data["files"]}
    assert outcomes["new.py"] == "not checked"


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="parses on 3.12")
def test_target_version_older_than_the_syntax_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "new.py").write_text(PEP695)
    result = _cli("check", "--target-version", "py311", str(tmp_path))
    assert result.exit_code == 2
    assert "newer than target-version py311" in result.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.rnnfix]\ntarget-version = "py310"\n')
    result = _cli("check", str(tmp_path / "new.py"))
    assert result.exit_code == 2 and "target-version py310" in result.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.rnnfix]\ntarget-version = "3.10"\n')
    result = _cli("check", str(tmp_path / "new.py"))
    assert result.exit_code == 2 and "must be one of py38" in result.output


# --- item 9: the warm cache keeps the follow-ups ----------------------------------


def _subprocess(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    env.pop("RNNFIX_NO_CACHE", None)
    return subprocess.run(
        [sys.executable, "-m", "rnnfix", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_warm_cache_keeps_the_followups(tmp_path: Path, fmt: str) -> None:
    (tmp_path / "train.py").write_text(FOLLOWUP_SRC)
    (tmp_path / ".git").mkdir()  # the cache goes at the project root
    cold = _subprocess("apply", "--check", "--output-format", fmt, "train.py", cwd=tmp_path)
    warm = _subprocess("apply", "--check", "--output-format", fmt, "train.py", cwd=tmp_path)
    assert cold.stdout == warm.stdout and cold.stderr == warm.stderr
    assert warm.stdout.count("RNF00") >= 2, warm.stdout  # RNF003 and the RNF001 it asks for


# --- item 10: a cell indented as a whole ----------------------------------------------


def test_a_cell_indented_as_a_whole_is_checked_and_fixed(tmp_path: Path) -> None:
    path = tmp_path / "nb.ipynb"
    path.write_text(
        _nb(
            "import torch.nn as nn\n",
            "    model = nn.DataParallel(nn.Linear(2, 2))\n\n    model.module.train()\n",
        )
    )
    result = _cli("check", str(path))
    assert "unexpected indent" not in result.output
    assert f"{path}:cell 2:3:5: RNF002" in result.stdout
    assert _cli("apply", str(path)).exit_code == 0
    cell: list[str] = json.loads(path.read_text())["cells"][1]["source"]
    assert cell == ["    model = nn.DataParallel(nn.Linear(2, 2))\n", "\n", "    model.train()\n"]


# --- item 11: where the inserted line goes ------------------------------------------


def test_fix_description_says_before_the_loop(tmp_path: Path) -> None:
    path = tmp_path / "main.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\n\n\n"
        "def evaluate(model):\n    model.eval()\n    with torch.no_grad():\n"
        "        return model(torch.zeros(1, 2)).sum().item()\n\n\n"
        "def main():\n    model = nn.Linear(2, 2)\n"
        "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    print(evaluate(model))\n    for epoch in range(3):\n"
        "        loss = model(torch.zeros(1, 2)).sum()\n        opt.zero_grad()\n"
        "        loss.backward()\n        opt.step()\n"
    )
    data: dict[str, Any] = json.loads(_cli("check", "--output-format", "json", str(path)).stdout)
    [diag] = data["diagnostics"]
    assert diag["fix"]["description"] == "Insert `model.train()` before the loop on line 15"
    [edit] = diag["fix"]["edits"]
    assert edit == {
        "content": "    model.train()\n",
        "location": {"row": 15, "column": 1},
        "end_location": {"row": 15, "column": 1},
    }
