"""Facts the mode flow computes once for every rule: must-aliases, optimizer
owners, saved modes, deliberate eval()s, target networks."""

from __future__ import annotations

from rnnfix.analysis.modes.modeflow import Mode
from tests.analysis.test_modeflow import call_named, flow, modes


def test_alias_of_attribute_follows_mode_calls() -> None:
    mf, tree = flow(
        """
        import torch.nn as nn
        class T:
            def __init__(self):
                self.model = nn.Linear(2, 2)
            def run(self):
                model = self.model
                model.eval()
                self.model(1)
        """
    )
    assert modes(mf, tree, "self.model(1)", "self.model") == {Mode.EVAL}


def test_name_bound_twice_is_not_an_alias() -> None:
    mf, tree = flow(
        """
        import torch.nn as nn
        class T:
            def __init__(self):
                self.model = nn.Linear(2, 2)
                self.other = nn.Linear(2, 2)
            def run(self, flag):
                model = self.model
                if flag:
                    model = self.other
                model.eval()
                self.model(1)
        """
    )
    fn = next(f for f in mf.index.functions if f.name == "run")
    assert mf.aliases(fn) == {}
    # Not a must-alias, but a may-alias (``rnnfix.analysis.modes.mayalias``):
    # without ``flag`` the eval reaches ``self.model``; with it, only
    # ``self.other``, and ``self.model`` keeps the mode it came in with.
    assert Mode.EVAL in modes(mf, tree, "self.model(1)", "self.model")
    assert modes(mf, tree, "self.model(1)", "self.model") != {Mode.EVAL}


def test_optimizer_owners() -> None:
    mf, tree = flow(
        """
        import itertools
        import torch
        import torch.nn as nn
        from lib import Lamb, make_op
        enc = nn.Linear(2, 2)
        dec = nn.Linear(2, 2)
        image = torch.zeros(2, requires_grad=True)
        a = Lamb(itertools.chain(enc.parameters(), dec.parameters()))
        b = make_op(params=[{"params": dec.parameters()}])
        c = torch.optim.Adam([image])
        n = sum(p.numel() for p in enc.parameters())
        d = torch.optim.SGD(enc.parameters())
        d = torch.optim.SGD(params)
        a.step()
        b()
        c.step()
        d.step()
        """
    )
    step = {text: call_named(tree, text) for text in ("a.step()", "b()", "c.step()", "d.step()")}
    assert mf.step_may_update(step["a.step()"], "dec") is True
    assert mf.step_may_update(step["b()"], "enc") is False
    assert mf.step_may_update(step["c.step()"], "enc") is False
    assert mf.step_may_update(step["d.step()"], "enc") is None  # rebound from unknown params
    assert mf.step_kind(step["b()"]) == "optimizer_step"
    assert not mf.optimizers.is_optimizer("n")


def test_saved_mode_is_restored() -> None:
    mf, tree = flow(
        """
        import torch.nn as nn
        model = nn.Linear(2, 2)
        def sample(m):
            was = m.training
            m.eval()
            m(0)
            m.train(was)
        model.train()
        sample(model)
        model(1)
        """
    )
    assert modes(mf, tree, "model(1)", "model") == {Mode.TRAIN}


def test_target_networks() -> None:
    mf, _ = flow(
        """
        import copy
        import torch.nn as nn
        net = nn.Linear(2, 2)
        target = copy.deepcopy(net)
        ema = copy.deepcopy(net)
        target.eval()
        target.load_state_dict(net.state_dict())
        for p, q in zip(net.parameters(), ema.parameters()):
            q.data.mul_(0.9).add_(0.1 * p.data)
        target(1); ema(1); net(1)
        """
    )
    assert mf.steps.refreshed_targets == {"target", "ema"}


MAY_ALIAS = """
import torch.nn as nn
def run(model, ema, flag, nets):
    model.train()
    {bind}
    {between}
    net.eval()
    model(1)
"""


def _may(bind: str, between: str = "pass") -> set[Mode]:
    mf, tree = flow(MAY_ALIAS.format(bind=bind, between=between))
    return set(modes(mf, tree, "model(1)", "model"))


def test_may_alias_bound_in_one_arm() -> None:
    # FixMatch-pytorch's ``test_model``: eval reaches ``model`` on one path.
    assert _may("net = ema if flag else model") == {Mode.TRAIN}  # an IfExp is not read
    assert _may("if flag:\n        net = ema\n    else:\n        net = model") == {
        Mode.TRAIN,
        Mode.EVAL,
    }


def test_may_alias_dropped_when_the_model_is_rebound() -> None:
    bind = "if flag:\n        net = ema\n    else:\n        net = model"
    assert _may(bind, "model = nn.Linear(2, 2)") == {Mode.TRAIN}


def test_name_also_bound_by_a_loop_is_not_read() -> None:
    bind = "for net in nets:\n        pass\n    if flag:\n        net = model"
    assert Mode.EVAL not in _may(bind)
