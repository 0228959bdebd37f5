"""A synthetic corpus for scaling runs without a network.

    python bench/synthetic.py OUT_DIR [N]

Writes N files (default 2,000) into packages of 50, mixing the shapes a real
research repository has, in realistic proportions: plain modules without any
trigger text, ``nn.Module`` definitions, utilities that mention ``.step(`` or
``.train(`` in other meanings, clean training scripts that switch modes
correctly, evaluation helpers, and (one file in 50) a training script with a
mode bug. Deterministic: the same N gives the same tree.
"""

from __future__ import annotations

import sys
from pathlib import Path

PLAIN = '''
"""Configuration helpers."""
import json
import os


def load_config(path):
    with open(path) as f:
        cfg = json.load(f)
    for key, value in os.environ.items():
        if key.startswith("EXP_"):
            cfg[key[4:].lower()] = value
    return cfg


class Registry:
    def __init__(self):
        self._items = {}

    def register(self, name):
        def wrap(obj):
            self._items[name] = obj
            return obj
        return wrap
'''

MODEL = """
import torch
import torch.nn as nn


class Block{i}(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(dim, dim)
        self.drop = nn.Dropout(0.1)
        self.rnn = nn.LSTM(dim, dim, batch_first=True)

    def forward(self, x):
        out, _ = self.rnn(self.drop(torch.relu(self.lin(x))))
        return out + x
"""

NOT_TORCH = '''
class Scheduler{i}:
    """A learning-rate schedule: .step() advances it; nothing to do with torch."""

    def __init__(self, base):
        self.base = base
        self.t = 0

    def step(self):
        self.t += 1
        return self.base / (1 + self.t)

    def train(self, flag=True):
        self.training = flag
'''

CLEAN_TRAINING = """
import torch


def fit{i}(model, loader, val_loader, epochs=3):
    optimizer = torch.optim.Adam(model.parameters())
    for epoch in range(epochs):
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            total = sum(model(x).sum().item() for x, _ in val_loader)
        print(epoch, total)
"""

EVAL_HELPER = """
import torch


@torch.no_grad()
def evaluate{i}(model, loader):
    model.eval()
    return sum((model(x).argmax(1) == y).float().mean().item() for x, y in loader)
"""

BUGGY = """
import torch

model = torch.nn.LSTM(8, 8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    for x in loader:
        optimizer.zero_grad()
        model(x)[0].sum().backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        for x in val_loader:
            model(x)
"""

# One cycle of 50 files: mostly code without a single trigger, as in a real tree.
_CYCLE = [PLAIN] * 24 + [MODEL] * 8 + [NOT_TORCH] * 6 + [CLEAN_TRAINING] * 6
_CYCLE += [EVAL_HELPER] * 5 + [BUGGY]


def synthetic_tree(root: Path, n: int = 2000) -> None:
    for i in range(n):
        package = root / f"pkg{i // 50:03}"
        package.mkdir(parents=True, exist_ok=True)
        (package / f"m{i % 50:02}.py").write_text(_CYCLE[i % 50].replace("{i}", str(i)).lstrip())


if __name__ == "__main__":
    synthetic_tree(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 2000)
