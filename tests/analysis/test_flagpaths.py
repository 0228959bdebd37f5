"""RNF001: the eval mode of a call passing the step's flag False never reaches it."""

from __future__ import annotations

import ast

import pytest

from rnnfix import check
from rnnfix.analysis.context import FileContext
from rnnfix.analysis.modes.flagparams import string_guard

_TRAINER = """import torch
from torch import nn


class Trainer:
    def __init__(self, train_data, test_data):
        self.model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1))
        self.optim = torch.optim.Adam(self.model.parameters())
        self.train_data, self.test_data = train_data, test_data

    def train(self, epoch):
{train_body}

    def test(self, epoch):
        self.model.eval()
        self.iteration(epoch, self.test_data, train={test_flag})

    def iteration(self, epoch, loader, train=True):
        for x, y in loader:
            loss = nn.functional.mse_loss(self.model(x), y)
            if {guard}:
                self.optim.zero_grad()
                loss.backward()
                self.optim.step()
"""

_SETS_TRAIN = "        self.model.train()\n        self.iteration(epoch, self.train_data)"
_NO_MODE = "        self.iteration(epoch, self.train_data)"


def _rnf001(train_body: str, test_flag: str, guard: str) -> int:
    source = _TRAINER.format(train_body=train_body, test_flag=test_flag, guard=guard)
    return sum(f.code == "RNF001" for f in check(source))


def test_callers_that_set_their_modes_are_not_reported() -> None:
    assert _rnf001(_SETS_TRAIN, "False", "train") == 0
    assert _rnf001(_SETS_TRAIN, "False", "train and epoch % 2 == 0") == 0


@pytest.mark.parametrize(
    ("train_body", "test_flag", "guard"),
    [
        (_NO_MODE, "False", "train"),  # the next epoch trains in the test pass's eval mode
        (_SETS_TRAIN, "epoch < 0", "train"),  # the flag is not known False there
        (_SETS_TRAIN, "False", "not train"),  # the step is not under the flag being true
    ],
)
def test_still_reported_when_the_eval_mode_may_reach_the_step(
    train_body: str, test_flag: str, guard: str
) -> None:
    assert _rnf001(train_body, test_flag, guard) == 1


@pytest.mark.parametrize(
    ("guard", "flag"),
    [
        ('mode == "train" or mode == "train+log"', "mode"),
        ('mode in ("train", "train+log")', "mode"),
        ('"train" == mode', "mode"),
        ('mode == "train" or mode == "eval"', None),  # "eval" does not train
        ('mode == "train" or phase == "train"', None),  # two parameters
        ('mode in ("train+log",)', None),  # no plain training word
    ],
)
def test_string_guards_name_training_modes(guard: str, flag: str | None) -> None:
    source = f"def run(mode, phase):\n    if {guard}:\n        loss.backward()\n"
    tree = ast.parse(source)
    ctx = FileContext(source=source, tree=tree, path="t.py")
    func = tree.body[0]
    assert isinstance(func, ast.FunctionDef)
    step = func.body[0].body[0]  # type: ignore[attr-defined]
    assert string_guard(ctx, step, func) == flag
