"""Call chains longer than Python's stack allows (generated code) must be
analysed, not fail as "nesting too deep" (issue 13's safety contract)."""

from __future__ import annotations

from rnnfix.config.settings import Settings
from rnnfix.run.process import Outcome, process_text

HEAD = """import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.fc(self.drop(x))


def load_model(path):
    m = Net()
    m.load_state_dict(torch.load(path))
    return m


def predict(path):
    model = load_model(path)
    print(model(torch.load("x.pt")))
    return step0(model)


"""


def _chain(n: int, cycle: bool) -> str:
    last = "step0(m)" if cycle else "m"
    body = "".join(f"def step{i}(m):\n    return step{i + 1}(m)\n\n\n" for i in range(n - 1))
    return HEAD + body + f"def step{n - 1}(m):\n    m.eval()\n    return {last}\n"


def test_long_call_chain_is_analysed() -> None:
    for cycle in (False, True):
        result = process_text("chain.py", _chain(400, cycle), Settings(unsafe_fixes=True))
        assert result.outcome is not Outcome.FAILED, result.error
