"""``model = self.train()`` in a module's method names the module itself
(a must-alias of ``self``, and a model derived from it): deepctr-torch's
``BaseModel.fit``."""

from __future__ import annotations

import ast
import textwrap

from rnnfix.analysis.context import FileContext

_SOURCE = """
import torch
from torch import nn

class Net(nn.Module):
    def forward(self, x):
        return x

    def fit(self, xs, gpus):
        model = self.train()
        if gpus:
            model = torch.nn.DataParallel(model)
        for x in xs:
            model(x).sum().backward()

    def twice(self, xs):
        model = self.train()
        model = other
        model(xs)

    def predict(self, x):
        self.eval()
        return self(x)

    def part(self, xs):
        model = self.encoder.to("cpu")
        model(xs)
"""


def _aliases(name: str) -> dict[str, str]:
    source = textwrap.dedent(_SOURCE)
    ctx = FileContext(source, ast.parse(source))
    flow = ctx.facts.modes
    (fn,) = [s for s in flow.scopes() if s is not None and s.name == name]
    return {k: v[0] for k, v in flow.aliases(fn).items()}


def test_self_returning_call_on_self_is_self() -> None:
    assert _aliases("fit") == {"model": "self"}


def test_rebound_to_something_else_is_no_alias() -> None:
    assert "model" not in _aliases("twice")


def test_attribute_paths_keep_their_reading() -> None:
    assert "model" not in _aliases("part")  # a call's result: not read as before


def test_the_alias_is_a_model() -> None:
    """``self`` is a model (switched and called in ``predict``); so is the
    name bound to its ``train()``."""
    source = textwrap.dedent(_SOURCE)
    ctx = FileContext(source, ast.parse(source))
    assert "model" in ctx.facts.modes.models
