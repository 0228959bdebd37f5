"""``--output-format sarif`` is valid SARIF 2.1.0 (the official schema, a
copy in this folder), and a fixable finding carries its fix as
``fixes``/``artifactChanges`` that turn the file into the fixed one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from rnnfix.cli.app import cli
from rnnfix.report.sarif import replacements_of
from tests.cli.conftest import BUGGY, CLEAN, FIXED
from tests.cli.test_followups import SRC as FOLLOWUP_SRC

SCHEMA = json.loads((Path(__file__).parent / "sarif-schema-2.1.0.json").read_text())


def _sarif(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["apply", "--output-format", "sarif", "-q", *args])
    assert result.exit_code in (0, 1, 2), result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    jsonschema.Draft4Validator(
        SCHEMA, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER
    ).validate(doc)
    return doc


def apply_replacements(text: str, replacements: list[dict[str, Any]]) -> str:
    """What a SARIF consumer does with an artifactChange (regions by line and
    character column, all relative to the original text)."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(line: int, column: int) -> int:
        return starts[line - 1] + column - 1

    out, at = [], 0
    for rep in replacements:
        region = rep["deletedRegion"]
        begin = offset(region["startLine"], region["startColumn"])
        end = offset(region["endLine"], region["endColumn"])
        assert at <= begin <= end
        out.append(text[at:begin])
        out.append(rep["insertedContent"]["text"])
        at = end
    out.append(text[at:])
    return "".join(out)


def test_the_schema_is_the_official_one() -> None:
    assert SCHEMA["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    jsonschema.Draft4Validator.check_schema(SCHEMA)


def test_the_validation_catches_a_broken_log() -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(SCHEMA).validate({"version": "2.1.0", "runs": [{}]})


def test_a_dry_run_carries_each_fix_and_the_fix_makes_the_fixed_file(tmp_path: Path) -> None:
    (tmp_path / "buggy.py").write_text(BUGGY)
    (tmp_path / "clean.py").write_text(CLEAN)
    doc = _sarif("--check", "--select", "RNF002", str(tmp_path))
    run = doc["runs"][0]
    assert run["columnKind"] == "unicodeCodePoints"
    [result] = run["results"]
    [fix] = result["fixes"]
    [change] = fix["artifactChanges"]
    assert change["artifactLocation"]["uri"] == str(tmp_path / "buggy.py")
    assert fix["properties"] == {"safe": True}
    assert apply_replacements(BUGGY, change["replacements"]) == FIXED
    assert change["replacements"] == [
        {
            # The file's last line, with its line break (column 42).
            "deletedRegion": {"startLine": 4, "startColumn": 1, "endLine": 4, "endColumn": 43},
            "insertedContent": {"text": "model.train()  # keep this comment\n"},
        }
    ]


def test_a_write_run_reports_what_is_left_and_is_valid(tmp_path: Path) -> None:
    (tmp_path / "buggy.py").write_text(BUGGY)
    doc = _sarif("--select", "RNF002", str(tmp_path))
    assert doc["runs"][0]["results"] == []
    assert (tmp_path / "buggy.py").read_text() == FIXED


def test_unsafe_fixes_only_with_unsafe_fixes(tmp_path: Path) -> None:
    src = (
        "import torch\n"
        "from torch import nn\n"
        "from torch.backends import cudnn\n"
        "\n"
        "\n"
        "def explain(model, x):\n"
        "    model.eval()\n"
        "    x.requires_grad_(True)\n"
        "    model(x)[0].sum().backward()\n"
        "    return x.grad\n"
        "\n"
        "\n"
        'if __name__ == "__main__":\n'
        "    cudnn.enabled = False\n"
        "    lstm = nn.LSTM(4, 4)\n"
        "    print(explain(lstm, torch.randn(3, 1, 4)))\n"
    )
    path = tmp_path / "explain.py"
    path.write_text(src)
    safe_only = _sarif("--check", "--select", "RNF005", str(path))
    [result] = safe_only["runs"][0]["results"]
    assert "fixes" not in result
    unsafe = _sarif("--check", "--unsafe-fixes", "--select", "RNF005", str(path))
    [result] = unsafe["runs"][0]["results"]
    [fix] = result["fixes"]
    assert fix["properties"] == {"safe": False}
    fixed = apply_replacements(src, fix["artifactChanges"][0]["replacements"])
    assert "cudnn.enabled = False" not in fixed
    compile(fixed, "explain.py", "exec")


def test_followups_carry_no_fix_but_the_input_findings_do(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(FOLLOWUP_SRC)
    doc = _sarif("--check", str(path))
    results = doc["runs"][0]["results"]
    by_code = {r["ruleId"]: r for r in results}
    assert set(by_code) == {"RNF001", "RNF003"}
    assert "fixes" not in by_code["RNF001"]  # a follow-up: an edit of a text no file holds
    change = by_code["RNF003"]["fixes"][0]["artifactChanges"][0]
    fixed = apply_replacements(FOLLOWUP_SRC, change["replacements"])
    assert "    model.eval()\n    with torch.no_grad():\n" in fixed


def test_notebooks_and_failures_are_valid(tmp_path: Path) -> None:
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "metadata": {},
                "outputs": [],
                "source": BUGGY.splitlines(keepends=True),
            }
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / "nb.ipynb").write_text(json.dumps(nb))
    (tmp_path / "broken.py").write_text("def (:\nm.module.train()\n")  # text RNF002 reads
    doc = _sarif("--check", "--select", "RNF002", str(tmp_path))
    [result] = doc["runs"][0]["results"]
    assert result["message"]["text"].startswith("cell 1:4:1: ")
    # One JSON line holds the whole notebook: the region is that line, no column.
    region = result["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 1}
    assert "fixes" not in result
    [notification] = doc["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert "cannot parse" in notification["message"]["text"]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("a\nb\nc\n", "a\nB\nc\n"),
        ("a\nb\nc\n", "x\na\nb\nc\n"),  # insert at the top
        ("a\nb\nc\n", "a\nb\nc\nd\n"),  # insert at the end
        ("a\nb\nc", "a\nb\nc\nd\n"),  # last line without a newline
        ("a\nb\nc\n", "a\nc\n"),
        ("a\nb\nc\nd\n", "A\nb\nc\nD\nE\n"),
        ("", "x\n"),
    ],
)
def test_replacements_rebuild_the_new_text(old: str, new: str) -> None:
    assert apply_replacements(old, replacements_of(old, new)) == new


def test_a_warm_cache_keeps_the_fixes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The result cache keeps no finding's edits: a second dry run must not
    # lose the fixes the first one carried.
    monkeypatch.delenv("RNNFIX_NO_CACHE", raising=False)
    (tmp_path / "buggy.py").write_text(BUGGY)
    first = _sarif("--check", "--select", "RNF002", str(tmp_path))
    second = _sarif("--check", "--select", "RNF002", str(tmp_path))
    assert "fixes" in first["runs"][0]["results"][0]
    assert second == first
