"""RNF003's model index: a builtin is never a model unless the file binds it."""

from __future__ import annotations

import ast

from rnnfix.analysis.context import FileContext
from rnnfix.rules.rnf003.models import ModelIndex


def _index(source: str, extra: set[str]) -> ModelIndex:
    return ModelIndex(FileContext(source=source, tree=ast.parse(source)), extra=extra)


def test_a_builtin_from_elsewhere_is_not_a_model() -> None:
    # fairseq/distributed/utils.py: ``int(os.environ["RANK"])`` was judged a forward
    source = "import os\n\ndef _infer_init(cfg):\n    cfg.rank = int(os.environ['RANK'])\n"
    assert _index(source, {"int", "model"}).models == frozenset({"model"})


def test_a_builtin_the_file_rebinds_may_be_a_model() -> None:
    source = "import torch\n\nint = torch.nn.Linear(2, 2)\nint.eval()\n"
    assert "int" in _index(source, {"int"}).models


_WRAPPERS = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)

    def predict(self, x):
        return self.forward(x).argmax(-1)

    def encode(self, x):
        return self.fc(x)

    def decode(self, x):
        return self.encode(x)


class Trainer:
    def __init__(self):
        self.model = Net()

    def infer(self, x):
        return self.model(x)

    def step(self, x, opt):
        loss = self.model(x).sum()
        loss.backward()
        opt.step()

    def switch(self, x):
        self.model.eval()
        return self.model(x)

    def run(self, x, opt):
        return self.infer(x), self.step(x, opt), self.switch(x), self.model.predict(x)


model = Net()
model.eval()
out = model.predict(torch.ones(1, 4)), model.encode(torch.ones(1, 4))
"""


def _wrapped(call_text: str) -> tuple[str, ...]:
    index = _index(_WRAPPERS, set())
    tree = index.ctx.tree
    call = next(
        n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n) == call_text
    )
    return index.wrapped_models(call)


def test_a_method_that_runs_the_objects_model_runs_it() -> None:
    """skorch's ``self.infer(x)`` -> ``self.module_(x)`` (issue 24.2)."""
    assert _wrapped("self.infer(x)") == ("self.model",)


def test_a_method_that_trains_or_switches_modes_is_not_a_wrapper() -> None:
    assert _wrapped("self.step(x, opt)") == ()
    assert _wrapped("self.switch(x)") == ()


def test_a_model_method_that_runs_its_forward_runs_the_model() -> None:
    assert _wrapped("model.predict(torch.ones(1, 4))") == ("model",)
    # a method that runs a submodule the class builds (``self.fc``) runs part
    # of the model's forward too (issue 36.2: TabNet's ``forward_masks``)
    assert _wrapped("model.encode(torch.ones(1, 4))") == ("model",)


def test_a_modules_own_methods_run_parts_of_self() -> None:
    """Inside a module class, ``self.decode(x)`` runs parts of ``self``: its
    mode is the caller's, as for ``self.fc(x)`` written inline."""
    assert _wrapped("self.encode(x)") == ()


def test_a_method_that_decides_grad_itself_is_not_a_wrapper() -> None:
    """IBM pytorch-seq2seq seq2seq/evaluator/predictor.py: ``get_decoder_features``
    runs ``self.model`` under its own ``torch.no_grad()``; ``predict`` calling
    it does not run the model with grad (it got a wrong ``@torch.no_grad()``
    and ``self.model.eval()``)."""
    source = (
        "import torch\n\n\nclass Predictor:\n"
        "    def __init__(self, model):\n        self.model = model\n        self.model.eval()\n\n"
        "    def features(self, x):\n        with torch.no_grad():\n"
        "            return self.model(x)\n\n"
        "    @torch.no_grad()\n    def decorated(self, x):\n        return self.model(x)\n\n"
        "    def predict(self, x):\n        return self.features(x), self.decorated(x)\n"
    )
    index = _index(source, set())
    calls = [
        n
        for n in ast.walk(index.ctx.tree)
        if isinstance(n, ast.Call) and ast.unparse(n) in ("self.features(x)", "self.decorated(x)")
    ]
    assert len(calls) == 2 and all(index.wrapped_models(c) == () for c in calls)


def test_a_framework_subclass_is_left_to_its_framework() -> None:
    """speechbrain recipes: ``class HifiGanBrain(sb.Brain)`` overrides
    ``evaluate_batch`` and runs ``self.modules.generator`` through
    ``self.compute_forward``; ``Brain._fit_valid`` calls it under
    ``torch.no_grad()``, which this file does not show (it got a redundant
    ``@torch.no_grad()``)."""
    source = (
        "import speechbrain as sb\n\n\nclass HifiGanBrain(sb.Brain):\n"
        "    def compute_forward(self, batch, stage):\n"
        "        return self.modules.generator(batch)\n\n"
        "    def evaluate_batch(self, batch, stage):\n"
        "        out = self.compute_forward(batch, stage=stage)\n"
        "        return out.detach().cpu()\n\n"
        "    def on_stage_start(self):\n        self.modules.generator.eval()\n\n\n"
        "class Base:\n    pass\n\n\nclass Local(Base):\n"
        "    def infer(self, x):\n        return self.modules.generator(x)\n\n"
        "    def run(self, x):\n        self.modules.generator.eval()\n"
        "        return self.infer(x)\n"
    )
    index = _index(source, set())
    calls = {
        ast.unparse(n): n
        for n in ast.walk(index.ctx.tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
    }
    assert index.wrapped_models(calls["self.compute_forward(batch, stage=stage)"]) == ()
    assert index.wrapped_models(calls["self.infer(x)"]) == ("self.modules.generator",)
