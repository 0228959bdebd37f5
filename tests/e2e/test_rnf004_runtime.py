"""RNF004 end to end: a saliency script fixed with ``--rnn-only`` runs its RNN in
train mode and every other module in eval mode during the gradient
computation, and gives the gradient of the original computed with cuDNN off.

On the CPU there is no cuDNN, so the check is on the modes (what cuDNN
decides on) and on the numbers; the ``gpu`` variant also shows that the
original fails under cuDNN and the fixed scripts do not.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from rnnfix.config.settings import Settings
from rnnfix.run.engine import fix_source

torch = pytest.importorskip("torch")

SCRIPT = """
import torch
import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 12, num_layers=2, batch_first=True)
        self.drop = nn.Dropout(0.5)
        self.head = nn.Linear(12, 3)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(self.drop(out[:, -1]))


torch.manual_seed(0)
model = Classifier().to(DEVICE)
model.eval()
x = torch.randn(4, 7, 6, device=DEVICE, requires_grad=True)
score = model(x)[:, 2].sum()
score.backward()
saliency = x.grad.detach().clone()
"""


@contextlib.contextmanager
def _record_modes() -> Iterator[list[tuple[str, bool]]]:
    """(module class, training) for every module forward while active."""
    seen: list[tuple[str, bool]] = []

    def hook(module: Any, args: Any) -> None:
        seen.append((type(module).__name__, module.training))

    handle = torch.nn.modules.module.register_module_forward_pre_hook(hook)
    try:
        yield seen
    finally:
        handle.remove()


def _run(source: str, device: str) -> tuple[Any, list[tuple[str, bool]]]:
    namespace: dict[str, Any] = {"DEVICE": device, "__name__": "__main__"}
    with _record_modes() as seen:
        exec(compile(source, "<saliency>", "exec"), namespace)
    return namespace["saliency"], seen


def _original_with_cudnn_off(device: str) -> Any:
    with torch.backends.cudnn.flags(enabled=False):
        grad, _ = _run(SCRIPT, device)
    return grad


def _fixed(strategy: str) -> str:
    result = fix_source(SCRIPT, Settings(rnn_only=True, rnn_only_strategy=strategy))  # type: ignore[arg-type]
    assert [f.code for f in result.applied] == ["RNF004"]
    assert not result.findings
    return result.fixed


def test_rnn_train_fix_modes_and_gradient_on_cpu() -> None:
    fixed = _fixed("rnn-train")
    assert "model.lstm.train()" in fixed and "model.train()" not in fixed
    grad, seen = _run(fixed, "cpu")
    modes = dict(seen)
    assert modes["LSTM"] is True  # the RNN runs in train mode ...
    assert modes["Dropout"] is False  # ... everything else stays in eval
    assert modes["Linear"] is False and modes["Classifier"] is False
    torch.testing.assert_close(grad, _original_with_cudnn_off("cpu"), rtol=0, atol=0)


def test_cudnn_off_fix_gradient_on_cpu() -> None:
    fixed = _fixed("cudnn-off")
    grad, seen = _run(fixed, "cpu")
    assert dict(seen)["LSTM"] is False  # the model stays in eval entirely
    torch.testing.assert_close(grad, _original_with_cudnn_off("cpu"), rtol=0, atol=0)


def test_cudnn_off_fix_keeps_other_cudnn_settings() -> None:
    fixed = _fixed("cudnn-off")
    inside: dict[str, Any] = {}
    probe = fixed.replace(
        "    score.backward()\n",
        "    score.backward()\n"
        "    INSIDE.update(enabled=torch.backends.cudnn.enabled,"
        " benchmark=torch.backends.cudnn.benchmark,"
        " deterministic=torch.backends.cudnn.deterministic)\n",
    )
    assert probe != fixed
    with torch.backends.cudnn.flags(enabled=True, benchmark=True, deterministic=True):
        exec(compile(probe, "<probe>", "exec"), {"DEVICE": "cpu", "INSIDE": inside})
        assert torch.backends.cudnn.enabled  # restored after the block
    assert inside == {"enabled": False, "benchmark": True, "deterministic": True}


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA and cuDNN")
def test_on_gpu_original_fails_and_fixes_match() -> None:
    with pytest.raises(
        RuntimeError, match="cudnn RNN backward can only be called in training mode"
    ):
        _run(SCRIPT, "cuda")
    reference = _original_with_cudnn_off("cuda")
    for strategy in ("rnn-train", "cudnn-off"):
        grad, _ = _run(_fixed(strategy), "cuda")
        torch.testing.assert_close(grad, reference)
