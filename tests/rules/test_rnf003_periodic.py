"""RNF003's periodic test batch inside the step loop: no_grad only on evidence."""

from __future__ import annotations

import pytest

from rnnfix import check

_HEAD = """import torch
from torch import nn

def run(train_loader, test_x, test_y):
    net = nn.Linear(4, 2)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    kept = None
    for step, (x, y) in enumerate(train_loader):
        loss = nn.functional.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
"""

_FIXED = """        if step % 50 == 0:
            test_out = net(test_x)
            print((test_out.argmax(1) == test_y).float().mean().item())
"""


def _rnf003(source: str) -> list[str]:
    return [f.message for f in check(source) if f.code == "RNF003"]


def test_the_periodic_test_batch_is_fixed() -> None:
    assert len(_rnf003(_HEAD + _FIXED)) == 1


@pytest.mark.parametrize(
    "block",
    [
        # the test output feeds the next training step
        "        if step % 50 == 0:\n            kept = net(test_x)\n"
        "            print(kept.sum().item())\n        if kept is not None:\n"
        "            kept.sum().backward()\n",
        # stored where rnnfix cannot follow it
        "        if step % 50 == 0:\n            net.last = net(test_x)\n            print(1)\n",
        # returned to a caller
        "        if step % 50 == 0:\n            kept = net(test_x)\n            print(1)\n"
        "    return kept\n",
        # the author chose the grad mode
        "        if step % 50 == 0:\n            with torch.enable_grad():\n"
        "                out = net(test_x)\n            print(out.sum().item())\n",
        # training data, not evaluation data
        "        if step % 50 == 0:\n            out = net(x)\n"
        "            print(out.sum().item())\n",
        # a method of the model that is not its forward (learn2learn-style adaptation)
        "        if step % 50 == 0:\n            net.adapt(test_y)\n"
        "            print(net(test_x).sum().item())\n",
        # nothing reported
        "        if step % 50 == 0:\n            out = net(test_x)\n",
        # not every N steps
        "        if step > 50:\n            out = net(test_x)\n"
        "            print(out.sum().item())\n",
    ],
)
def test_left_alone_without_evidence(block: str) -> None:
    assert _rnf003(_HEAD + block) == []
