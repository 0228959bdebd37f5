"""Item 8: an evaluation helper without ``no_grad``, called after
``model.eval()`` and followed by a training loop. ``train()`` goes after the
evaluation (before the training loop), RNF003's fix converges, and a second
run changes nothing."""

from __future__ import annotations

from rnnfix.config.settings import Settings
from rnnfix.run.engine import fix_source

SOURCE = """\
import torch

model = torch.nn.LSTM(8, 8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def evaluate(model, data):
    total = 0
    for x in data:
        total += model(x)[0].sum().item()
    return total


model.eval()
print(evaluate(model, val_data))
for epoch in range(3):
    for x in loader:
        optimizer.zero_grad()
        model(x)[0].sum().backward()
        optimizer.step()
"""


def test_train_goes_after_the_evaluation_and_the_fixes_converge() -> None:
    first = fix_source(SOURCE, Settings())
    assert first.dropped == [], [d.reason for d in first.dropped]
    assert sorted(f.code for f in first.applied) == ["RNF001", "RNF003"]
    lines = first.fixed.splitlines()
    evaluation = lines.index("print(evaluate(model, val_data))")
    assert lines[evaluation - 1] == "model.eval()"  # the evaluation keeps eval mode
    assert lines[evaluation + 1] == "model.train()"  # the training gets train mode
    assert "@torch.no_grad()" in lines


def test_a_second_run_changes_nothing() -> None:
    first = fix_source(SOURCE, Settings())
    second = fix_source(first.fixed, Settings())
    assert second.fixed == first.fixed
    assert second.applied == [] and second.findings == [] and second.dropped == []
