"""What the sanitizer records for ``verify --fix``, in-process (CPU)."""

from __future__ import annotations

import sys
from typing import Any

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from rnnfix.verify import messages, sanitizer_cudnn, sanitizer_state  # noqa: E402
from rnnfix.verify.records import CUDNN_BACKWARD_IN_EVAL, Record  # noqa: E402


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.enc = nn.Sequential(nn.LSTM(3, 4, num_layers=2, dropout=0.5))
        self.head = nn.Linear(4, 1)

    def forward(self, x: Any) -> Any:
        return self.head(self.enc(x)[0])


def _cudnn(records: list[Record]) -> Record:
    found = [r for r in records if r.kind == CUDNN_BACKWARD_IN_EVAL]
    assert len(found) == 1, records
    return found[0]


def test_record_names_call_expression_eval_site_and_optimizer(sanitizer: Any) -> None:
    registry = {"net": Net()}
    optimizer = torch.optim.SGD(registry["net"].parameters(), lr=0.1)
    registry["net"].eval()  # the eval site
    out = registry["net"](torch.randn(5, 2, 3))  # the call site
    out.sum().backward()
    optimizer.step()
    record = _cudnn(sanitizer.records())
    prov = record.provenance
    assert prov is not None
    assert prov.model == "Net"
    assert prov.refs[0][0] == 'registry["net"]'
    assert prov.call[0].function == "test_record_names_call_expression_eval_site_and_optimizer"
    assert prov.eval_site[0].line == prov.call[0].line - 1
    assert prov.rnn_path == "enc.0"
    assert prov.rnn_dropout is True  # two layers, dropout 0.5: train mode changes the output
    assert record.optimizers == ("SGD",)


def test_train_on_the_model_clears_its_eval_site(sanitizer: Any) -> None:
    net = Net()
    net.eval()
    net.train()
    net.enc.eval()  # only the submodule: the eval site names it
    net(torch.randn(5, 2, 3)).sum().backward()
    prov = _cudnn(sanitizer.records()).provenance
    assert prov is not None
    assert prov.eval_path == "enc"
    assert "net" in prov.refs[0]
    assert prov.nothing_evaluated is True


def test_uncaught_cudnn_error_is_recorded_from_bookkeeping() -> None:
    """Real cuDNN raises in backward; when no node hook recorded it (a forward
    the sanitizer could not judge), the uncaught error still names the forward
    from the sanitizer's live forward states. Simulated: the error is raised
    by hand after an eval-mode forward whose hook did not run."""
    from rnnfix import verify

    hook = sys.excepthook
    verify.install("record")
    verify.clear_records()
    assert sys.excepthook is not hook  # wrapped while installed
    try:
        net = Net().eval()
        out = net(torch.randn(5, 2, 3))  # eval mode, grad on: a live forward state
        try:
            raise RuntimeError(messages.CUDNN_ERROR)
        except RuntimeError as error:
            san = sanitizer_state._active
            assert san is not None
            assert sanitizer_cudnn.record_uncaught_cudnn_error(san, error, error.__traceback__)
            assert not sanitizer_cudnn.record_uncaught_cudnn_error(san, error, error.__traceback__)
        record = _cudnn(verify.records())
        assert record.checked_by == "cudnn"
        assert record.provenance is not None and "net" in record.provenance.refs[0]
        assert record.forward and record.backward
        del out
    finally:
        verify.uninstall()
        verify.clear_records()
    assert sys.excepthook is hook


class Overriding(Net):
    def train(self, mode: bool = True) -> Overriding:
        super().train(mode)
        return self


def test_eval_site_is_the_users_call_not_the_override(sanitizer: Any) -> None:
    net = Overriding()
    net.eval()  # the eval site
    net(torch.randn(5, 2, 3)).sum().backward()
    prov = _cudnn(sanitizer.records()).provenance
    assert prov is not None
    assert prov.eval_site[0].function == "test_eval_site_is_the_users_call_not_the_override"
    assert prov.eval_site[0].line == prov.call[0].line - 1
