"""Item 13: a file over the analysis budget is reported as not checked, and
the run goes on."""

from __future__ import annotations

from pathlib import Path

import pytest

from rnnfix.config.settings import Settings
from rnnfix.run import budget
from rnnfix.run.process import Outcome, process_files

from .conftest import BUGGY, run_rnnfix

EVAL_LOOP = """\
    for epoch in range(3):
        for x in loader:
            optimizer.zero_grad()
            model(x)[0].sum().backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            for x in val_loader:
                model(x)
"""


def _pathological(path: Path, loops: int) -> None:
    """One function with many evaluation loops: the analysis grows with the
    square of its size."""
    path.write_text(
        "import torch\n\n\ndef main(loader, val_loader):\n"
        "    model = torch.nn.LSTM(8, 8)\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n" + EVAL_LOOP * loops
    )


def test_a_function_over_the_statement_limit_is_skipped_at_once(project: Path) -> None:
    big = project / "big.py"
    lines = "".join(f"    x{i} = {i}\n" for i in range(budget.MAX_FUNCTION_STATEMENTS + 1))
    # Mode code, so that the file gate lets it through to the analysis.
    big.write_text(BUGGY + "\n\ndef f():\n    model.eval()\n" + lines)
    run = run_rnnfix("apply", "--check", str(project))
    assert run.returncode == 2
    assert "train.py:8:9: RNF001" in run.stdout
    limit = budget.MAX_FUNCTION_STATEMENTS
    assert (
        f"big.py: too large to analyse: {limit + 2} statements in one function "
        f"(the limit is {limit}); not checked" in run.stderr
    )


def test_statements_on_one_line_count_too() -> None:
    n = budget.MAX_FUNCTION_STATEMENTS + 5
    text = "def f(): " + "; ".join(["x = 1"] * n) + "\n"
    assert budget.too_large(text) is not None
    assert budget.too_large(BUGGY) is None


def test_a_file_over_the_cpu_budget_is_skipped(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(budget, "CPU_SECONDS", 0.3)
    slow = project / "slow.py"
    _pathological(slow, 40)  # several seconds of CPU
    results = process_files(
        [slow, project / "train.py"], Settings(), write=True, jobs=1, cache=None
    )
    assert [r.outcome for r in results] == [Outcome.FAILED, Outcome.CHANGED]
    assert results[0].error == "analysis budget exceeded (0.3 s of CPU); not checked"
    assert "model.train()" in (project / "train.py").read_text()
    assert "model.train()" not in slow.read_text()
