"""The sanitizer in-process: it raises exactly where cuDNN would, and only there."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
from torch.nn.utils.rnn import pack_padded_sequence  # noqa: E402

from rnnfix.verify import messages  # noqa: E402
from rnnfix.verify.records import CUDNN_BACKWARD_IN_EVAL  # noqa: E402

CUDNN_ERROR = "cudnn RNN backward can only be called in training mode"


def _rnn(kind: str, **kw: Any) -> nn.Module:
    if kind == "lstm":
        return nn.LSTM(3, 4, **kw)
    if kind == "gru":
        return nn.GRU(3, 4, **kw)
    return nn.RNN(3, 4, nonlinearity=kind, **kw)


FLAVOURS = [
    pytest.param("lstm", {}, id="lstm"),
    pytest.param("gru", {}, id="gru"),
    pytest.param("tanh", {}, id="rnn-tanh"),
    pytest.param("relu", {}, id="rnn-relu"),
    pytest.param("lstm", {"bidirectional": True}, id="lstm-bidirectional"),
    pytest.param("gru", {"num_layers": 2, "dropout": 0.2}, id="gru-2-layers"),
    pytest.param("lstm", {"batch_first": True}, id="lstm-batch-first"),
    pytest.param("lstm", {"proj_size": 2}, id="lstm-proj"),
    pytest.param("relu", {"num_layers": 3, "bidirectional": True}, id="rnn-relu-3-bi"),
]


def _x(batch_first: bool = False) -> Any:
    return torch.randn(2, 5, 3) if batch_first else torch.randn(5, 2, 3)


@pytest.mark.parametrize(("kind", "kw"), FLAVOURS)
def test_eval_forward_then_backward_raises_cudnn_error(raising: Any, kind: str, kw: Any) -> None:
    rnn = _rnn(kind, **kw).eval()
    out, _ = rnn(_x(kw.get("batch_first", False)))
    with pytest.raises(RuntimeError) as info:
        out.sum().backward()
    assert str(info.value) == CUDNN_ERROR
    if sys.version_info >= (3, 11):  # exception notes
        assert "emulated cuDNN's check" in "".join(getattr(info.value, "__notes__", []))


@pytest.mark.parametrize(("kind", "kw"), FLAVOURS)
def test_train_forward_backward_is_clean(raising: Any, kind: str, kw: Any) -> None:
    rnn = _rnn(kind, **kw).train()
    out, _ = rnn(_x(kw.get("batch_first", False)))
    out.sum().backward()
    raising.sweep_unreached()
    assert raising.records() == []


def test_packed_sequence(raising: Any) -> None:
    rnn = nn.LSTM(3, 4).eval()
    packed = pack_padded_sequence(torch.randn(5, 2, 3), torch.tensor([5, 3]))
    out, _ = rnn(packed)
    with pytest.raises(RuntimeError, match=CUDNN_ERROR):
        out.data.sum().backward()


def test_packed_sequence_train_mode_is_clean(raising: Any) -> None:
    rnn = nn.GRU(3, 4)
    out, h = rnn(pack_padded_sequence(torch.randn(5, 2, 3), torch.tensor([5, 3])))
    (out.data.sum() + h.sum()).backward()


@pytest.mark.parametrize("which", ["h", "c"])
def test_backward_through_hidden_state_only(raising: Any, which: str) -> None:
    rnn = nn.LSTM(3, 4, num_layers=2).eval()
    _, (h, c) = rnn(_x())
    with pytest.raises(RuntimeError, match=CUDNN_ERROR):
        (h if which == "h" else c).sum().backward()


def test_autograd_grad_through_rnn_raises(raising: Any) -> None:
    rnn = nn.GRU(3, 4).eval()
    x = _x().requires_grad_()
    out, _ = rnn(x)
    with pytest.raises(RuntimeError, match=CUDNN_ERROR):
        torch.autograd.grad(out.sum(), x)


def test_autograd_grad_to_rnn_output_does_not_reach_rnn(raising: Any) -> None:
    # The gradient is captured at the RNN's output; its node never runs, so
    # cuDNN's backward is never called. A tensor hook would fire here.
    rnn = nn.LSTM(3, 4).eval()
    out, _ = rnn(_x())
    (grad,) = torch.autograd.grad((out * 2).sum(), out)
    assert torch.equal(grad, torch.full_like(out, 2.0))
    raising.sweep_unreached()
    assert raising.records() == []  # captured counts as reaching a backward


def test_train_between_forward_and_backward_does_not_help(raising: Any) -> None:
    rnn = nn.LSTM(3, 4).eval()
    out, _ = rnn(_x())
    rnn.train()
    with pytest.raises(RuntimeError, match=CUDNN_ERROR):
        out.sum().backward()


def test_gradient_not_reaching_rnn_is_clean(raising: Any) -> None:
    rnn, head = nn.LSTM(3, 4).eval(), nn.Linear(4, 1)
    out, _ = rnn(_x())
    loss = head(out).sum()
    torch.autograd.grad(loss, head.weight)  # the RNN node is not needed


@pytest.mark.parametrize(
    "cell",
    [nn.LSTMCell(3, 4), nn.GRUCell(3, 4), nn.RNNCell(3, 4)],
    ids=["LSTMCell", "GRUCell", "RNNCell"],
)
def test_cells_never_raise(raising: Any, cell: nn.Module) -> None:
    cell.eval()
    out = cell(torch.randn(2, 3))
    (out[0] if isinstance(out, tuple) else out).sum().backward()
    assert raising.records() == []


def test_no_grad_forward_is_clean(raising: Any) -> None:
    rnn = nn.LSTM(3, 4).eval()
    with torch.no_grad():
        out, _ = rnn(_x())
    assert not out.requires_grad
    assert raising.records() == []


def test_cudnn_disabled_around_forward_is_clean(raising: Any) -> None:
    rnn = nn.LSTM(3, 4).eval()
    x = _x().requires_grad_()
    with torch.backends.cudnn.flags(enabled=False):
        out, _ = rnn(x)
    out.sum().backward()
    assert x.grad is not None


def test_cudnn_disabled_around_backward_only_still_raises(raising: Any) -> None:
    rnn = nn.LSTM(3, 4).eval()
    out, _ = rnn(_x())
    with torch.backends.cudnn.flags(enabled=False), pytest.raises(RuntimeError, match=CUDNN_ERROR):
        out.sum().backward()


def test_rnn_only_train_mode_is_clean(raising: Any) -> None:
    model = nn.Sequential()
    model.add_module("lstm", nn.LSTM(3, 4))
    model.eval()
    model.lstm.train()
    x = _x().requires_grad_()
    out, _ = model.lstm(x)
    out[-1].sum().backward()
    assert x.grad is not None


def test_empty_input_is_not_cudnn(raising: Any) -> None:
    # cuDNN is not chosen for empty tensors (here: a batch of 0), so a GPU
    # does not raise either.
    rnn = nn.LSTM(3, 4).eval()
    out, (h, _) = rnn(torch.randn(5, 0, 3))
    (out.sum() + h.sum()).backward()


class _CustomLSTM(nn.Module):
    """A model that calls the RNN kernel itself, as some research code does."""

    def __init__(self, call: Callable[..., Any]) -> None:
        super().__init__()
        self.inner = nn.LSTM(3, 4)
        self.call = call

    def forward(self, x: Any) -> Any:
        h0 = torch.zeros(1, x.shape[1], 4)
        return self.call(
            x, (h0, h0), self.inner._flat_weights, True, 1, 0.0, self.training, False, False
        )[0]


@pytest.mark.parametrize("where", ["_VF", "torch"])
def test_custom_module_calling_kernel(raising: Any, where: str) -> None:
    def call(*args: Any) -> Any:
        return torch._VF.lstm(*args) if where == "_VF" else torch.lstm(*args)

    model = _CustomLSTM(call).eval()
    out = model(_x())
    with pytest.raises(RuntimeError, match=CUDNN_ERROR):
        out.sum().backward()


def test_keyword_train_flag(raising: Any) -> None:
    rnn = nn.GRU(3, 4)
    x, h0 = _x(), torch.zeros(1, 2, 4)
    out, _ = torch._VF.gru(
        x,
        h0,
        rnn._flat_weights,
        has_biases=True,
        num_layers=1,
        dropout=0.0,
        train=False,
        bidirectional=False,
        batch_first=False,
    )
    with pytest.raises(RuntimeError, match=CUDNN_ERROR):
        out.sum().backward()


def test_record_mode_collects_instead_of_raising(sanitizer: Any) -> None:
    rnn = nn.LSTM(3, 4).eval()
    for _ in range(3):
        out, (h, c) = rnn(_x())
        (out.sum() + h.sum() + c.sum()).backward()  # forward line, backward line
    [record] = [r for r in sanitizer.records() if r.kind == CUDNN_BACKWARD_IN_EVAL]
    assert record.count == 3  # once per backward, not once per output node
    assert record.severity == "error"
    assert record.checked_by == "emulated"
    assert record.forward[0].file.endswith("test_sanitizer.py")
    assert record.backward[0].line == record.forward[0].line + 1
    assert messages.CUDNN_ERROR in record.message


def test_numerics_and_identity_unchanged() -> None:
    from rnnfix import verify

    torch.manual_seed(0)
    rnn = nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    x = _x().requires_grad_()

    def run() -> tuple[Any, ...]:
        out, (h, c) = rnn(x)
        grads = torch.autograd.grad((out.sum() + h.sum()), [x, *rnn.parameters()])
        return (out, h, c, *grads)

    plain = run()
    verify.install("raise")
    try:
        checked = run()
        args = (x, (torch.zeros(4, 2, 4),) * 2, rnn._flat_weights, True, 2, 0.0, True, True, False)
        direct = torch._C._VariableFunctions.lstm(*args)
        wrapped = torch._VF.lstm(*args)
    finally:
        verify.uninstall()
    for a, b in zip(plain, checked, strict=True):
        assert torch.equal(a, b)
    assert type(wrapped) is type(direct)
    for a, b in zip(direct, wrapped, strict=True):
        assert torch.equal(a, b)


def test_uninstall_restores_everything() -> None:
    from rnnfix import verify

    vf = torch._C._VariableFunctions
    before = (nn.Module.train, torch.autograd.backward, torch.autograd.grad, torch.lstm)
    verify.install("raise")
    assert torch._VF.lstm is not vf.lstm
    verify.uninstall()
    assert torch._VF.lstm is vf.lstm
    assert torch._VF.rnn_relu is vf.rnn_relu
    assert torch.lstm is vf.lstm
    assert (nn.Module.train, torch.autograd.backward, torch.autograd.grad, torch.lstm) == before
    assert "lstm" not in vars(torch._VF)


def test_torch_compile_eager_backend_still_checked(raising: Any) -> None:
    model = torch.compile(nn.LSTM(3, 4).eval(), backend="eager")
    out, _ = model(_x())
    with pytest.raises(RuntimeError, match=CUDNN_ERROR):
        out.sum().backward()


def test_a_sanitizer_bug_never_breaks_training(
    sanitizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rnnfix.verify import sanitizer_cudnn as module

    def broken(*args: Any) -> None:
        raise KeyError("boom")

    monkeypatch.setattr(module, "_rnn_arguments", broken)
    rnn = nn.LSTM(3, 4)
    out, _ = rnn(_x())
    out.sum().backward()
    [record] = sanitizer.records()
    assert record.kind == "sanitizer-error" and "KeyError" in record.message
