"""What the sanitizer records besides cuDNN's check (never raised)."""

from __future__ import annotations

import gc
from typing import Any

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from rnnfix.verify.records import (  # noqa: E402
    FROZEN_BATCHNORM,
    OPTIMIZER_STEP_IN_EVAL,
    VALIDATION_FORWARD,
    WRAPPER_MODE_MISMATCH,
)


class Net(nn.Module):
    def __init__(self, num_layers: int = 1, dropout: float = 0.0) -> None:
        super().__init__()
        self.lstm = nn.LSTM(3, 4, num_layers=num_layers, dropout=dropout)
        self.norm = nn.BatchNorm1d(4)
        self.head = nn.Linear(4, 2)

    def forward(self, x: Any) -> Any:
        out, _ = self.lstm(x)
        return self.head(self.norm(out[-1]))


def _x() -> Any:
    return torch.randn(5, 3, 3)


def _kinds(verify: Any) -> list[tuple[str, str]]:
    return [(r.kind, r.severity) for r in verify.records()]


def test_correct_loop_records_nothing(sanitizer: Any) -> None:
    net = Net()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for _ in range(2):
        net.train()
        for _ in range(2):
            opt.zero_grad()
            net(_x()).sum().backward()
            opt.step()
        net.eval()
        with torch.no_grad():
            net(_x())
    gc.collect()
    sanitizer.sweep_unreached()
    assert sanitizer.records() == []


def test_validation_with_grad_enabled_is_a_warning(sanitizer: Any) -> None:
    net = Net().eval()
    for _ in range(2):
        net(_x()).sum().item()  # no backward, no no_grad
    gc.collect()
    [record] = sanitizer.records()
    assert (record.kind, record.severity) == (VALIDATION_FORWARD, "warning")
    assert record.count == 2
    assert "never reached a backward" in record.message
    assert record.forward[-1].file.endswith("test_other_records.py")


def test_validation_forward_still_alive_is_found_by_sweep(sanitizer: Any) -> None:
    net = Net()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    net.eval()
    kept = net(_x())  # validation output kept alive
    net.train()
    net(_x()).sum().backward()
    opt.step()
    sanitizer.sweep_unreached()
    assert _kinds(sanitizer) == [(VALIDATION_FORWARD, "warning")]
    del kept


@pytest.mark.parametrize(("layers", "dropout", "severity"), [(1, 0.0, "info"), (2, 0.5, "warning")])
def test_validation_in_train_mode_under_no_grad(
    sanitizer: Any, layers: int, dropout: float, severity: str
) -> None:
    net = Net(layers, dropout).train()
    with torch.no_grad():
        net(_x())
    # The BatchNorm in train mode gets its own warning (test_layer_records).
    [record] = [r for r in sanitizer.records() if r.subject == "LSTM"]
    assert (record.kind, record.severity) == (VALIDATION_FORWARD, severity)
    assert "train mode under no_grad" in record.message


def test_eval_under_no_grad_records_nothing(sanitizer: Any) -> None:
    net = Net().eval()
    with torch.no_grad():
        net(_x())
    with torch.inference_mode():
        net(_x())
    assert sanitizer.records() == []


def test_optimizer_step_in_eval_is_an_error(sanitizer: Any) -> None:
    net = Net()
    opt = torch.optim.Adam(net.parameters())
    net.eval()
    net(_x()).sum().backward()  # recorded: cuDNN would refuse this
    opt.step()
    kinds = _kinds(sanitizer)
    assert (OPTIMIZER_STEP_IN_EVAL, "error") in kinds


def test_optimizer_of_other_model_is_not_blamed(sanitizer: Any) -> None:
    student, teacher = Net(), Net()
    teacher.eval()
    opt = torch.optim.SGD(student.parameters(), lr=0.1)
    with torch.no_grad():
        target = teacher(_x())
    ((student(_x()) - target) ** 2).sum().backward()
    opt.step()
    sanitizer.sweep_unreached()
    assert sanitizer.records() == []


def test_frozen_batchnorm_is_info(sanitizer: Any) -> None:
    net = Net()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    net.train()
    net.norm.eval()  # deliberately frozen statistics
    net(_x()).sum().backward()
    opt.step()
    # Both the step and the forward through the frozen BatchNorm say so, as infos.
    assert sorted(_kinds(sanitizer)) == [
        (FROZEN_BATCHNORM, "info"),
        (OPTIMIZER_STEP_IN_EVAL, "info"),
    ]


def test_data_parallel_flag_mismatch(sanitizer: Any) -> None:
    net = Net()
    wrapper = nn.DataParallel(net)  # no CUDA: forwards straight to net
    wrapper.eval()
    wrapper.module.train()  # RNF002
    opt = torch.optim.SGD(wrapper.parameters(), lr=0.1)
    wrapper(_x()).sum().backward()
    opt.step()
    # Only the flag mismatch: the wrapper's own flag does not change training.
    [record] = sanitizer.records()
    assert (record.kind, record.severity) == (WRAPPER_MODE_MISMATCH, "warning")
    assert "unaffected" in record.message  # true to the facts: not the cuDNN error
