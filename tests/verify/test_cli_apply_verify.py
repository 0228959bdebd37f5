"""`rnnfix apply PATH --verify CMD`: keep the fixes when the command passes under
the sanitizer, restore every changed file's bytes when it does not."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rnnfix.cli.app import cli

pytest.importorskip("torch")

EXAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "examples" / "lstm_classifier.py"


def _apply(folder: Path, command: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["apply", str(folder), "--verify", command])
    return result.exit_code, result.output


def test_fixes_kept_when_verified(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "lstm_classifier.py"
    shutil.copy(EXAMPLE, script)
    monkeypatch.chdir(tmp_path)
    code, output = _apply(tmp_path, f"{sys.executable} lstm_classifier.py --epochs 2")
    assert code == 0, output
    assert "rnnfix verify: PASS" in output
    assert script.read_bytes() != EXAMPLE.read_bytes()
    assert "model.module.train()" not in script.read_text()


def test_rolled_back_when_the_command_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "lstm_classifier.py"
    shutil.copy(EXAMPLE, script)
    monkeypatch.chdir(tmp_path)
    code, output = _apply(tmp_path, f"{sys.executable} -c 'import torch, sys; sys.exit(3)'")
    assert code == 1, output
    assert "rolled back 1 file(s)" in output
    assert script.read_bytes() == EXAMPLE.read_bytes()
