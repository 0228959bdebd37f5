"""The file gate (``rnnfix.run.filegate``) never rules out a file a rule
can report something in: wherever a rule's own pre-condition passes, the
gate's part for that rule passes too, and a file with a finding passes.
Fixtures run on their own and, for ``fixtures/project/*``, with the index of
their folder, with their settings, with ``--strict`` and with the defaults.
"""

from __future__ import annotations

import ast
import dataclasses
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from rnnfix.analysis.context import FileContext
from rnnfix.analysis.project.index import ProjectIndex
from rnnfix.config.settings import Settings
from rnnfix.rules import (
    rnf001_train_step_in_eval_mode,
    rnf002_wrapper_mode_via_module,
    rnf004_backward_in_eval_through_rnn,
    rnf005_global_cudnn_switch,
)
from rnnfix.rules.rnf003 import rule as rnf003_eval_without_no_grad
from rnnfix.rules.rnf006 import rule as rnf006_inference_without_eval
from rnnfix.run import filegate
from rnnfix.run.process import Outcome, process_file, process_files
from tests.fixture_args import FIXTURES, project_fixtures, settings_for, single_file_fixtures

_GATES: dict[str, tuple[ModuleType, bool]] = {
    # code -> (module with ``may_apply``, whether it takes the source)
    "RNF001": (rnf001_train_step_in_eval_mode, False),
    "RNF002": (rnf002_wrapper_mode_via_module, True),
    "RNF004": (rnf004_backward_in_eval_through_rnn, False),
    "RNF005": (rnf005_global_cudnn_switch, True),
    "RNF006": (rnf006_inference_without_eval, False),
}


def _rnf003_gate(source: str) -> bool:
    words = rnf003_eval_without_no_grad._PREFILTER.search(source) is not None
    return words and rnf003_eval_without_no_grad.may_have_regions(source)


def _rule_gate(code: str, ctx: FileContext) -> bool:
    if code == "RNF003":
        return _rnf003_gate(ctx.source)
    module, takes_source = _GATES[code]
    arg: Any = ctx.source if takes_source else ctx
    return bool(module.may_apply(arg))


def _check(path: Path, paths: list[Path] | None) -> int:
    """For each rule whose pre-condition passes, the gate's part for it
    passes (``test_ruletext`` checks that a finding implies the former)."""
    source = path.read_text(encoding="utf-8")
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return 0
    settings = settings_for(source)
    passed = 0
    for variant in (settings, dataclasses.replace(settings, strict=True), Settings()):
        for code in ("RNF001", "RNF002", "RNF003", "RNF004", "RNF005", "RNF006"):
            # Fresh indexes: summaries already computed let ``may_hold`` through.
            project = ProjectIndex.build(paths) if paths else None
            ctx = FileContext(source, tree, variant, str(path), project)
            if not _rule_gate(code, ctx):
                continue
            passed += 1
            fresh = ProjectIndex.build(paths) if paths else None
            proj = filegate._Project(source, str(path), fresh)
            assert filegate._may_find(code, source, variant, proj), (
                f"{code}'s pre-condition passes in {path} but the file gate rules it out"
            )
    return passed


@pytest.mark.parametrize("path", single_file_fixtures(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_single_file_gate_is_necessary(path: Path) -> None:
    _check(path, None)


@pytest.mark.parametrize("folder", project_fixtures(), ids=lambda p: p.name)
def test_project_file_gate_is_necessary(folder: Path) -> None:
    paths = sorted(folder.rglob("*.py"))
    for path in paths:
        _check(path, paths)


def test_the_fixtures_have_gates_to_check() -> None:
    """Guard against a harness that silently checks nothing."""
    assert sum(_check(p, None) for p in single_file_fixtures()[:40]) > 0


def _write(folder: Path, files: dict[str, str]) -> list[Path]:
    out = []
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        out.append(path)
    return out


def test_a_file_no_rule_can_report_in_is_not_parsed(tmp_path: Path) -> None:
    (path,) = _write(tmp_path, {"broken.py": "def f(:\n    return 1\n"})
    result = process_file(path, Settings(), write=False)
    assert result.outcome is Outcome.UNCHANGED
    assert result.error is None and not result.reported


def test_a_file_a_rule_may_report_in_is_parsed_and_its_syntax_reported(tmp_path: Path) -> None:
    (path,) = _write(tmp_path, {"broken.py": "model.eval()\nfor x in val_loader:\n    model(x\n"})
    result = process_file(path, Settings(), write=False)
    assert result.outcome is Outcome.FAILED
    assert (result.error or "").startswith("cannot parse")


def test_the_gate_follows_imports_of_the_run(tmp_path: Path) -> None:
    """``train.py`` has no eval text of its own: RNF001's eval comes from a
    helper of another file, which the gate finds through the import lines."""
    paths = _write(
        tmp_path,
        {
            "helpers.py": """
            def evaluate(model, loader):
                model.eval()
                for x in loader:
                    model(x)
            """,
            "train.py": """
            import torch
            from helpers import evaluate
            model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout())
            opt = torch.optim.SGD(model.parameters(), 0.1)
            for epoch in range(3):
                evaluate(model, val)
                for x in data:
                    model(x).sum().backward()
                    opt.step()
            """,
        },
    )
    train = paths[1]
    source = train.read_text(encoding="utf-8")
    consulted: set[str] = set()
    index = ProjectIndex.build(paths)
    # RNF001 alone: RNF003 passes the file by its text (a step, and an import
    # of a function that may show what the model computes).
    assert filegate.may_find(source, Settings(select=("RNF001",)), str(train), index, consulted)
    assert str(paths[0].resolve()) in consulted
    alone = ProjectIndex.build([train])
    assert not filegate.may_find(source, Settings(select=("RNF001",)), str(train), alone)
    results = process_files(paths, Settings(), write=False, jobs=1)
    assert [f.code for f in results[1].reported] == ["RNF001"]


def test_a_gated_file_is_never_written(tmp_path: Path) -> None:
    paths = _write(tmp_path, {"a.py": "x = 1\n", "b.py": "def f(:\n"})
    before = [p.read_bytes() for p in paths]
    results = process_files(paths, Settings(), write=True, jobs=1)
    assert [r.outcome for r in results] == [Outcome.UNCHANGED, Outcome.UNCHANGED]
    assert [p.read_bytes() for p in paths] == before
