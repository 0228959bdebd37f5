"""``rnnfix apply -i``: each fix shown and asked about; only accepted fixes
are written, the result parses and a second review changes nothing."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from rnnfix.analysis.context import Finding
from rnnfix.cli.app import cli
from rnnfix.config.settings import Settings
from rnnfix.run.engine import fix_source
from tests.cli.test_followups import SRC as FOLLOWUP_SRC

TWO = (
    "import torch.nn as nn\n"
    "\n"
    "model = nn.DataParallel(nn.Linear(2, 2))\n"
    "model.module.train()  # keep this comment\n"
    "other = nn.DataParallel(nn.Linear(2, 2))\n"
    "other.module.eval()\n"
)
FIRST = TWO.replace("model.module.train()", "model.train()")
SECOND = TWO.replace("other.module.eval()", "other.eval()")
BOTH = FIRST.replace("other.module.eval()", "other.eval()")


def _review(path: Path, answers: str, *args: str) -> Result:
    return CliRunner().invoke(cli, ["apply", "-i", *args, str(path)], input=answers)


@pytest.fixture
def two(tmp_path: Path) -> Path:
    path = tmp_path / "two.py"
    path.write_text(TWO)
    return path


@pytest.mark.parametrize(
    ("answers", "expected", "code"),
    [
        ("y\ny\n", BOTH, 0),
        ("n\ny\n", SECOND, 1),
        ("y\nn\n", FIRST, 1),
        ("n\nn\n", TWO, 1),
        ("yes\nNo\n", FIRST, 1),  # the first letter counts, in either case
        ("a\n", BOTH, 0),
        ("n\na\n", SECOND, 1),
        ("q\n", TWO, 1),
        ("y\nq\n", FIRST, 1),  # what was accepted before quitting is written
        ("", TWO, 1),  # end of input counts as quit
        ("y\n", FIRST, 1),
    ],
)
def test_only_accepted_fixes_are_written(two: Path, answers: str, expected: str, code: int) -> None:
    result = _review(two, answers)
    assert result.exit_code == code, result.output
    assert two.read_text() == expected
    ast.parse(two.read_text())


def test_each_question_shows_the_finding_and_the_diff_of_its_fix_alone(two: Path) -> None:
    result = _review(two, "n\nn\n")
    out = result.stdout
    assert out.count("Apply this fix [y,n,a,q,d,?]? ") == 2
    first, second = out.split("Apply this fix")[:2]
    assert f"{two}:4:1: RNF002 [*] `model.module.train(...)`" in first
    assert "-model.module.train()  # keep this comment\n+model.train()" in first
    assert "other.eval()" not in first  # only this fix's change
    assert f"{two}:6:1: RNF002 [*] `other.module.eval(...)`" in second
    assert "-other.module.eval()\n+other.eval()" in second
    assert "\x1b[" not in out  # no colour off a terminal


def test_all_and_quit_stop_asking(two: Path) -> None:
    assert _review(two, "a\n").stdout.count("Apply this fix") == 1
    two.write_text(TWO)
    assert _review(two, "q\n").stdout.count("Apply this fix") == 1


def test_end_of_input_says_so(two: Path) -> None:
    result = _review(two, "")
    assert "end of input: no further fix applied" in result.stdout
    assert "0 fixes applied" in result.stderr


def test_details_print_the_rule_docs_then_ask_again(two: Path) -> None:
    result = _review(two, "d\ny\nn\n")
    assert "# RNF002 wrapper-mode-via-module" in result.stdout
    assert "## Why is this bad?" in result.stdout
    assert result.stdout.count("Apply this fix") == 3
    assert two.read_text() == FIRST


def test_an_unknown_answer_prints_the_help(two: Path) -> None:
    result = _review(two, "maybe\n\ny\ny\n")
    assert result.stdout.count("a - apply this fix and all remaining ones") == 2
    assert two.read_text() == BOTH


def test_colour_on_request(two: Path) -> None:
    result = _review(two, "n\nn\n", "--color", "always")
    assert "\x1b[31m-model.module.train()" in result.stdout
    assert "\x1b[32m+model.train()" in result.stdout


def test_a_followup_fix_is_asked_on_the_source_the_accepted_ones_made(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(FOLLOWUP_SRC)
    declined = _review(path, "n\n")
    assert declined.stdout.count("Apply this fix") == 1  # no eval(), no train() to ask for
    assert path.read_text() == FOLLOWUP_SRC
    result = _review(path, "y\nn\n")
    assert "RNF003" in result.stdout and "RNF001" in result.stdout
    assert result.stdout.count("Apply this fix") == 2
    fixed = path.read_text()
    assert "model.eval()" in fixed and fixed.count("model.train()") == 1
    ast.parse(fixed)
    # Idempotent: declining everything again changes nothing.
    again = _review(path, "n\nn\nn\n")
    assert path.read_text() == fixed, again.output
    assert _review(path, "y\n").exit_code == 0
    # RNF001's follow-up moves the train() before the loop to its head.
    after = path.read_text()
    assert after.count("model.train()") == 1
    assert "for epoch in range(3):\n    model.train()\n" in after


def test_a_second_review_declining_everything_changes_nothing(two: Path) -> None:
    _review(two, "n\ny\n")
    before = two.read_bytes()
    result = _review(two, "n\n")
    assert result.stdout.count("Apply this fix") == 1  # only the declined one is left
    assert two.read_bytes() == before


def test_notebook_fixes_are_shown_as_cell_diffs_and_written_when_accepted(tmp_path: Path) -> None:
    def code(*lines: str) -> dict[str, object]:
        return {
            "cell_type": "code",
            "execution_count": None,
            "metadata": {},
            "outputs": [],
            "source": list(lines),
        }

    cells = [
        code("import torch.nn as nn\n"),
        code("model = nn.DataParallel(nn.Linear(2, 2))\n", "model.module.train()"),
        code("other = nn.DataParallel(nn.Linear(2, 2))\n", "other.module.eval()"),
    ]
    nb = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "train.ipynb"
    path.write_text(json.dumps(nb, indent=1) + "\n")
    result = _review(path, "y\nn\n")
    assert result.exit_code == 1, result.output
    assert f"--- a/{str(path).lstrip('/')}:cell 2" in result.stdout
    assert f"{path}:cell 2:2:1: RNF002" in result.stdout
    assert f"{path}:cell 3:2:1: RNF002" in result.stdout
    assert '"cells"' not in result.stdout  # the cells' Python, not the JSON
    sources = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]]
    assert sources[1].endswith("model.train()")
    assert sources[2].endswith("other.module.eval()")


@pytest.mark.parametrize(
    "args",
    [["--diff"], ["--check"], ["--output-format", "json"], ["--output-format", "sarif"]],
)
def test_interactive_refuses_dry_runs_and_tool_formats(two: Path, args: list[str]) -> None:
    result = CliRunner().invoke(cli, ["apply", "-i", *args, str(two)], input="y\n")
    assert result.exit_code == 2
    assert "-i/--interactive cannot be combined with" in result.output
    assert two.read_text() == TWO


def test_interactive_cannot_read_the_source_from_stdin() -> None:
    result = CliRunner().invoke(cli, ["apply", "-i", "-"], input=TWO)
    assert result.exit_code == 2
    assert "reads its answers from stdin" in result.output


def test_interactive_ignores_the_cache(two: Path) -> None:
    assert CliRunner().invoke(cli, ["apply", "--check", str(two)]).exit_code == 1
    result = _review(two, "y\nn\n")  # a cached result must not skip the questions
    assert result.stdout.count("Apply this fix") == 2
    assert two.read_text() == FIRST


def test_a_real_process_reads_its_answers_from_a_pipe(two: Path) -> None:
    env = {**os.environ, "NO_COLOR": "", "FORCE_COLOR": ""}
    proc = subprocess.run(
        [sys.executable, "-m", "rnnfix", "apply", "-i", "--no-cache", str(two)],
        input="n\ny\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert two.read_text() == SECOND
    # Piped answers are echoed after their prompt, so the transcript reads.
    assert "Apply this fix [y,n,a,q,d,?]? n\n" in proc.stdout
    assert "1 fix applied, 1 finding left" in proc.stderr


def test_the_engine_keeps_a_declined_fix_offered_and_writes_none_of_it() -> None:
    asked: list[tuple[str, int]] = []

    def decide(path: str, finding: Finding, before: str, after: str) -> bool:
        assert before == TWO and after in (FIRST, SECOND)
        asked.append((path, finding.line))
        return after == SECOND

    result = fix_source(TWO, Settings(), "two.py", decide=decide)
    assert asked == [("two.py", 4), ("two.py", 6)]
    assert result.fixed == SECOND
    assert [f.line for f in result.applied] == [6]
    # The declined finding is still there, still fixable.
    assert [(f.line, f.fixable) for f in result.findings] == [(4, True)]
