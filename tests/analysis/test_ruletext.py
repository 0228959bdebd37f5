"""The rules' file-level pre-conditions never rule out a file that has a finding.

Each rule runs on every fixture with its pre-condition (``may_apply``)
bypassed; where it finds something, the pre-condition must pass. Fixtures run
on their own and, for ``fixtures/project/*``, with the index of their folder
(the other files of the run), with their settings and with ``--strict``.
"""

from __future__ import annotations

import ast
import dataclasses
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from rnnfix.analysis.context import FileContext
from rnnfix.analysis.evalgrad.in_scope import global_cudnn_off
from rnnfix.analysis.project.index import ProjectIndex
from rnnfix.analysis.ruletext import may_call_module_mode, may_switch_cudnn_off
from rnnfix.analysis.syntax.imports import ImportMap
from rnnfix.config.settings import Settings
from rnnfix.rules import (
    rnf001_train_step_in_eval_mode,
    rnf002_wrapper_mode_via_module,
    rnf004_backward_in_eval_through_rnn,
    rnf005_global_cudnn_switch,
)
from rnnfix.rules.rnf006 import rule as rnf006_inference_without_eval
from tests.fixture_args import FIXTURES, project_fixtures, settings_for, single_file_fixtures

_ROOT = FIXTURES.parent

_RULES: list[tuple[ModuleType, str]] = [
    (rnf001_train_step_in_eval_mode, "TrainStepInEvalMode"),
    (rnf002_wrapper_mode_via_module, "WrapperModeViaModule"),
    (rnf004_backward_in_eval_through_rnn, "BackwardInEvalThroughRnn"),
    (rnf005_global_cudnn_switch, "GlobalCudnnSwitch"),
    (rnf006_inference_without_eval, "InferenceWithoutEval"),
]


def _contexts(path: Path, project: ProjectIndex | None) -> Iterator[Callable[[], FileContext]]:
    source = path.read_text(encoding="utf-8")
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return
    settings = settings_for(source)
    for variant in (settings, dataclasses.replace(settings, strict=True), Settings()):
        # A fresh context per rule run: the gate must not see what a rule computed.
        yield lambda v=variant: FileContext(  # type: ignore[misc]
            source=source, tree=tree, settings=v, path=str(path), project=project
        )


def _gate_arg(module: ModuleType, ctx: FileContext) -> Any:
    return (
        ctx.source
        if module in (rnf002_wrapper_mode_via_module, rnf005_global_cudnn_switch)
        else ctx
    )


def _check(path: Path, project: ProjectIndex | None, monkeypatch: pytest.MonkeyPatch) -> int:
    found = 0
    for module, cls_name in _RULES:
        rule = getattr(module, cls_name)()
        gate = module.may_apply
        for make in _contexts(path, project):
            with monkeypatch.context() as m:
                m.setattr(module, "may_apply", lambda _arg: True)
                findings = list(rule.check(make()))
            if findings:
                found += 1
                assert gate(_gate_arg(module, make())), (
                    f"{rule.code} finds {findings[0].message!r} in {path} but its "
                    "pre-condition rules the file out"
                )
    return found


@pytest.mark.parametrize("path", single_file_fixtures(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_single_file_with_a_finding_passes(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _check(path, None, monkeypatch)


@pytest.mark.parametrize("folder", project_fixtures(), ids=lambda p: p.name)
def test_project_file_with_a_finding_passes(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = sorted(folder.rglob("*.py"))
    for path in paths:
        # A fresh index per file: summaries already computed would let
        # ``ProjectIndex.may_hold`` through whatever the text says.
        _check(path, ProjectIndex.build(paths), monkeypatch)


def test_the_fixtures_have_findings_to_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """Guard against a harness that silently checks nothing."""
    total = sum(_check(p, None, monkeypatch) for p in single_file_fixtures()[:40])
    assert total > 0


def _sources() -> list[Path]:
    return sorted(
        p
        for folder in ("fixtures", "tests")
        for p in (_ROOT / folder).rglob("*.py")
        if "expected" not in p.parts
    )


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(_ROOT)))
def test_cudnn_switch_text(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return
    if global_cudnn_off(tree, ImportMap.build(tree)):
        assert may_switch_cudnn_off(source)


@pytest.mark.parametrize(
    "source",
    [
        "import torch\ntorch.backends.cudnn.enabled = False\n",
        "import torch\ntorch.backends.cudnn.enabled=0\n",
        "import torch\n(torch.backends.cudnn.enabled) = (  # off\n    False)\n",
        "import torch\ntorch.backends.cudnn \\\n    .enabled = False\n",
        "from torch.backends import cudnn as C\nC . enabled = 0.0\n",
        "from torch.backends.cudnn import enabled as e\ne = False\n",
        "import torch.backends.cudnn.enabled as e\ne = False\n",
    ],
)  # fmt: skip
def test_cudnn_switch_passes(source: str) -> None:
    tree = ast.parse(source)
    assert global_cudnn_off(tree, ImportMap.build(tree))
    assert may_switch_cudnn_off(source)


@pytest.mark.parametrize(
    "source",
    [
        "import torch\nwith torch.backends.cudnn.flags(enabled=False):\n    pass\n",
        "import torch\nif torch.backends.cudnn.enabled == False:\n    pass\n",
        "import torch\ntorch.backends.cudnn.enabled = True\n",
    ],
)  # fmt: skip
def test_no_cudnn_switch(source: str) -> None:
    tree = ast.parse(source)
    assert not global_cudnn_off(tree, ImportMap.build(tree))
    assert not may_switch_cudnn_off(source)


@pytest.mark.parametrize(
    "source",
    [
        "model.module.train()\n",
        "model.module . eval()\n",
        "(model.module).train(False)\n",
        "(model  # wrapper\n    .module\n    .train())\n",
        "model.module \\\n    .eval()\n",
    ],
)  # fmt: skip
def test_module_mode_call_text(source: str) -> None:
    assert may_call_module_mode(source)


def test_no_module_mode_call_text() -> None:
    assert not may_call_module_mode("model.modules().train()\nx = model.module.weight\n")


_SMALL_CASES = [
    # RNF001 through a callable optimizer only (no ``.step()``)
    """
    import torch.nn as nn
    from mylib import get_train_op
    model = nn.Sequential(nn.Linear(2, 2), nn.Dropout())
    train_op = get_train_op(params=model.parameters(), lr=0.1)
    for epoch in range(3):
        for x, y in loader:
            loss = (model(x) - y).sum()
            loss.backward()
            train_op()
        model.eval()
        evaluate(model)
    """,
    # RNF001 through ``torch.autograd.backward`` and ``opt . step ()``
    """
    import torch
    from torch.autograd import backward as bw
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout())
    opt = torch.optim.SGD(model.parameters(), 0.1)
    for epoch in range(3):
        for x, y in loader:
            bw((model(x) - y).sum())
            opt . step ()
        model.eval()
        evaluate(model)
    """,
    # RNF004 with ``train ( False )``
    """
    import torch
    import torch.nn as nn
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(4, 4)
        def forward(self, x):
            return self.lstm(x)[0]
    model = Net()
    model . train ( False )
    x = torch.randn(3, 1, 4, requires_grad=True)
    model(x).sum().backward()
    print(x.grad)
    """,
]


@pytest.mark.parametrize("source", _SMALL_CASES)
def test_small_cases_pass(source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "case.py"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    assert _check(path, None, monkeypatch) > 0
