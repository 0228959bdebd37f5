"""The README's examples: `rnnfix apply` fixes them, and the fixed scripts run
to the end under the verify sanitizer (cuDNN's train-mode check emulated on the
CPU) while the originals fail it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "fixtures" / "examples"
BUGGY = ["lstm_classifier.py", "seq2seq_trainer.py"]


def _rnnfix(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-m", "rnnfix", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("examples")
    for script in EXAMPLES.glob("*.py"):
        shutil.copy(script, folder)
    result = _rnnfix("apply", ".", cwd=folder)
    assert result.returncode in (0, 1), result.stderr  # 1: RNF005 is reported, not fixed
    return folder


@pytest.mark.parametrize("name", BUGGY)
def test_original_fails_the_cudnn_check(name: str, tmp_path: Path) -> None:
    shutil.copy(EXAMPLES / name, tmp_path)
    result = _rnnfix("verify", name, cwd=tmp_path)
    assert result.returncode == 1
    assert "cudnn RNN backward can only be called in training mode" in result.stderr + result.stdout


@pytest.mark.parametrize("name", [*BUGGY, "saliency.py"])
def test_fixed_script_runs_clean(fixed: Path, name: str) -> None:
    result = _rnnfix("verify", "--strict", name, cwd=fixed)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "rnnfix verify: PASS" in result.stdout + result.stderr


def test_apply_changes_only_what_it_must(fixed: Path) -> None:
    assert (fixed / "saliency.py").read_bytes() == (EXAMPLES / "saliency.py").read_bytes()
    again = _rnnfix("apply", "--check", "--select", "RNF001,RNF002,RNF003", ".", cwd=fixed)
    assert again.returncode == 0, again.stdout
