"""``apply --verify``: a fix that the command does not prove is rolled back."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from rnnfix.verify.rollback import restore_bytes

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "verify"


def test_restore_bytes_is_exact_and_keeps_mode(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    original = b"\xef\xbb\xbf# -*- coding: utf-8 -*-\r\nx = 1\t# tab\r\n\r\n"
    path.write_bytes(b"model.train()\n")
    os.chmod(path, 0o640)
    assert restore_bytes(path, original) is True
    assert path.read_bytes() == original
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert restore_bytes(path, original) is False  # already original: untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]  # no temp files


def _make_project(tmp_path: Path, patched: bytes) -> tuple[Path, Path, dict[Path, bytes]]:
    """A script and a helper "changed by apply"; originals use CRLF and a BOM
    so that an inexact rollback would show."""
    script, helper = tmp_path / "train.py", tmp_path / "helper.py"
    originals = {
        script: b"\xef\xbb\xbf" + (FIXTURES / "buggy_loop.py").read_bytes().replace(b"\n", b"\r\n"),
        helper: b"# helper, original\r\nVALUE = 1\r\n",
    }
    script.write_bytes(patched)
    helper.write_bytes(b"# helper, patched\nVALUE = 1\n")
    os.chmod(script, 0o755)
    return script, helper, originals


def test_failing_verification_rolls_every_file_back(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from rnnfix.verify.rollback import verify_and_rollback

    still_buggy = (FIXTURES / "buggy_loop.py").read_bytes() + b"# patched\n"
    script, helper, originals = _make_project(tmp_path, still_buggy)
    result = verify_and_rollback(
        originals, f"{sys.executable} train.py --epochs 2", cwd=tmp_path, capture=True, timeout=60
    )
    assert not result.ok
    assert set(result.rolled_back) == {str(script), str(helper)}
    for path, original in originals.items():
        assert path.read_bytes() == original
    assert stat.S_IMODE(script.stat().st_mode) == 0o755


def test_passing_verification_keeps_the_fix(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from rnnfix.verify.rollback import verify_and_rollback

    fixed = (FIXTURES / "fixed_loop.py").read_bytes()
    script, helper, originals = _make_project(tmp_path, fixed)
    result = verify_and_rollback(
        originals, ["train.py", "--epochs", "2"], cwd=tmp_path, capture=True, timeout=60
    )
    assert result.ok, result.stderr
    assert result.rolled_back == ()
    assert script.read_bytes() == fixed
    assert "rnnfix mode sanitizer" in result.how()
