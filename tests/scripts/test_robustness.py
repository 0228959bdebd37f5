"""The robustness script on a tiny folder, and its ast-outside-the-edits check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import robustness

from tests.scripts.test_ecosystem_check import BUGGY


def test_insertions_and_wraps_are_edits_not_changes_outside() -> None:
    old = "def f(m, x):\n    m.eval()\n    y = m(x)\n    return y\n\nz = 1\n"
    inserted = old.replace("    m.eval()\n", "    m.eval()\n    m.train()\n")
    wrapped = old.replace("    y = m(x)\n", "    with torch.no_grad():\n        y = m(x)\n")
    decorated = "@torch.no_grad()\n" + old
    for new in (inserted, wrapped, decorated):
        assert not robustness.ast_changed_outside_edits(old, new)


def test_an_insertion_that_swallows_untouched_code_is_caught() -> None:
    old = "a = 1\nb = 2\nc = 3\n"
    # The text of `b = 2` is untouched, but it is now inside a string.
    new = 'a = 1\nx = """\nb = 2\n"""\nc = 3\n'
    assert robustness.ast_changed_outside_edits(old, new)


def test_counts_on_a_small_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "train.py").write_text(BUGGY)
    (folder / "broken.py").write_text("def f(:\n    m.module.eval()\n")  # rule text: parsed
    (folder / "clean.py").write_text("import torch\nprint(torch.ones(2))\n")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    out_json = tmp_path / "out.json"

    code = robustness.main(
        [str(folder), "--settings", "default,strict-unsafe", "--json", str(out_json)]
    )

    assert code == 0, capsys.readouterr().out
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before  # never written
    reports = json.loads(out_json.read_text())[str(folder)]
    assert [r["setting"] for r in reports] == ["default", "strict-unsafe"]
    default = reports[0]
    assert default["files"] == 3
    assert default["changed"] == 1 and default["fixes_applied"] >= 1
    assert default["findings"] >= 1 and default["fixable"] >= 1
    assert sum(default["failed"].values()) == 1  # broken.py
    for key in (
        "crashes",
        "not_parsing",
        "changed_without_finding",
        "not_idempotent",
        "ast_outside_edits",
    ):
        assert default[key] == []
    assert "default" in capsys.readouterr().out


def test_failures_are_counted_by_reason_not_location() -> None:
    a = robustness.failure_reason("cell 4: line 7: cannot parse: invalid syntax")
    b = robustness.failure_reason("line 12: cannot parse: invalid syntax")
    assert a == b == "cannot parse invalid syntax"
