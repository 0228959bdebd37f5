"""The mode-flow analysis answers the questions rules ask of it."""

from __future__ import annotations

import ast
import textwrap

from rnnfix.analysis.modes.modeflow import Mode, ModeFlow
from rnnfix.rules.base import FileContext


def flow(source: str) -> tuple[ModeFlow, ast.Module]:
    source = textwrap.dedent(source)
    tree = ast.parse(source)
    return FileContext(source=source, tree=tree).facts.modes, tree


def call_named(tree: ast.AST, text: str) -> ast.Call:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node) == text:
            return node
    raise AssertionError(f"no call {text!r}")


def modes(mf: ModeFlow, tree: ast.AST, call: str, model: str) -> set[Mode]:
    return set(mf.mode_before(call_named(tree, call), model).modes)


EPOCH_LOOP = """
import torch
from torch import nn
model = nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    for x in data:
        loss = model(x).sum()
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        model(x)
"""


def test_models_are_found_by_evidence_not_by_name() -> None:
    mf, _ = flow(
        """
        import torch
        import xgboost as xgb
        from torch import nn
        class Net(nn.Module):
            pass
        net = Net()
        model = load()          # never switched, called, or trained: not a model
        booster = xgb.train(p, d)
        booster.train(d)
        def validate(m, loader):
            m.eval()
            return [m(x) for x in loader]
        """
    )
    assert "net" in mf.models and mf.models["net"].class_name == "Net"
    assert "m" in mf.models
    assert "model" not in mf.models and "booster" not in mf.models


def test_eval_at_epoch_end_reaches_the_next_epochs_backward() -> None:
    mf, tree = flow(EPOCH_LOOP)
    assert modes(mf, tree, "loss.backward()", "model") == {Mode.TRAIN, Mode.EVAL}
    origins = mf.mode_before(call_named(tree, "loss.backward()"), "model").origins(Mode.EVAL)
    assert [ast.unparse(o) for o in origins] == ["model.eval()"]


def test_grad_enabled_honours_with_blocks_decorators_and_aliases() -> None:
    mf, tree = flow(
        """
        import torch as th
        from torch import no_grad
        model = th.nn.Linear(2, 1)
        with th.no_grad():
            model(a)
        with th.set_grad_enabled(False):
            model(b)
        @no_grad()
        def f():
            model(c)
        def g():
            model(d)
        with th.inference_mode():
            g()
        model(e)
        """
    )
    assert mf.grad_enabled(call_named(tree, "model(a)")) is False
    assert mf.grad_enabled(call_named(tree, "model(b)")) is False
    assert mf.grad_enabled(call_named(tree, "model(c)")) is False
    assert mf.grad_enabled(call_named(tree, "model(d)")) is False  # only called under it
    assert mf.grad_enabled(call_named(tree, "model(e)")) is True


def test_training_steps_know_their_models_and_optimizer() -> None:
    mf, tree = flow(EPOCH_LOOP)
    steps = {ast.unparse(s.node): s for s in mf.training_steps}
    assert set(steps) == {"loss.backward()", "opt.step()"}
    assert steps["loss.backward()"].models == ("model",)
    assert steps["loss.backward()"].feeds_optimizer_step
    assert len(steps["opt.step()"].loops) == 2
    calls = [(c.model, c.grad_enabled) for c in mf.model_calls]
    assert calls == [("model", True), ("model", False)]


def test_backward_without_optimizer_step_does_not_feed_one() -> None:
    mf, _ = flow(
        """
        def saliency(model, x):
            model.eval()
            model(x).sum().backward()
            return x.grad
        """
    )
    (step,) = mf.training_steps
    assert step.kind == "backward" and not step.feeds_optimizer_step


def test_helper_summaries_eval_and_restore() -> None:
    mf, tree = flow(
        """
        import torch
        def validate(net):
            net.eval()
            net(x)
        def validate_and_restore(net):
            net.eval()
            try:
                return net(x)
            finally:
                net.train()
        model = torch.nn.Linear(1, 1)
        validate(model)
        a()
        validate_and_restore(model)
        b()
        """
    )
    assert modes(mf, tree, "a()", "model") == {Mode.EVAL}
    assert modes(mf, tree, "b()", "model") == {Mode.TRAIN}


def test_method_summaries_map_self_to_the_receiver() -> None:
    mf, tree = flow(
        """
        import torch
        class Agent:
            def __init__(self):
                self.critic = torch.nn.Linear(1, 1)
            def act(self):
                self.critic.eval()
            def update(self):
                self.critic(x).sum().backward()
                self.opt.step()
        agent = Agent()
        before()
        agent.act()
        agent.update()
        """
    )
    assert modes(mf, tree, "before()", "agent.critic") == {Mode.TRAIN}
    # the entry state of ``update`` comes from its caller
    assert modes(mf, tree, "self.opt.step()", "self.critic") == {Mode.EVAL}


