"""The one reading of pass-through calls (rnnfix.analysis.torch.passthrough),
shared by the mode flow and the optimizer index (issue 24.7)."""

from __future__ import annotations

import ast

import pytest

from rnnfix.analysis.modes.modeflow import ModeFlow
from rnnfix.analysis.torch.mode import Mode
from rnnfix.analysis.torch.passthrough import passed_back, unwrapped
from rnnfix.rules.base import FileContext


def _same(text: str) -> str:
    return text


def _bound(source: str, name: str) -> bool:
    """Whether the assignment ``source`` binds ``name`` to the object it was."""
    stmt = ast.parse(source).body[0]
    assert isinstance(stmt, ast.Assign)
    target = stmt.targets[0]
    if isinstance(target, (ast.Tuple, ast.List)):
        elt = next(e for e in target.elts if isinstance(e, ast.Name) and e.id == name)
        return passed_back(stmt.value, name, _same, (target.elts, elt))
    return passed_back(stmt.value, name, _same)


@pytest.mark.parametrize(
    ("source", "name", "expected"),
    [
        ("model = accelerator.prepare(model)", "model", True),
        ("model, opt = accelerator.prepare(model, opt)", "opt", True),
        ("model, opt = self.accelerator.prepare(model, opt)", "model", True),
        # a starred target: elements before the star by position ...
        ("model, *rest = accelerator.prepare(model, opt, loader)", "model", True),
        # ... and after it from the end: ``model`` is bound to ``c`` here
        ("a, *rest, model = accelerator.prepare(a, b, model, c)", "model", False),
        ("a, *rest, model = accelerator.prepare(a, b, c, model)", "model", True),
        ("model, opt = accelerator.prepare(opt, model)", "model", False),
        ("model, opt = accelerator.prepare(model, opt, loader)", "model", False),
        ("model = accelerator.prepare(model, opt)", "model", False),
        ("model = accelerator.prepare(*objs)", "model", False),
        ("model = accelerator.unwrap_model(model)", "model", True),
        ("model = get_peft_model(model, config)", "model", True),
        ("model, opt = unwrap_model(model, opt)", "model", False),
        ("model = accelerator.load(model)", "model", False),
    ],
)
def test_passed_back(source: str, name: str, expected: bool) -> None:
    assert _bound(source, name) is expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("accelerator.unwrap_model(model)", "model"),
        ("_unwrap_model(self.net)", "self.net"),
        ("unwrap_model(model, keep_fp32_wrapper=False)", "model"),
        ("unwrap_model(*models)", None),
        ("model.unwrap()", None),
    ],
)
def test_unwrapped(source: str, expected: str | None) -> None:
    found = unwrapped(ast.parse(source, mode="eval").body)
    assert (ast.unparse(found) if found is not None else None) == expected


_STARRED = """\
import torch
from accelerate import Accelerator
from transformers import AutoModelForSequenceClassification


def main(loader):
    accelerator = Accelerator()
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
    opt = torch.optim.AdamW(model.parameters())
    model, *rest = accelerator.prepare(model, opt, loader)
    for batch in loader:
        loss = model(**batch).loss
        accelerator.backward(loss)
        opt.step()
"""


def test_starred_prepare_keeps_the_loaded_mode() -> None:
    """``model, *rest = accelerator.prepare(model, ...)`` hands the model back:
    the eval mode of the transformers load reaches the step (it was unknown in
    one of the two readings the flow had)."""
    tree = ast.parse(_STARRED)
    ctx = FileContext(_STARRED, tree)
    flow = ModeFlow(ctx)
    step = next(s for s in flow.training_steps if s.kind == "optimizer_step")
    modes = {f.mode for f in flow.mode_before(step.node, "model").facts}
    assert modes == {Mode.EVAL}


def test_element_after_the_star_counts_from_the_end() -> None:
    """``opt, *rest, model = accelerator.prepare(opt, loader, model, sched)``
    binds ``model`` to ``sched``'s result: nothing says what mode that is (the
    reading that took positions from the front said "the model, in eval")."""
    source = _STARRED.replace(
        "model, *rest = accelerator.prepare(model, opt, loader)",
        "opt, *rest, model = accelerator.prepare(opt, loader, model, sched)",
    ).replace("def main(loader):", "def main(loader, sched):")
    tree = ast.parse(source)
    flow = ModeFlow(FileContext(source, tree))
    step = next(s for s in flow.training_steps if s.kind == "optimizer_step")
    modes = {f.mode for f in flow.mode_before(step.node, "model").facts}
    assert modes == {Mode.UNKNOWN}
