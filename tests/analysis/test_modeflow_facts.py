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
    assert Mode.EVAL not in modes(mf, tree, "self.model(1)", "self.model")


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
    assert mf.refreshed_targets == {"target", "ema"}
