from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from rnnfix.cli.app import cli

BUGGY = (
    "import torch.nn as nn\n"
    "\n"
    "model = nn.DataParallel(nn.Linear(2, 2))\n"
    "model.module.train()  # keep this comment\n"
)
FIXED = BUGGY.replace("model.module.train()", "model.train()")
CLEAN = "import torch\n\nx = torch.zeros(3)  # nothing to fix\n"


@pytest.fixture
def run() -> Callable[..., Result]:
    def _run(*args: str, input: bytes | None = None) -> Result:
        return CliRunner().invoke(cli, ["apply", "--select", "RNF002", *args], input=input)

    return _run


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "buggy.py").write_text(BUGGY)
    (tmp_path / "clean.py").write_text(CLEAN)
    return tmp_path
