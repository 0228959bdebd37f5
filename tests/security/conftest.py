"""Hostile input (issue 23): a repository or a file system that tries to make
rnnfix run its code, write outside the tree, replay a result it did not
compute, lose a user's bytes, or stop (or never stop) the run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BUGGY = """\
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

# RNF005 reports this; its fix is unsafe, so nothing is written by default.
FINDING_ONLY = """\
import torch
import torch.backends.cudnn as cudnn


def setup(seed):
    torch.manual_seed(seed)
    cudnn.enabled = False
"""


def run_rnnfix(
    *args: str, cwd: Path | None = None, cache: bool = False, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ if env is None else env)
    if cache:
        env.pop("RNNFIX_NO_CACHE", None)
    return subprocess.run(
        [sys.executable, "-m", "rnnfix", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env=env,
        timeout=120,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (root / "train.py").write_text(BUGGY)
    return root