def test_parameters_are_unknown_without_callers() -> None:
    mf, tree = flow(
        """
        def train(model, opt):
            model(x).sum().backward()
            opt.step()
        def evaluate(model):
            model.eval()
        """
    )
    assert modes(mf, tree, "opt.step()", "model") == {Mode.UNKNOWN}


def test_same_test_takes_the_same_branch_within_an_iteration() -> None:
    mf, tree = flow(
        """
        for phase in ["train", "val"]:
            if phase == "train":
                model.train()
            else:
                model.eval()
            for x in loader:
                out = model(x)
                if phase == "train":
                    out.sum().backward()
        """
    )
    assert modes(mf, tree, "out.sum().backward()", "model") == {Mode.TRAIN}


def test_break_and_continue() -> None:
    mf, tree = flow(
        """
        import torch
        model = torch.nn.Linear(1, 1)
        while True:
            model.train()
            if done():
                model.eval()
                break
            if skip():
                model.eval()
                continue
            step()
        after()
        """
    )
    assert modes(mf, tree, "step()", "model") == {Mode.TRAIN}
    assert modes(mf, tree, "after()", "model") == {Mode.EVAL}


PREFIX_MODES = """
import torch
from torch import nn

class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.LSTM(4, 8)
        self.decoder = nn.Linear(8, 2)

    def make_mask(self, x):
        return x > 0

    def predict(self, x):
        self.eval()
        return self.decoder(x)

model = Seq2Seq()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model.train()
out, _ = model.encoder(x)
out.sum().backward()
model.encoder.eval()
model(x)
mask = model.make_mask(x)
"""


def test_a_mode_call_on_a_prefix_covers_the_paths_below_it() -> None:
    mf, tree = flow(PREFIX_MODES)
    # ``self.eval()`` switches ``self.decoder`` (Module.train recurses).
    assert modes(mf, tree, "self.decoder(x)", "self.decoder") == {Mode.EVAL}
    # ``model.train()`` covers the ``model.encoder(x)`` forward the backward uses.
    assert modes(mf, tree, "out.sum().backward()", "model.encoder") == {Mode.TRAIN}
    # ... but ``model.encoder.eval()`` does not cover ``model`` itself.
    assert modes(mf, tree, "model(x)", "model") == {Mode.TRAIN}
    assert modes(mf, tree, "model(x)", "model.encoder") == {Mode.EVAL}


def test_only_calls_and_known_submodules_are_forwards() -> None:
    mf, _ = flow(PREFIX_MODES)
    forwards = {ast.unparse(c.node) for c in mf.model_calls}
    assert "model.encoder(x)" in forwards and "model(x)" in forwards
    assert "model.make_mask(x)" not in forwards  # a plain method, not a forward


def test_mode_switch_parses_every_spelling_once() -> None:
    from rnnfix.analysis.torch.api import mode_switch

    def parse(text: str) -> tuple[str, bool] | None:
        sw = mode_switch(ast.parse(text, mode="eval").body)
        return None if sw is None else (sw.mode.value, sw.is_module_switch)

    assert parse("m.eval()") == ("eval", True)
    assert parse("m.train()") == ("train", True)
    assert parse("m.train(False)") == ("eval", True)
    assert parse("m.train(mode=flag)") == ("unknown", True)
    assert parse("m.train(is_training)") == ("unknown", True)
    assert parse("m.train(phase == 'train')") == ("unknown", True)
    assert parse("booster.train(params)") == ("unknown", False)
    assert parse("m.eval(x)") is None and parse("m.train(a, b)") is None


def test_mode_of_any_receiver_of_a_mode_call_is_tracked() -> None:
    # ``model`` is only annotated and evaluated: not a model by the flow's
    # evidence, but its mode calls are still followed (RNF003 asks).
    mf, tree = flow(
        """
        from torch import nn
        def evaluate(model: nn.Module, loader):
            model.eval()
            for x in loader:
                model(x)
        """
    )
    assert modes(mf, tree, "model(x)", "model") == {Mode.EVAL}


def test_entry_states_are_each_callers_mode() -> None:
    mf, tree = flow(
        """
        from torch import nn
        net = nn.Linear(2, 1)
        def evaluate(model):
            return model(x)
        net.eval()
        evaluate(net)
        net.train()
        evaluate(model=net)
        """
    )
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))
    found = [(ast.unparse(call), set(state.modes)) for call, state in mf.entry_states(fn, "model")]
    assert found == [("evaluate(net)", {Mode.EVAL}), ("evaluate(model=net)", {Mode.TRAIN})]


def test_switches_in_a_region() -> None:
    mf, tree = flow(
        """
        from torch import nn
        net = nn.Linear(2, 1)
        for x in loader:
            net.module.train()
            net.train(flag_value)
            self.eval()
            other.eval()
        """
    )
    loop = next(n for n in ast.walk(tree) if isinstance(n, ast.For))
    found = [(ast.unparse(c), m) for c, m in mf.switches_in(loop, "net")]
    assert found == [("net.module.train()", Mode.TRAIN), ("net.train(flag_value)", Mode.UNKNOWN)]
