"""``rnnfix check`` (report only, as ``ruff check``) and the options ruff
users expect: ``--show-fixes``, ``--output-file``, ``--exit-zero``,
``--show-settings``, ``--show-files``, and the ``concise``/``full`` formats."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner, Result

from rnnfix.cli.app import cli
from tests.cli.conftest import BUGGY, CLEAN, FIXED

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input)


def test_check_reports_and_writes_nothing(tree: Path) -> None:
    result = _cli("check", str(tree))
    assert result.exit_code == 1
    assert f"{tree / 'buggy.py'}:4:1: RNF002 [*]" in result.stdout
    assert "rnnfix: 2 files checked, 1 finding (1 fixable), 0 failed" in result.stderr
    assert (tree / "buggy.py").read_text() == BUGGY
    assert _cli("check", str(tree / "clean.py")).exit_code == 0


def test_check_of_stdin_prints_diagnostics_not_the_source() -> None:
    result = _cli("check", "--stdin-filename", "x.py", "-", input=BUGGY)
    assert result.exit_code == 1
    assert result.stdout.startswith("x.py:4:1: RNF002 [*]")
    assert "import torch" not in result.stdout


def test_check_has_no_apply_only_options(tree: Path) -> None:
    for flag in ("--diff", "-i", "--exit-non-zero-on-fix"):
        assert _cli("check", flag, str(tree)).exit_code == 2


def test_output_file(tree: Path, tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    result = _cli("check", "--output-format", "json", "-o", str(target), str(tree))
    assert result.exit_code == 1 and result.stdout == ""
    assert json.loads(target.read_text())["diagnostics"][0]["code"] == "RNF002"
    assert "1 finding" in result.stderr  # the summary still goes to stderr


def test_exit_zero(tree: Path) -> None:
    assert _cli("check", "--exit-zero", str(tree)).exit_code == 0
    assert _cli("apply", "--check", "--exit-zero", str(tree)).exit_code == 0
    (tree / "bad.py").write_text("def (:\nm.eval()\n")  # a mode call: parsed (``filegate``)
    assert _cli("check", "--exit-zero", str(tree)).exit_code == 2  # a failure still counts


def test_show_settings(tree: Path) -> None:
    (tree / "pyproject.toml").write_text('[tool.rnnfix]\nignore = ["RNF005"]\n')
    result = _cli("check", "--show-settings", "--select", "RNF00", str(tree))
    assert result.exit_code == 0
    assert f"# settings from {tree / 'pyproject.toml'}" in result.stdout
    assert 'select = ["RNF00"]' in result.stdout  # TOML, as [tool.rnnfix] spells it
    assert 'ignore = ["RNF005"]' in result.stdout
    assert "# target-version is not set" in result.stdout


def test_show_files(tree: Path) -> None:
    (tree / "notes.txt").write_text("not Python")
    result = _cli("check", "--show-files", str(tree))
    assert result.exit_code == 0
    assert sorted(Path(line).name for line in result.stdout.splitlines()) == [
        "buggy.py",
        "clean.py",
    ]


def test_show_fixes(tree: Path) -> None:
    result = _cli("check", "--show-fixes", "--select", "RNF002", str(tree))
    assert "Fixes available:\n" in result.stdout
    assert f"  {tree / 'buggy.py'}:4:1: RNF002 use `model.train()`\n" in result.stdout
    result = _cli("apply", "--show-fixes", "--select", "RNF002", str(tree))
    assert "Fixes applied:\n" in result.stdout
    assert (tree / "buggy.py").read_text() == FIXED


def test_concise_is_text_and_full_shows_the_source(tree: Path) -> None:
    text = _cli("check", str(tree)).stdout
    assert _cli("check", "--output-format", "concise", str(tree)).stdout == text
    full = _cli("check", "--output-format", "full", str(tree)).stdout
    assert full.startswith(text.splitlines()[0] + "\n")
    assert "4 | model.module.train()  # keep this comment\n" in full
    assert "  | ^^^^^^^^^^^^^^^^^^^^ RNF002\n" in full
    assert "  = fix: " in full


def test_json_has_the_rule_url_and_edits_that_make_the_fixed_file(tree: Path) -> None:
    data = json.loads(_cli("check", "--output-format", "json", str(tree)).stdout)
    [diag] = data["diagnostics"]
    assert diag["url"].endswith("/docs/rules/RNF002.md")
    assert (ROOT / "docs" / "rules" / "RNF002.md").is_file()
    assert _applied(BUGGY, diag["fix"]["edits"]) == FIXED


def _applied(text: str, edits: list[dict[str, dict[str, int]]]) -> str:
    """What an editor does with ruff-style edits (1-based rows and columns,
    all of the original text)."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def offset(at: dict[str, int]) -> int:
        return starts[at["row"] - 1] + at["column"] - 1

    for edit in sorted(edits, key=lambda e: offset(e["location"]), reverse=True):
        begin, end = offset(edit["location"]), offset(edit["end_location"])
        text = text[:begin] + str(edit["content"]) + text[end:]
    return text


def test_rule_pages_are_up_to_date() -> None:
    done = subprocess.run(
        [sys.executable, "scripts/rule_docs.py", "--check"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout


def test_check_end_to_end_in_a_subprocess(tree: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rnnfix", "check", "--no-cache", "--output-format", "full", "."],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert "buggy.py:4:1: RNF002 [*]" in done.stdout
    assert done.stderr.endswith("1 finding (1 fixable), 0 failed\n")
    assert (tree / "buggy.py").read_text() == BUGGY and (tree / "clean.py").read_text() == CLEAN


def test_the_selector_check_knows_every_rule() -> None:
    from rnnfix.cli.options import rule_codes
    from rnnfix.rules import all_rules

    assert rule_codes() == list(all_rules())
