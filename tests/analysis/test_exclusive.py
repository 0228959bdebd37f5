"""An ``eval()`` on the path that never builds the optimizer a training
method steps does not reach that step (``rnnfix.analysis.modes.exclusive``):
lpips' ``DistModel`` as stylegan2-pytorch ships it. The same class with the
optimizer built on both paths is still a bug."""

from __future__ import annotations

import rnnfix

TEMPLATE = """
import torch
from nets import PNetLin


class DistModel:
    def initialize(self, is_train=False, lr=0.0001):
        self.net = PNetLin()
        {before}
        if is_train:
            self.optimizer_net = torch.optim.Adam(self.net.parameters(), lr=lr)
        else:
            self.net.eval()

    def optimize_parameters(self, x):
        loss = self.net(x).mean()
        self.optimizer_net.zero_grad()
        loss.backward()
        self.optimizer_net.step()
"""


def _rnf001(before: str) -> list[str]:
    source = TEMPLATE.replace("{before}", before)
    return [f.message for f in rnnfix.check(source) if f.code == "RNF001"]


def test_eval_on_the_path_without_the_optimizer_is_left_alone() -> None:
    assert _rnf001("pass") == []


def test_optimizer_also_built_on_the_eval_path_is_still_a_bug() -> None:
    found = _rnf001("self.optimizer_net = torch.optim.SGD(self.net.parameters(), lr=lr)")
    assert len(found) == 1 and "self.net" in found[0]
