"""RNF004 details the fixtures do not pin: RNN discovery, the dropout policy,
what is left alone, and edits that could not be located."""

from __future__ import annotations

import ast
import textwrap

import pytest

from rnnfix.analysis.syntax.imports import ImportMap
from rnnfix.analysis.torch.rnns import RnnIndex, RnnSpec
from rnnfix.config.settings import Settings
from rnnfix.run.engine import check_source, fix_source

ONLY = ("RNF004",)
RNN_TRAIN = Settings(select=ONLY, rnn_only=True)
CUDNN_OFF = Settings(select=ONLY, rnn_only=True, rnn_only_strategy="cudnn-off")


def _index(src: str) -> RnnIndex:
    tree = ast.parse(textwrap.dedent(src))
    return RnnIndex(tree, ImportMap.build(tree))


def _saliency(ctor: str) -> str:
    return (
        f"import torch\nimport torch.nn as nn\nmodel = {ctor}\nmodel.eval()\n"
        "x = torch.randn(3, 1, 4, requires_grad=True)\nmodel(x)[0].sum().backward()\n"
    )


def test_discovery_aliases_positional_args_and_constants() -> None:
    idx = _index(
        """
        import torch as th
        from torch import nn as tnn
        LAYERS = 3
        class Net(th.nn.Module):
            def __init__(self, p):
                super().__init__()
                self.a = th.nn.GRU(4, 4, LAYERS, True, False, 0.1)
                self.b = tnn.LSTM(4, 4, num_layers=2, dropout=p)
                self.c = tnn.LSTM(4, 4, **cfg)
                self.cell = tnn.GRUCell(4, 4)
        """
    )
    specs = {s.path: s for s in idx.of_class("Net") or ()}
    assert set(specs) == {"a", "b", "c"}  # cells never count
    assert (specs["a"].dropout, specs["a"].num_layers) == (0.1, 3)
    assert specs["b"].dropout is None and not specs["b"].train_mode_exact
    assert specs["c"].dropout is None and specs["c"].num_layers is None


def test_discovery_nesting_bases_wrappers_and_subclasses() -> None:
    idx = _index(
        """
        import torch.nn as nn
        class Enc(nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = nn.RNN(4, 4)
        class Base(nn.Module):
            def __init__(self):
                super().__init__()
                self.enc = Enc()
        class Model(Base):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([nn.LSTM(4, 4) for _ in range(2)])
        class MyLSTM(nn.LSTM):
            pass
        """
    )
    specs = idx.of_class("Model") or ()
    assert {(s.path, s.nameable) for s in specs} == {("enc.rnn", True), ("layers", False)}
    assert idx.of_class("MyLSTM") == (RnnSpec("LSTM", "", True, None, None, 15),)
    wrapped = idx.of_expr(ast.parse("nn.DataParallel(Enc()).cuda()", mode="eval").body)
    assert [s.path for s in wrapped or ()] == ["module.rnn"]


def test_single_layer_with_dropout_is_exact_in_train_mode() -> None:
    # PyTorch applies RNN dropout only between layers.
    result = fix_source(_saliency("nn.LSTM(4, 4, dropout=0.5)"), RNN_TRAIN)
    assert [f.code for f in result.applied] == ["RNF004"]


@pytest.mark.parametrize("dropout", ["0.25", "args.dropout"])
def test_rnn_train_refused_when_dropout_may_be_nonzero(dropout: str) -> None:
    source = _saliency(f"nn.GRU(4, 4, num_layers=2, dropout={dropout})")
    result = fix_source(source, RNN_TRAIN)
    assert result.fixed == source
    (finding,) = result.findings
    assert not finding.fixable
    assert "not fixed: train mode would switch on the inter-layer dropout" in finding.message
    assert "--rnn-only-strategy cudnn-off" in finding.message
    fixed = fix_source(source, CUDNN_OFF)
    assert "cudnn.flags(" in fixed.fixed and not fixed.findings


