"""RNF004 across calls, end to end on the CPU (and on a GPU when there is one).

An attack class puts its model in eval in ``__init__`` and takes the input
gradient in ``attack()``: the fix puts only the GRU in train mode there, and
the gradient is the original's computed with cuDNN off. A whole
``model.train()`` put before an attack: its fix keeps dropout and BatchNorm
in eval (BatchNorm's running statistics are no longer changed by the attack).
"""

from __future__ import annotations

from typing import Any

import pytest

from rnnfix.config.settings import Settings
from rnnfix.run.engine import fix_source

torch = pytest.importorskip("torch")

ATTACK = """
import torch
import torch.nn.functional as F
from torch import nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(6, 12, num_layers=2, batch_first=True)
        self.drop = nn.Dropout(0.5)
        self.head = nn.Linear(12, 3)

    def forward(self, x):
        return self.head(self.drop(self.gru(x)[0][:, -1]))


class FGSM:
    def __init__(self, model):
        self.model = model
        self.model.eval()

    def attack(self, x, y):
        x = x.clone().requires_grad_(True)
        loss = F.cross_entropy(self.model(x), y)
        return torch.autograd.grad(loss, x)[0]


def main(x, y):
    model = Classifier().to(DEVICE)
    fgsm = FGSM(model)
    return fgsm.attack(x, y)


torch.manual_seed(0)
RESULT = main(torch.randn(4, 7, 6, device=DEVICE), torch.tensor([0, 1, 2, 0], device=DEVICE))
"""

WORKAROUND = """
import torch
import torch.nn.functional as F
from torch import nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 12, batch_first=True)
        self.bn = nn.BatchNorm1d(12)
        self.drop = nn.Dropout(0.5)
        self.head = nn.Linear(12, 3)

    def forward(self, x):
        return self.head(self.drop(self.bn(self.lstm(x)[0][:, -1])))


def attack(model, x, y):
    model.train()
    x = x.clone().requires_grad_(True)
    F.cross_entropy(model(x), y).backward()
    return x.grad


torch.manual_seed(0)
model = Classifier().to(DEVICE)
STATS = model.bn.running_mean.clone()
x, y = torch.randn(4, 7, 6, device=DEVICE), torch.tensor([0, 1, 2, 0], device=DEVICE)
RESULT = attack(model, x, y)
STATS_CHANGED = not torch.equal(STATS, model.bn.running_mean)
"""


def _run(source: str, device: str) -> tuple[dict[str, Any], list[tuple[str, bool]]]:
    seen: list[tuple[str, bool]] = []

    def hook(module: Any, args: Any) -> None:
        seen.append((type(module).__name__, module.training))

    namespace: dict[str, Any] = {"DEVICE": device, "__name__": "__main__"}
    handle = torch.nn.modules.module.register_module_forward_pre_hook(hook)
    try:
        exec(compile(source, "<script>", "exec"), namespace)
    finally:
        handle.remove()
    return namespace, seen


def _fixed(source: str, settings: Settings) -> str:
    result = fix_source(source, settings)
    assert [f.code for f in result.applied] == ["RNF004"]
    assert not result.findings
    return result.fixed


def test_attack_class_fix_modes_and_gradient_on_cpu() -> None:
    fixed = _fixed(ATTACK, Settings(rnn_only=True))
    assert "self.model.gru.train()" in fixed
    done, seen = _run(fixed, "cpu")
    modes = dict(seen)
    assert modes["GRU"] is True and modes["Dropout"] is False and modes["Linear"] is False
    with torch.backends.cudnn.flags(enabled=False):
        original, _ = _run(ATTACK, "cpu")
    torch.testing.assert_close(done["RESULT"], original["RESULT"], rtol=0, atol=0)


def test_train_workaround_fix_keeps_dropout_and_batchnorm_in_eval() -> None:
    original, seen = _run(WORKAROUND, "cpu")
    assert dict(seen)["Dropout"] is True and original["STATS_CHANGED"]
    fixed = _fixed(WORKAROUND, Settings(unsafe_fixes=True))
    done, seen = _run(fixed, "cpu")
    modes = dict(seen)
    assert modes["LSTM"] is True
    assert modes["Dropout"] is False and modes["BatchNorm1d"] is False
    assert not done["STATS_CHANGED"]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA and cuDNN")
def test_on_gpu_attack_class_fails_and_fix_runs() -> None:
    with pytest.raises(
        RuntimeError, match="cudnn RNN backward can only be called in training mode"
    ):
        _run(ATTACK, "cuda")
    done, _ = _run(_fixed(ATTACK, Settings(rnn_only=True)), "cuda")
    with torch.backends.cudnn.flags(enabled=False):
        reference, _ = _run(ATTACK, "cuda")
    torch.testing.assert_close(done["RESULT"], reference["RESULT"])
    workaround, _ = _run(_fixed(WORKAROUND, Settings(unsafe_fixes=True)), "cuda")
    assert not workaround["STATS_CHANGED"]
