"""``--statistics``, ``--exit-non-zero-on-fix`` and ``rnnfix rules --output-format json``."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from rnnfix.cli.app import cli
from rnnfix.rules import all_rules

BUGGY = "import torch.nn as nn\n\nmodel = nn.DataParallel(nn.Linear(2, 2))\nmodel.module.train()\n"


def tree(tmp_path: Path) -> Path:
    (tmp_path / "a.py").write_text(BUGGY)
    (tmp_path / "b.py").write_text(BUGGY + "model.module.eval()\n")
    return tmp_path


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["apply", "--no-cache", "-q", *args])
    return result.exit_code, result.output


def test_statistics_text(tmp_path: Path) -> None:
    code, out = run("--check", "--statistics", str(tree(tmp_path)))
    assert code == 1
    name = all_rules()["RNF002"].name
    assert out == f"3\tRNF002\t[*] {name}\n"


def test_statistics_json(tmp_path: Path) -> None:
    code, out = run("--check", "--statistics", "--output-format", "json", str(tree(tmp_path)))
    assert json.loads(out) == [
        {"code": "RNF002", "name": all_rules()["RNF002"].name, "count": 3, "fixable": 3}
    ]


def test_statistics_after_fixing_counts_what_is_left(tmp_path: Path) -> None:
    code, out = run("--statistics", str(tree(tmp_path)))
    assert (code, out) == (0, "")


def test_exit_non_zero_on_fix(tmp_path: Path) -> None:
    root = tree(tmp_path)
    assert run("--exit-non-zero-on-fix", str(root))[0] == 1
    assert "model.train()" in (root / "a.py").read_text()
    assert run("--exit-non-zero-on-fix", str(root))[0] == 0  # nothing left to fix
    assert run(str(tree(tmp_path)))[0] == 0  # without it: fixed everything, exit 0


def test_rules_json() -> None:
    result = CliRunner().invoke(cli, ["rules", "--output-format", "json"])
    rules = json.loads(result.output)
    assert [r["code"] for r in rules] == list(all_rules())
    first = rules[0]
    assert set(first) == {"code", "name", "summary", "fix_safety", "explanation"}
    assert "What it does" in first["explanation"]
