"""The hooks through the real ``pre-commit`` (``pre-commit try-repo``) on a
temporary repository: notebooks are handed to rnnfix, all files in one run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pre_commit")
ROOT = Path(__file__).parents[2]
BUGGY = "import torch.nn as nn\n\nmodel = nn.DataParallel(nn.Linear(2, 2))\nmodel.module.train()\n"
NOTEBOOK = {
    "cells": [
        {
            "cell_type": "code",
            "execution_count": None,
            "metadata": {},
            "outputs": [],
            "source": BUGGY.splitlines(keepends=True),
        }
    ],
    "metadata": {"kernelspec": {"name": "python3"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_try_repo(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.py").write_text(BUGGY)
    (repo / "b.ipynb").write_text(json.dumps(NOTEBOOK, indent=1) + "\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "x")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "rnnfix", "--all-files"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, done.stdout + done.stderr  # files were modified
    assert "model.train()" in (repo / "a.py").read_text()
    cell = json.loads((repo / "b.ipynb").read_text())["cells"][0]["source"]
    assert "model.train()" in "".join(cell)
    # require_serial: one run saw both files (the cross-file analysis needs that)
    assert done.stdout.count("rnnfix: 2 files checked") == 1, done.stdout