def test_reported_without_opt_in_and_never_suggests_model_train() -> None:
    (finding,) = check_source(_saliency("nn.LSTM(4, 4)"), Settings(select=ONLY))
    assert not finding.fixable
    assert "--rnn-only" in finding.message
    assert "model.train()" not in finding.message


def test_whole_model_is_the_rnn_uses_the_modules_loop() -> None:
    result = fix_source(_saliency("nn.LSTM(4, 4)"), RNN_TRAIN)
    assert "for module in model.modules():" in result.fixed
    assert "model.train()" not in result.fixed


def test_fix_inserted_after_eval_in_tab_indented_code() -> None:
    source = (
        "import torch\nimport torch.nn as nn\n\n"
        "def f(x):\n\tm = nn.Sequential(nn.LSTM(3, 3))\n\tm.eval()\n\tm(x)[0].sum().backward()\n"
    )
    fixed = fix_source(source, RNN_TRAIN).fixed
    assert (
        "\tm.eval()\n\tfor module in m.modules():\n"
        "\t\tif isinstance(module, torch.nn.RNNBase):\n\t\t\tmodule.train()\n" in fixed
    )
    ast.parse(fixed)


def test_eval_sharing_a_line_is_reported_not_fixed() -> None:
    source = _saliency("nn.LSTM(4, 4)").replace("model.eval()\n", "model.eval(); y = 1\n")
    result = fix_source(source, RNN_TRAIN)
    assert result.fixed == source
    (finding,) = result.findings
    assert "does not stand alone on its line" in finding.message


def test_annotated_parameter_and_caller_argument_resolve_the_class() -> None:
    source = textwrap.dedent(
        """
        import torch
        import torch.nn as nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.gru = nn.GRU(4, 4)

        def annotated(model: "Net", x):
            model.eval()
            model(x).sum().backward()

        def untyped(net, x):
            net.eval()
            torch.autograd.grad(net(x).sum(), x)

        untyped(Net(), torch.randn(2, 1, 4))
        """
    )
    fixed = fix_source(source, RNN_TRAIN).fixed
    assert "model.eval()\n    model.gru.train()" in fixed
    assert "net.eval()\n    net.gru.train()" in fixed


def test_unknown_model_and_no_grad_forward_are_left_alone() -> None:
    source = textwrap.dedent(
        """
        import torch
        import torch.nn as nn
        rnn = nn.LSTM(4, 4)

        def from_checkpoint(path, x):
            model = torch.load(path)
            model.eval()
            model(x).sum().backward()

        def under_no_grad(x):
            rnn.eval()
            with torch.no_grad():
                out = rnn(x)[0]
            out.requires_grad_().sum().backward()
        """
    )
    assert check_source(source, RNN_TRAIN) == []


def test_optimizer_of_another_model_does_not_hide_the_region() -> None:
    source = textwrap.dedent(
        """
        import torch
        import torch.nn as nn
        critic = nn.GRU(4, 4)
        actor = nn.Linear(4, 4)
        both = torch.optim.Adam(list(actor.parameters()) + list(critic.parameters()))
        only_actor = torch.optim.Adam(actor.parameters())

        def update(x, opt):
            critic.eval()
            critic(actor(x))[0].sum().backward()
            opt.step()
        """
    )
    assert check_source(source, RNN_TRAIN) == []  # ``opt`` unknown: may train the critic
    known = source.replace("opt.step()", "only_actor.step()")
    assert [f.code for f in check_source(known, RNN_TRAIN)] == ["RNF004"]
    trains_critic = source.replace("opt.step()", "both.step()")
    assert check_source(trains_critic, RNN_TRAIN) == []


def test_helper_that_restores_train_mode_is_followed() -> None:
    source = textwrap.dedent(
        """
        import torch
        import torch.nn as nn

        def reset(m):
            m.train()

        model = nn.LSTM(4, 4)
        model.eval()
        reset(model)
        model(torch.randn(3, 1, 4, requires_grad=True))[0].sum().backward()
        """
    )
    assert check_source(source, RNN_TRAIN) == []
