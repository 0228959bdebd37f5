"""The small Python API the CLI is built on."""

from __future__ import annotations

import pytest

import rnnfix

SRC = "import torch.nn as nn\nmodel = nn.DataParallel(nn.Linear(2, 2))\nmodel.module.eval()\n"


def test_check_returns_findings() -> None:
    findings = rnnfix.check(SRC, select="RNF002")
    assert [(f.code, f.line, f.col, f.fixable) for f in findings] == [("RNF002", 3, 1, True)]


def test_fix_returns_fixed_source() -> None:
    result = rnnfix.fix(SRC, select=("RNF002",))
    assert result.fixed.endswith("model.eval()\n")
    assert [f.code for f in result.applied] == ["RNF002"]
    assert result.findings == []


def test_fix_is_noop_on_clean_source() -> None:
    src = "x = 1\n"
    assert rnnfix.fix(src).fixed is src or rnnfix.fix(src).fixed == src


def test_syntax_error_raises() -> None:
    with pytest.raises(SyntaxError):
        rnnfix.check("def f(:\n")


def test_fix_reports_followups_at_the_input_lines() -> None:
    src = (
        "import torch\nfrom torch import nn\n\n"
        "model = nn.Sequential(nn.Linear(8, 2), nn.Dropout(0.5))\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n\n"
        "model.train()\n"
        "for epoch in range(3):\n"
        "    for x, y in train_loader:\n"
        "        opt.zero_grad()\n"
        "        nn.functional.cross_entropy(model(x), y).backward()\n"
        "        opt.step()\n"
        "    for x, y in val_loader:\n"
        "        print(model(x))\n"
    )
    result = rnnfix.fix(src)
    assert [(f.code, f.line) for f in result.initial] == [("RNF003", 13)]
    assert [(f.code, f.line) for f in result.followups] == [("RNF001", 12)]  # opt.step()
    assert [f.code for f in result.reported] == ["RNF001", "RNF003"]
    assert len(result.reported) == len(result.applied)
    assert rnnfix.fix(result.fixed).fixed == result.fixed
