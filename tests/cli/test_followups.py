"""``--check`` and ``--output-format json`` say everything ``--diff`` writes:
a fix a later pass finds (the ``train()`` RNF001 asks for once RNF003 put an
``eval()`` in) gets its own diagnostic, at the input's line numbers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rnnfix.cli.app import cli

SRC = """\
import torch
from torch import nn

model = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.5), nn.Linear(16, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

model.train()
for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

    accuracy = 0.0
    for x, y in val_loader:
        accuracy += (model(x).argmax(1) == y).float().mean().item()
    print(epoch, accuracy)
"""


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text(SRC)
    return path


def _diff_hunks(diff: str) -> int:
    """Runs of added lines in a unified diff: one per inserted edit here."""
    runs, inside = 0, False
    for line in diff.splitlines():
        added = line.startswith("+") and not line.startswith("+++")
        runs += added and not inside
        inside = added
    return runs


def test_check_lists_the_followup_fix(script: Path) -> None:
    result = CliRunner().invoke(cli, ["apply", "--check", str(script)])
    assert result.exit_code == 1, result.output
    lines = [line for line in result.stdout.splitlines() if ": RNF" in line]
    assert [line.split(": ")[0].rsplit(":", 2)[1:] for line in lines] == [["12", "9"], ["15", "5"]]
    assert "RNF001 [*]" in lines[0] and "follows from fixing RNF003 at line 15" in lines[0]
    assert "RNF003 [*]" in lines[1]
    assert "2 findings (2 fixable, 0 would be left)" in result.stderr
    assert script.read_text() == SRC


def test_json_has_one_diagnostic_per_fix_the_diff_writes(script: Path) -> None:
    diff = CliRunner().invoke(cli, ["apply", "--diff", str(script)]).stdout
    result = CliRunner().invoke(cli, ["apply", "--check", "--output-format", "json", str(script)])
    data = json.loads(result.stdout)
    diagnostics = data["diagnostics"]
    assert [(d["code"], d["line"]) for d in diagnostics] == [("RNF001", 12), ("RNF003", 15)]
    assert all(d["fixable"] for d in diagnostics)
    assert data["files"][0]["fixes_available"] == len(diagnostics)
    # Where the diff inserts model.train() (line 8, the loop head the RNF001
    # fix names), model.eval() and the with (line 15).
    assert "Insert `model.train()` at the head of the loop on line 8" in str(diagnostics)
    assert _diff_hunks(diff) == 2


def test_apply_writes_what_check_announced(script: Path) -> None:
    result = CliRunner().invoke(cli, ["apply", str(script)])
    assert result.exit_code == 0, result.output
    assert "2 fixes applied, 0 findings left" in result.stderr
    fixed = script.read_text()
    # The train() before the loop moves to its head (issue 36.5: no redundant
    # copy left right before the loop).
    assert fixed.count("model.train()") == 1 and fixed.count("model.eval()") == 1
    assert "for epoch in range(3):\n    model.train()\n" in fixed
    assert "\nmodel.train()\n" not in fixed


def test_subprocess_check_and_json(script: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    base = [sys.executable, "-m", "rnnfix", "apply", "--check"]
    proc = subprocess.run([*base, str(script)], capture_output=True, text=True, env=env)
    assert proc.returncode == 1, proc.stderr
    assert f"{script}:12:9: RNF001 [*]" in proc.stdout
    assert f"{script}:15:5: RNF003 [*]" in proc.stdout
    proc = subprocess.run(
        [*base, "--output-format", "json", str(script)], capture_output=True, text=True, env=env
    )
    data = json.loads(proc.stdout)
    assert [d["code"] for d in data["diagnostics"]] == ["RNF001", "RNF003"]
    assert script.read_text() == SRC


def test_refused_fix_is_reported_without_fix_mark(tmp_path: Path) -> None:
    path = tmp_path / "evaluate.py"
    src = (
        "import torch\nfrom torch.nn import Module\n\n\n"
        "def evaluate(model: Module, xs):\n"
        "    def forward_func(x):\n        return model(x)\n\n"
        "    for x in xs:\n        run(forward_func, x)\n"
    )
    path.write_text(src)
    result = CliRunner().invoke(cli, ["apply", str(path)])
    fixed = path.read_text()
    # Converges to at most one of each (the rule's own fix), or is refused.
    assert fixed.count("@torch.no_grad()") <= 1 and fixed.count(".eval()") <= 1
    if fixed == src:
        assert "fix not applied (did not converge" in result.stdout
        assert "RNF003 [*]" not in result.stdout
    again = CliRunner().invoke(cli, ["apply", str(path)])
    assert path.read_text() == fixed, again.output
