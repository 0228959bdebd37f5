"""RNF003 end to end on the CPU: a training script whose validation runs in
train mode with grad enabled is fixed by rnnfix (all rules), then run. Global
hooks record, for every forward of the model, its ``training`` flag and
whether grad is enabled, and for every optimizer step the model's mode.

After the fix every validation forward runs in eval mode without grad, and
every training forward and step after a validation runs in train mode again
(RNF003 inserts ``model.eval()``; RNF001 then restores ``model.train()``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from rnnfix.rules import all_rules
from rnnfix.run.engine import fix_source

torch = pytest.importorskip("torch")

# Training batches have 4 rows, validation batches 3: the hook tells them apart
# without the script having to cooperate.
SCRIPT = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 8, batch_first=True)
        self.drop = nn.Dropout(0.5)
        self.norm = nn.BatchNorm1d(8)
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(self.norm(self.drop(out[:, -1])))


torch.manual_seed(0)
train_loader = [(torch.randn(4, 5, 6), torch.randint(0, 2, (4,))) for _ in range(3)]
val_loader = [(torch.randn(3, 5, 6), torch.randint(0, 2, (3,))) for _ in range(2)]

model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()


def evaluate(model, loader):
    total = 0.0
    for x, y in loader:
        total += criterion(model(x), y).item()
    return total / len(loader)


model.train()
for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()

    val_loss = 0.0
    for x, y in val_loader:
        val_loss += criterion(model(x), y).item()
    print(epoch, val_loss, evaluate(model, val_loader))
"""


@dataclass
class Trace:
    forwards: list[tuple[str, bool, bool]] = field(default_factory=list)  # phase, training, grad
    steps: list[bool] = field(default_factory=list)  # model.training at optimizer.step()


@contextlib.contextmanager
def _trace() -> Iterator[Trace]:
    # ``torch.optim`` does not expose its ``optimizer`` submodule as an attribute.
    from torch.optim.optimizer import register_optimizer_step_pre_hook

    trace = Trace()
    models: list[Any] = []

    def on_forward(module: Any, args: Any) -> None:
        if type(module).__name__ != "Net":
            return
        models[:] = [module]
        phase = "train" if args[0].shape[0] == 4 else "val"
        trace.forwards.append((phase, module.training, torch.is_grad_enabled()))

    def on_step(optimizer: Any, args: Any, kwargs: Any) -> None:
        trace.steps.append(models[0].training)

    handles = [
        torch.nn.modules.module.register_module_forward_pre_hook(on_forward),
        register_optimizer_step_pre_hook(on_step),
    ]
    try:
        yield trace
    finally:
        for h in handles:
            h.remove()


def _run(source: str) -> Trace:
    with _trace() as trace, contextlib.redirect_stdout(None):
        exec(compile(source, "train_script.py", "exec"), {"__name__": "__main__"})
    return trace


def test_original_validates_in_train_mode_with_grad() -> None:
    trace = _run(SCRIPT)
    val = [f for f in trace.forwards if f[0] == "val"]
    assert val and all(training and grad for _, training, grad in val)


def test_fixed_script_validates_under_eval_and_no_grad_and_trains_in_train_mode() -> None:
    if "RNF001" not in all_rules():
        pytest.skip("RNF001 is not registered yet")
    result = fix_source(SCRIPT)
    assert {f.code for f in result.applied} == {"RNF001", "RNF003"}
    assert result.findings == []
    assert "inference_mode" not in result.fixed

    trace = _run(result.fixed)
    phases = [p for p, _, _ in trace.forwards]
    assert phases.count("val") == 3 * 2 * 2  # 3 epochs x 2 batches x (loop + evaluate)
    assert phases.count("train") == 3 * 3
    for phase, training, grad in trace.forwards:
        if phase == "val":
            assert (training, grad) == (False, False)
        else:
            assert (training, grad) == (True, True)
    # Training steps run after validations (epochs 2 and 3), all in train mode.
    first_val = phases.index("val")
    assert "train" in phases[first_val:]
    assert len(trace.steps) == 9 and all(trace.steps)
